/*
 * axpy2d.c: a first-time user's test of the coexec C ABI, written from
 * ffi/include/coexec.h and the READMEs alone (kept as it was written, lightly
 * tidied).
 *
 *  1-D kernel  z[i] = a * x[i] + y[i] * y[i]        (push constant: float a, uint n)
 *  2-D kernel  out[r][c] = in[r][c] * s + r - c     (push constant: float s, uint w, uint h)
 *
 * Each is co-executed on the CPU workers and the Vulkan device, the 1-D one
 * with five scheduler configurations; every output element is checked
 * against a plain C reference, every CPU package is checked to lie inside the
 * index space, and a handful of error paths are triggered on purpose (each
 * must return its documented code). Exit status 0 when everything matched,
 * 1 on any mismatch or unexpected status.
 *
 *   cc -std=c11 axpy2d.c $(pkg-config --cflags --libs coexec) -Wl,-rpath,$PREFIX/lib
 */
#include <coexec.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

/* A call that must succeed: on failure print the error and exit. */
#define CHECK(call)                                                                \
    do {                                                                           \
        coexec_status st_ = (call);                                                \
        if (st_ != COEXEC_OK) {                                                    \
            fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,    \
                    coexec_status_string((int32_t)st_), coexec_last_error());      \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

/* ------------------------------------------------------------------ 1-D --- */

/* Mirrors the GLSL push-constant block { float a; uint n; } (std430: 8 bytes). */
typedef struct {
    float a;
    uint32_t n;
} axpy_push;

typedef struct {
    atomic_ulong calls;      /* calls of the CPU function (one or more per package) */
    atomic_ulong bad_ranges; /* packages outside 0..n (must stay 0) */
} axpy_data;

/* The GPU runs whole work-groups of 64: the shader bound-checks against n. */
static const char *AXPY_GLSL =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer X { float x[]; };\n"
    "layout(std430, binding = 1) readonly buffer Y { float y[]; };\n"
    "layout(std430, binding = 2) writeonly buffer Z { float z[]; };\n"
    "layout(push_constant) uniform P { float a; uint n; } p;\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i < p.n) z[i] = p.a * x[i] + y[i] * y[i];\n"
    "}\n";

/* The run's buffers come in `args`; `user_data` (fixed when the kernel is
 * built) holds only counters. A non-zero return fails the run. */
static int32_t axpy_cpu(const coexec_package *pkg, const coexec_cpu_args *args, void *user_data)
{
    axpy_data *d = (axpy_data *)user_data;
    const axpy_push *p = (const axpy_push *)args->push;
    atomic_fetch_add(&d->calls, 1);
    if (args->push_size != sizeof *p || args->num_buffers != 3 || pkg->item_end > p->n ||
        pkg->dims != 1) {
        atomic_fetch_add(&d->bad_ranges, 1);
        return 1;
    }
    const float *x = args->buffers[0].data, *y = args->buffers[1].data;
    float *z = args->buffers[2].data;
    for (uint64_t i = pkg->item_start; i < pkg->item_end; i++)
        z[i] = p->a * x[i] + y[i] * y[i];
    return 0;
}

/* ------------------------------------------------------------------ 2-D --- */

/* Mirrors { float s; uint w; uint h; } (12 bytes). */
typedef struct {
    float s;
    uint32_t w, h;
} img_push;

typedef struct {
    atomic_ulong bad_ranges;
} img_data;

static const char *IMG_GLSL =
    "#version 450\n"
    "layout(local_size_x = 8, local_size_y = 8) in;\n"
    "layout(std430, binding = 0) readonly buffer I { float src[]; };\n"
    "layout(std430, binding = 1) buffer O { float dst[]; };\n"
    "layout(push_constant) uniform P { float s; uint w; uint h; } p;\n"
    "void main() {\n"
    "    uvec2 g = gl_GlobalInvocationID.xy;\n"
    "    if (g.x >= p.w || g.y >= p.h) return;\n"
    "    uint i = g.y * p.w + g.x;\n"
    "    dst[i] = src[i] * p.s + float(g.y) - float(g.x);\n"
    "}\n";

/* In 2-D a package is whole rows: row_start..row_end of `width` items. */
static int32_t img_cpu(const coexec_package *pkg, const coexec_cpu_args *args, void *user_data)
{
    img_data *d = (img_data *)user_data;
    const img_push *p = (const img_push *)args->push;
    if (pkg->dims != 2 || pkg->width != p->w || pkg->row_end > p->h ||
        pkg->item_start != (uint64_t)pkg->row_start * pkg->width ||
        pkg->item_end != (uint64_t)pkg->row_end * pkg->width) {
        atomic_fetch_add(&d->bad_ranges, 1);
        return 1;
    }
    const float *in = args->buffers[0].data;
    float *out = args->buffers[1].data;
    for (uint32_t r = pkg->row_start; r < pkg->row_end; r++)
        for (uint32_t c = 0; c < pkg->width; c++) {
            size_t i = (size_t)r * p->w + c;
            out[i] = in[i] * p->s + (float)r - (float)c;
        }
    return 0;
}

/* -------------------------------------------------------------- helpers --- */

static void print_report(const char *what, const coexec_report *r)
{
    printf("%-28s %8.3f ms, %llu items, %llu units, %llu packages, balance %.3f\n", what,
           r->time_s * 1e3, (unsigned long long)r->items, (unsigned long long)r->units,
           (unsigned long long)r->packages, r->balance);
    for (uint32_t d = 0; d < r->num_devices; d++) {
        const coexec_device_report *dv = &r->devices[d];
        printf("    %s %-34.34s claimants %u  packages %4llu  items %8llu  busy %8.3f ms"
               "  first %7.3f  finish %7.3f ms%s\n",
               dv->kind == COEXEC_DEVICE_KIND_CPU ? "cpu" : "gpu", dv->name, dv->claimants,
               (unsigned long long)dv->packages, (unsigned long long)dv->items, dv->busy_s * 1e3,
               dv->first_start_s * 1e3, dv->finish_s * 1e3, dv->failed ? "  FAILED" : "");
    }
}

static void expect_error(const char *what, coexec_status got, coexec_status want)
{
    /* Copy the message at once: it is valid only until the next coexec call. */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", coexec_last_error());
    printf("  %-36s -> %d %s%s\n", what, (int)got, coexec_status_string((int32_t)got),
           got == want ? "" : "   <-- UNEXPECTED");
    printf("      last error: \"%s\"\n", msg);
    if (got != want) failures++;
}

int main(void)
{
    printf("coexec %s\n", coexec_version());

    /* ---- engine (validation layer: on only with COEXEC_VALIDATION=1) ---- */
    coexec_engine_options opts = coexec_engine_options_default();
    coexec_engine eng = {0};
    CHECK(coexec_engine_create(&opts, &eng));
    coexec_engine_info info;
    CHECK(coexec_engine_get_info(eng, &info));
    printf("device: %s%s, gpu_available %d, %u CPU workers, import alignment %llu\n",
           info.device_name, info.device_is_cpu ? " (CPU implementation)" : "",
           (int)info.gpu_available, info.workers, (unsigned long long)info.host_import_alignment);
    printf("last error after a success: \"%s\"\n", coexec_last_error());
    if (coexec_last_error()[0] != '\0') failures++;

    /* ---- 1-D buffers (n deliberately not a multiple of the work-group size) ---- */
    const uint32_t n = 1000003;
    coexec_buffer bx, by, bz;
    void *px, *py, *pz;
    CHECK(coexec_buffer_alloc(eng, n, sizeof(float), &bx, &px));
    CHECK(coexec_buffer_alloc(eng, n, sizeof(float), &by, &py));
    CHECK(coexec_buffer_alloc(eng, n, sizeof(float), &bz, &pz));
    float *x = px, *y = py, *z = pz;
    /* Values chosen so that a*x + y*y is exact in float: no FMA/rounding noise. */
    for (uint32_t i = 0; i < n; i++) {
        x[i] = (float)(i % 1000) * 0.25f;
        y[i] = (float)(i % 37) * 0.5f - 4.0f;
    }
    coexec_buffer_info binfo;
    CHECK(coexec_buffer_get_info(bz, &binfo));
    int zero_filled = z[0] == 0.0f && z[n - 1] == 0.0f;
    printf("z: %zu elements x %zu bytes = %zu bytes, host_ptr matches: %s, zero-filled: %s\n",
           binfo.count, binfo.elem_size, binfo.size_bytes, binfo.host_ptr == pz ? "yes" : "NO",
           zero_filled ? "yes" : "NO");
    if (binfo.host_ptr != pz || binfo.count != n || !zero_filled) failures++;

    axpy_data ad;
    atomic_init(&ad.calls, 0);
    atomic_init(&ad.bad_ranges, 0);
    coexec_kernel kaxpy;
    CHECK(coexec_kernel_from_glsl(eng, "axpy2", AXPY_GLSL, axpy_cpu, &ad, &kaxpy));

    float *ref = malloc((size_t)n * sizeof *ref);
    if (!ref) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }

    coexec_arg args[3] = {
        {bx, COEXEC_ACCESS_INPUT, 0},
        {by, COEXEC_ACCESS_INPUT, 0},
        {bz, COEXEC_ACCESS_OUTPUT, 1},
    };
    coexec_index_space space1 = {1, n, 0};

    /* Zero-initialised fields take their defaults (k = 2, min_package = 1),
     * except Dynamic's `packages`, which must be set. */
    double powers[2] = {1.0, 3.0};
    const coexec_scheduler scheds[5] = {
        {.kind = COEXEC_SCHEDULER_HGUIDED},
        {.kind = COEXEC_SCHEDULER_HGUIDED, .k = 4.0, .min_package = 16},
        {.kind = COEXEC_SCHEDULER_DYNAMIC, .packages = 64},
        {.kind = COEXEC_SCHEDULER_STATIC, .powers = powers, .num_powers = 2},
        {.kind = COEXEC_SCHEDULER_HGUIDED, .powers = powers, .num_powers = 2},
    };
    const char *sched_names[5] = {"hguided (defaults)", "hguided k=4 min=16", "dynamic 64",
                                  "static powers 1:3", "hguided powers 1:3"};

    for (int s = 0; s < 5; s++) {
        axpy_push push = {1.5f + (float)s, n};
        for (uint32_t i = 0; i < n; i++) {
            ref[i] = push.a * x[i] + y[i] * y[i];
            z[i] = -12345.0f; /* poison, so unwritten elements show */
        }
        coexec_report rep;
        CHECK(coexec_run(eng, kaxpy, args, 3, &push, sizeof push, space1, &scheds[s],
                         COEXEC_DEVICE_CPU | COEXEC_DEVICE_GPU, &rep));
        print_report(sched_names[s], &rep);
        uint64_t bad = 0, first_bad = 0, sum_items = 0;
        for (uint32_t i = 0; i < n; i++)
            if (z[i] != ref[i] && bad++ == 0) first_bad = i;
        for (uint32_t d = 0; d < rep.num_devices; d++) sum_items += rep.devices[d].items;
        printf("    verify: %llu of %u elements differ%s; device items sum %llu (%s)\n",
               (unsigned long long)bad, n, bad ? "" : " (all match the C reference)",
               (unsigned long long)sum_items, sum_items == n ? "= n" : "!= n");
        if (bad) {
            printf("    first bad z[%llu] = %g, want %g\n", (unsigned long long)first_bad,
                   z[first_bad], ref[first_bad]);
            failures++;
        }
        if (sum_items != n || rep.items != n) failures++;
    }
    printf("    CPU function: %lu calls, %lu out of range\n",
           (unsigned long)atomic_load(&ad.calls), (unsigned long)atomic_load(&ad.bad_ranges));
    if (atomic_load(&ad.bad_ranges)) failures++;

    /* ---- 2-D kernel: 1000 x 333 (neither a multiple of 8) ---- */
    const uint32_t W = 1000, H = 333;
    coexec_buffer bin, bout;
    void *pin, *pout;
    CHECK(coexec_buffer_alloc(eng, (size_t)W * H, sizeof(float), &bin, &pin));
    CHECK(coexec_buffer_alloc(eng, (size_t)W * H, sizeof(float), &bout, &pout));
    float *in = pin, *out = pout;
    for (size_t i = 0; i < (size_t)W * H; i++) {
        in[i] = (float)(i % 97) * 0.125f;
        out[i] = -999.0f;
    }
    img_data idata;
    atomic_init(&idata.bad_ranges, 0);
    coexec_kernel kimg;
    CHECK(coexec_kernel_from_glsl(eng, "img", IMG_GLSL, img_cpu, &idata, &kimg));
    img_push ip = {3.0f, W, H};
    coexec_arg iargs[2] = {{bin, COEXEC_ACCESS_INPUT, 0}, {bout, COEXEC_ACCESS_OUTPUT, 0}};
    coexec_index_space space2 = {2, W, H};
    coexec_scheduler hg = {0};
    coexec_report rep2;
    CHECK(coexec_run(eng, kimg, iargs, 2, &ip, sizeof ip, space2, &hg, COEXEC_DEVICE_ALL, &rep2));
    print_report("2-D hguided 1000x333", &rep2);
    uint64_t bad2 = 0;
    for (uint32_t r = 0; r < H; r++)
        for (uint32_t c = 0; c < W; c++) {
            size_t i = (size_t)r * W + c;
            if (out[i] != in[i] * ip.s + (float)r - (float)c) bad2++;
        }
    printf("    verify: %llu of %u elements differ; CPU packages out of range: %lu\n",
           (unsigned long long)bad2, W * H, (unsigned long)atomic_load(&idata.bad_ranges));
    if (bad2 || atomic_load(&idata.bad_ranges) || rep2.items != (uint64_t)W * H) failures++;

    /* ---- error paths: each must come back as its documented code ---- */
    printf("error paths:\n");
    coexec_kernel kbad = {0};
    coexec_status st = coexec_kernel_from_glsl(
        eng, "broken",
        "#version 450\nlayout(local_size_x = 64) in;\nvoid main() { undeclared = 1; }\n",
        NULL, NULL, &kbad);
    expect_error("bad GLSL", st, COEXEC_ERROR_SHADER_COMPILE);
    printf("      handle after failure: {%llu}\n", (unsigned long long)kbad.id);
    if (kbad.id != 0) failures++;

    coexec_index_space space3 = {3, n, 1};
    axpy_push push = {1.0f, n};
    st = coexec_run(eng, kaxpy, args, 3, &push, sizeof push, space3, NULL, COEXEC_DEVICE_ALL, NULL);
    expect_error("index space dims = 3", st, COEXEC_ERROR_INVALID_ARGUMENT);

    coexec_scheduler weird = {.kind = 42};
    st = coexec_run(eng, kaxpy, args, 3, &push, sizeof push, space1, &weird, COEXEC_DEVICE_ALL, NULL);
    expect_error("scheduler kind 42", st, COEXEC_ERROR_INVALID_ARGUMENT);

    coexec_scheduler dyn0 = {.kind = COEXEC_SCHEDULER_DYNAMIC};
    st = coexec_run(eng, kaxpy, args, 3, &push, sizeof push, space1, &dyn0, COEXEC_DEVICE_ALL, NULL);
    expect_error("dynamic with packages = 0", st, COEXEC_ERROR_SCHEDULER);

    st = coexec_run(eng, kaxpy, args, 3, &push, 4, space1, NULL, COEXEC_DEVICE_ALL, NULL);
    expect_error("push constant 4 bytes instead of 8", st, COEXEC_ERROR_INTERFACE);

    coexec_index_space too_big = {1, (uint64_t)n + 1000, 0};
    st = coexec_run(eng, kaxpy, args, 3, &push, sizeof push, too_big, NULL, COEXEC_DEVICE_ALL, NULL);
    expect_error("index space larger than output", st, COEXEC_ERROR_BUFFER_TOO_SMALL);

    st = coexec_run(eng, kaxpy, args, 3, &push, sizeof push, space1, NULL, 0, NULL);
    expect_error("device mask 0", st, COEXEC_ERROR_INVALID_ARGUMENT);

    st = coexec_buffer_alloc(eng, n, sizeof(float), NULL, NULL);
    expect_error("buffer_alloc with out = NULL", st, COEXEC_ERROR_NULL_POINTER);

    st = coexec_run(eng, kaxpy, args, 3, &push, sizeof push, space1, &scheds[3],
                    COEXEC_DEVICE_CPU, NULL);
    expect_error("static, 2 powers, CPU-only run", st, COEXEC_ERROR_SCHEDULER);

    CHECK(coexec_engine_get_info(eng, &info));
    printf("validation errors reported by the Khronos layer: %llu\n",
           (unsigned long long)info.validation_errors);
    if (info.validation_errors) failures++;

    /* ---- free everything ---- */
    free(ref);
    CHECK(coexec_kernel_destroy(kaxpy));
    CHECK(coexec_kernel_destroy(kimg));
    CHECK(coexec_buffer_free(bx));
    CHECK(coexec_buffer_free(by));
    CHECK(coexec_buffer_free(bz));
    CHECK(coexec_buffer_free(bin));
    CHECK(coexec_buffer_free(bout));
    st = coexec_buffer_free(bz);
    expect_error("double free of a buffer", st, COEXEC_ERROR_INVALID_HANDLE);
    CHECK(coexec_engine_destroy(eng));
    st = coexec_engine_destroy(eng);
    expect_error("engine destroyed twice", st, COEXEC_ERROR_INVALID_HANDLE);

    printf("%s\n", failures ? "axpy2d: FAILED" : "axpy2d: OK");
    return failures ? 1 : 0;
}
