/*
 * dot.c: a dot product co-executed on the CPU worker threads and the Vulkan
 * device as a reduction output (COEXEC_ACCESS_REDUCE_SUM), through the coexec
 * C API.
 *
 *   cc -std=c99 dot.c $(pkg-config --cflags --libs coexec) -o dot
 *   ./dot [N [ITERATIONS]]
 *
 * Each GPU work-group adds its products in shared memory (the helpers of
 * coexec_reduce.glsl) and writes its partial; each call of the CPU function
 * adds its items into its accumulator (args->buffers[2].data); the engine
 * combines the partials and writes the result into the reduction's buffer.
 * It runs once more with COEXEC_REDUCE_DETERMINISTIC, whose CPU function
 * combines each work-group in the GPU's order, and checks that the CPU alone,
 * the GPU alone and both give the same bits. Verified against a plain C
 * loop; prints the time per iteration. Exit status 0 on success, 1 on any
 * failure or mismatch.
 */
#define _POSIX_C_SOURCE 200112L

#include <coexec.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOCAL 256
#define PER_ITEM 4

static const char *DOT_GLSL =
    "#version 450\n"
    "layout(local_size_x = 256) in;\n"
    "#include \"coexec_reduce.glsl\"\n"
    "COEXEC_DEFINE_REDUCE(group_sum, float, COEXEC_SUM)\n"
    "layout(std430, binding = 0) readonly buffer X { float x[]; };\n"
    "layout(std430, binding = 1) readonly buffer Y { float y[]; };\n"
    "layout(std430, binding = 2) writeonly buffer P { float partials[]; };\n"
    "layout(push_constant) uniform Push { uint n; } p;\n"
    "void main() {\n"
    "    precise float v = 0.0;\n"
    "    uint i = gl_GlobalInvocationID.x * 4u;\n"
    "    for (uint j = i; j < min(i + 4u, p.n); j++) v += x[j] * y[j];\n"
    "    float s = group_sum(v);\n"
    "    if (gl_LocalInvocationIndex == 0u) partials[coexec_slot(1u)] = s;\n"
    "}\n";

/* One work-item's value: its PER_ITEM products added in order. */
static float item_value(const float *x, const float *y, uint64_t n, uint64_t item)
{
    uint64_t j, start = item * PER_ITEM, end = start + PER_ITEM;
    float v = 0.0f;
    if (end > n) end = n;
    for (j = start; j < end; j++) v += x[j] * y[j];
    return v;
}

/* Work-groups whose partials the engine combines as one block first. */
#define BLOCK 1024u

/* v[0..n) combined by a pairwise tree, in place: for s = p/2, p/4, .., 1 (p the
 * smallest power of two >= n), v[i] += v[i + s]; v[0] (0 for n = 0). */
static float tree_sum(float *v, uint64_t n) {
    uint64_t p = 1, s, i;
    if (n == 0) return 0.0f;
    while (p < n) p *= 2;
    for (s = p / 2; s > 0; s /= 2) {
        for (i = 0; i < s && i + s < n; i++) v[i] = v[i] + v[i + s];
    }
    return v[0];
}

/* Work-group g's partial in the order of coexec_reduce.glsl: a pairwise tree
 * over its LOCAL invocations (those past the end contribute 0). */
static float group_partial(const float *x, const float *y, uint64_t n, uint64_t g)
{
    float v[LOCAL];
    unsigned l, s;
    for (l = 0; l < LOCAL; l++) v[l] = item_value(x, y, n, g * LOCAL + l);
    for (s = LOCAL / 2; s > 0; s /= 2) {
        for (l = 0; l < s; l++) v[l] = v[l] + v[l + s];
    }
    return v[0];
}

/* The CPU function: adds its call's products to its accumulator. A call of
 * one work-group (always the case in deterministic runs) uses the GPU's
 * order; longer calls add in double precision. */
static int32_t dot_cpu(const coexec_package *pkg, const coexec_cpu_args *args, void *user_data)
{
    const float *x = (const float *)args->buffers[0].data;
    const float *y = (const float *)args->buffers[1].data;
    float *acc = (float *)args->buffers[2].data;
    uint64_t n = args->buffers[0].count, i, end;
    double s = 0.0;
    (void)user_data;
    if (pkg->unit_end - pkg->unit_start == 1) {
        acc[0] += group_partial(x, y, n, pkg->unit_start);
        return 0;
    }
    end = pkg->item_end * PER_ITEM;
    if (end > n) end = n;
    for (i = pkg->item_start * PER_ITEM; i < end; i++) s += (double)(x[i] * y[i]);
    acc[0] += (float)s;
    return 0;
}

static int failures = 0;

static int check(coexec_status s, const char *what)
{
    if (s != COEXEC_OK) {
        fprintf(stderr, "dot: %s failed: %s: %s\n", what, coexec_status_string(s),
                coexec_last_error());
        failures++;
        return 0;
    }
    return 1;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : (uint64_t)1 << 22;
    int iterations = argc > 2 ? atoi(argv[2]) : 10;
    uint64_t items, groups, g, i;
    coexec_engine_options opts = coexec_engine_options_default();
    coexec_engine engine = {0};
    coexec_buffer x = {0}, y = {0}, result = {0};
    coexec_kernel kernel = {0};
    coexec_report report;
    coexec_arg args[3];
    coexec_index_space space;
    float *xp, *yp, *rp, canonical = 0.0f, *parts = NULL;
    void *host;
    double reference = 0.0, total = 0.0;
    uint32_t n32;
    int it, d;

    if (n == 0 || n > 0xffffffffu || iterations < 1) {
        fprintf(stderr, "dot: N must be in 1..2^32-1 and ITERATIONS >= 1\n");
        return 1;
    }
    items = (n + PER_ITEM - 1) / PER_ITEM;
    groups = (items + LOCAL - 1) / LOCAL;
    n32 = (uint32_t)n;
    if (!check(coexec_engine_create(&opts, &engine), "coexec_engine_create")) return 1;
    if (!check(coexec_buffer_alloc(engine, n, sizeof(float), &x, &host), "alloc x")) goto out;
    xp = (float *)host;
    if (!check(coexec_buffer_alloc(engine, n, sizeof(float), &y, &host), "alloc y")) goto out;
    yp = (float *)host;
    if (!check(coexec_buffer_alloc(engine, 1, sizeof(float), &result, &host), "alloc result"))
        goto out;
    rp = (float *)host;
    for (i = 0; i < n; i++) {
        xp[i] = 0.5f + (float)((uint32_t)(i ^ 1u) * 2654435761u >> 22) / 1024.0f;
        yp[i] = 0.5f + (float)((uint32_t)(i ^ 7u) * 2654435761u >> 22) / 1024.0f;
        reference += (double)xp[i] * (double)yp[i];
    }
    /* The deterministic reference: the partials in the engine's order too
     * (a pairwise tree over each block of 1024 work-groups, then over the
     * blocks' results). */
    parts = (float *)malloc(groups * sizeof(float));
    if (parts == NULL) {
        failures++;
        goto out;
    }
    for (g = 0; g < groups; g++) parts[g] = group_partial(xp, yp, n, g);
    {
        uint64_t b, blocks = (groups + BLOCK - 1) / BLOCK;
        for (b = 0; b < blocks; b++) {
            uint64_t len = groups - b * BLOCK < BLOCK ? groups - b * BLOCK : BLOCK;
            /* Block b's head goes to slot b, which block b's tree (or an
             * earlier one) has already read. */
            parts[b] = tree_sum(parts + b * BLOCK, len);
        }
        canonical = tree_sum(parts, blocks);
    }

    if (!check(coexec_kernel_from_glsl(engine, "dot", DOT_GLSL, dot_cpu, NULL, &kernel),
               "coexec_kernel_from_glsl"))
        goto out;
    memset(args, 0, sizeof args);
    args[0].buffer = x;
    args[0].access = COEXEC_ACCESS_INPUT;
    args[1].buffer = y;
    args[1].access = COEXEC_ACCESS_INPUT;
    args[2].buffer = result;
    args[2].access = COEXEC_ACCESS_REDUCE_SUM | COEXEC_ELEM_F32;
    args[2].per_item = 1;
    space.dims = 1;
    space.width = items;
    space.height = 0;

    for (it = 0; it < iterations; it++) {
        double t = now_s();
        if (!check(coexec_run(engine, kernel, args, 3, &n32, sizeof n32, space, NULL,
                              COEXEC_DEVICE_ALL, &report),
                   "coexec_run"))
            goto out;
        total += now_s() - t;
        if (fabs((double)rp[0] - reference) > 1e-5 * reference) {
            fprintf(stderr, "dot: iteration %d: %f, expected %f\n", it, rp[0], reference);
            failures++;
        }
    }
    printf("dot: n = %llu, %f (reference %f), %u devices, time per iteration: %.3f ms\n",
           (unsigned long long)n, rp[0], reference, report.num_devices, total / iterations * 1e3);

    /* Deterministic: the same bits on every device set. */
    args[2].access = COEXEC_ACCESS_REDUCE_SUM | COEXEC_ELEM_F32 | COEXEC_REDUCE_DETERMINISTIC;
    for (d = 1; d <= 3; d++) {
        if (!check(coexec_run(engine, kernel, args, 3, &n32, sizeof n32, space, NULL, (uint32_t)d,
                              NULL),
                   "coexec_run (deterministic)"))
            goto out;
        if (memcmp(&rp[0], &canonical, sizeof canonical) != 0) {
            fprintf(stderr, "dot: deterministic on devices %d: %.9g, expected %.9g\n", d, rp[0],
                    canonical);
            failures++;
        }
    }
    if (failures == 0) printf("dot: verified (deterministic: %.9g on every device set)\n", canonical);

out:
    free(parts);
    coexec_kernel_destroy(kernel);
    coexec_buffer_free(result);
    coexec_buffer_free(y);
    coexec_buffer_free(x);
    coexec_engine_destroy(engine);
    return failures == 0 ? 0 : 1;
}
