/*
 * saxpy.c: z = a * x + y co-executed on the CPU worker threads and the
 * Vulkan device at once, through the coexec C API.
 *
 *   cc -std=c99 saxpy.c $(pkg-config --cflags --libs coexec) -o saxpy
 *
 * It builds the GPU kernel from GLSL at run time, gives the CPU
 * implementation as a C function, imports page-aligned host memory for one
 * input (zero-copy) where the device supports it, verifies the result against
 * a plain C loop, prints the run's report, and shows how errors come back
 * (a GLSL compile error, a double free, a misaligned import).
 * Exit status 0 on success, 1 on any failure or mismatch.
 */
#define _POSIX_C_SOURCE 200112L

#include <coexec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Scalar arguments, passed as push constants (the same bytes reach the
 * shader's push_constant block and the CPU function). */
typedef struct {
    float a;
    uint32_t n;
} saxpy_push;

static const char *SAXPY_GLSL =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer X { float x[]; };\n"
    "layout(std430, binding = 1) readonly buffer Y { float y[]; };\n"
    "layout(std430, binding = 2) buffer Z { float z[]; };\n"
    "layout(push_constant) uniform P { float a; uint n; } p;\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i < p.n) z[i] = p.a * x[i] + y[i];\n"
    "}\n";

/* The CPU implementation: called for each part of a package the CPU workers
 * claim, from several threads at once, with the run's buffers and push
 * constants. It writes only its own items of z and returns 0 (success). */
static int32_t saxpy_cpu(const coexec_package *pkg, const coexec_cpu_args *args, void *user_data)
{
    const float *x = (const float *)args->buffers[0].data;
    const float *y = (const float *)args->buffers[1].data;
    float *z = (float *)args->buffers[2].data;
    saxpy_push p;
    uint64_t i;
    (void)user_data;
    memcpy(&p, args->push, sizeof p);
    for (i = pkg->item_start; i < pkg->item_end; i++) {
        z[i] = p.a * x[i] + y[i];
    }
    return 0;
}

static int failures = 0;

/* Checks a status; on failure prints coexec_last_error() and counts it. */
static int check(coexec_status s, const char *what)
{
    if (s != COEXEC_OK) {
        fprintf(stderr, "saxpy: %s failed: %s: %s\n", what, coexec_status_string(s),
                coexec_last_error());
        failures++;
        return 0;
    }
    return 1;
}

/* Expects a specific error code (the error-path demonstrations). */
static void expect(coexec_status s, coexec_status want, const char *what)
{
    if (s != want) {
        fprintf(stderr, "saxpy: %s: expected %s, got %s (%s)\n", what,
                coexec_status_string(want), coexec_status_string(s), coexec_last_error());
        failures++;
    } else {
        printf("  %-28s -> %s\n", what, coexec_status_string(s));
    }
}

static void print_report(const char *title, const coexec_report *r)
{
    uint32_t i;
    printf("%s: %.3f ms, %llu items, %llu packages, balance %.3f\n", title, r->time_s * 1e3,
           (unsigned long long)r->items, (unsigned long long)r->packages, r->balance);
    for (i = 0; i < r->num_devices; i++) {
        const coexec_device_report *d = &r->devices[i];
        printf("  %-3s %-40.40s %3llu packages %9llu items  busy %8.3f ms  finish %8.3f ms%s\n",
               d->kind == COEXEC_DEVICE_KIND_CPU ? "cpu" : "gpu", d->name,
               (unsigned long long)d->packages, (unsigned long long)d->items, d->busy_s * 1e3,
               d->finish_s * 1e3, d->failed ? "  (failed)" : "");
    }
}

int main(void)
{
    const size_t n = (size_t)1 << 20;
    const float a = 2.5f;
    coexec_engine_options opts = coexec_engine_options_default();
    coexec_engine engine = {0};
    coexec_engine_info info;
    coexec_buffer x = {0}, y = {0}, z = {0};
    coexec_kernel kernel = {0};
    coexec_report report;
    float *xp = NULL, *yp = NULL, *zp = NULL;
    void *imported = NULL, *host = NULL;
    saxpy_push push;
    size_t i, bad = 0, y_bytes;
    coexec_arg args[3];
    coexec_index_space space;
    coexec_scheduler sched;

    printf("coexec %s\n", coexec_version());
    if (!check(coexec_engine_create(&opts, &engine), "coexec_engine_create")) {
        return 1;
    }
    if (!check(coexec_engine_get_info(engine, &info), "coexec_engine_get_info")) {
        goto out;
    }
    printf("device: %s%s, %u CPU workers, host import alignment %llu\n", info.device_name,
           info.device_is_cpu ? " (a CPU implementation)" : "", info.workers,
           (unsigned long long)info.host_import_alignment);

    /* x and z: unified buffers allocated by coexec, written in place. */
    if (!check(coexec_buffer_alloc(engine, n, sizeof(float), &x, &host), "alloc x")) goto out;
    xp = (float *)host;
    if (!check(coexec_buffer_alloc(engine, n, sizeof(float), &z, &host), "alloc z")) goto out;
    zp = (float *)host;

    /* y: our own page-aligned memory, imported without a copy when the
     * device can; a unified buffer otherwise. */
    y_bytes = n * sizeof(float);
    if (info.host_import_alignment > 0) {
        size_t align = (size_t)info.host_import_alignment;
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        if (align < page) align = page;
        y_bytes = (y_bytes + align - 1) / align * align;
        if (posix_memalign(&imported, align, y_bytes) != 0) {
            fprintf(stderr, "saxpy: posix_memalign failed\n");
            failures++;
            goto out;
        }
        yp = (float *)imported;
        for (i = 0; i < n; i++) yp[i] = (float)(i % 17) - 8.0f;
        if (!check(coexec_buffer_import(engine, imported, y_bytes / sizeof(float), sizeof(float),
                                        &y),
                   "coexec_buffer_import")) {
            goto out;
        }
        printf("y: imported %zu bytes of host memory at %p (zero-copy)\n", y_bytes, imported);
    } else {
        if (!check(coexec_buffer_alloc(engine, n, sizeof(float), &y, &host), "alloc y")) goto out;
        yp = (float *)host;
        for (i = 0; i < n; i++) yp[i] = (float)(i % 17) - 8.0f;
        printf("y: the device cannot import host memory; using a unified buffer\n");
    }
    for (i = 0; i < n; i++) {
        xp[i] = (float)i * 0.25f;
        zp[i] = -1.0f;
    }

    /* The kernel: GLSL for the GPU, saxpy_cpu for the CPU workers. */
    if (!check(coexec_kernel_from_glsl(engine, "saxpy", SAXPY_GLSL, saxpy_cpu, NULL, &kernel),
               "coexec_kernel_from_glsl")) {
        goto out;
    }

    /* Co-execute with HGuided on the CPU and the GPU. */
    args[0].buffer = x; args[0].access = COEXEC_ACCESS_INPUT;  args[0].per_item = 0;
    args[1].buffer = y; args[1].access = COEXEC_ACCESS_INPUT;  args[1].per_item = 0;
    args[2].buffer = z; args[2].access = COEXEC_ACCESS_OUTPUT; args[2].per_item = 1;
    push.a = a;
    push.n = (uint32_t)n;
    space.dims = 1;
    space.width = n;
    space.height = 0;
    memset(&sched, 0, sizeof sched);
    sched.kind = COEXEC_SCHEDULER_HGUIDED;
    sched.k = 2.0;
    sched.min_package = 4;
    if (!check(coexec_run(engine, kernel, args, 3, &push, sizeof push, space, &sched,
                          COEXEC_DEVICE_CPU | COEXEC_DEVICE_GPU, &report),
               "coexec_run")) {
        goto out;
    }

    /* Verify against a plain C loop. */
    for (i = 0; i < n; i++) {
        float want = a * xp[i] + yp[i];
        if (zp[i] != want) {
            if (bad < 5) fprintf(stderr, "saxpy: z[%zu] = %g, expected %g\n", i, zp[i], want);
            bad++;
        }
    }
    print_report("hguided cpu+gpu", &report);
    if (bad) {
        fprintf(stderr, "saxpy: %zu of %zu results wrong\n", bad, n);
        failures++;
    } else {
        printf("verified: all %zu results match the C reference\n", n);
    }

    /* Again with a static split given as device powers (CPU first, then
     * GPU): one package per device, half the items each. */
    {
        const double powers[2] = {1.0, 1.0};
        memset(&sched, 0, sizeof sched);
        sched.kind = COEXEC_SCHEDULER_STATIC;
        sched.powers = powers;
        sched.num_powers = 2;
        for (i = 0; i < n; i++) zp[i] = -1.0f;
        if (!check(coexec_run(engine, kernel, args, 3, &push, sizeof push, space, &sched,
                              COEXEC_DEVICE_ALL, &report),
                   "coexec_run (static)")) {
            goto out;
        }
        for (i = 0, bad = 0; i < n; i++) bad += zp[i] != a * xp[i] + yp[i];
        print_report("static 1:1 cpu+gpu", &report);
        if (bad) {
            fprintf(stderr, "saxpy: %zu of %zu results wrong (static)\n", bad, n);
            failures++;
        } else {
            printf("verified: all %zu results match the C reference\n", n);
        }
    }

    /* Errors come back as codes with a message, never as crashes. */
    printf("error paths:\n");
    {
        coexec_kernel broken = {0};
        coexec_status s = coexec_kernel_from_glsl(
            engine, "broken",
            "#version 450\nlayout(local_size_x = 64) in;\nvoid main() { y = 1.0; }\n", NULL,
            NULL, &broken);
        expect(s, COEXEC_ERROR_SHADER_COMPILE, "GLSL compile error");
        if (s == COEXEC_ERROR_SHADER_COMPILE) printf("    compiler says: %s", coexec_last_error());
    }
    {
        coexec_buffer tmp = {0};
        if (check(coexec_buffer_alloc(engine, 16, sizeof(float), &tmp, NULL), "alloc tmp")) {
            check(coexec_buffer_free(tmp), "free tmp");
            expect(coexec_buffer_free(tmp), COEXEC_ERROR_INVALID_HANDLE, "double free");
        }
    }
    if (imported != NULL) {
        coexec_buffer tmp = {0};
        expect(coexec_buffer_import(engine, (char *)imported + 4, 256, sizeof(float), &tmp),
               COEXEC_ERROR_MISALIGNED, "misaligned import");
    }
    {
        coexec_arg twice[3];
        memcpy(twice, args, sizeof twice);
        twice[0] = args[2];
        twice[0].access = COEXEC_ACCESS_INPUT;
        expect(coexec_run(engine, kernel, twice, 3, &push, sizeof push, space, NULL,
                          COEXEC_DEVICE_ALL, NULL),
               COEXEC_ERROR_INVALID_ARGUMENT, "output also given as input");
    }
    expect(coexec_run(engine, kernel, args, 2, &push, sizeof push, space, NULL, COEXEC_DEVICE_GPU,
                      NULL),
           COEXEC_ERROR_INTERFACE, "missing argument");

    if (check(coexec_engine_get_info(engine, &info), "coexec_engine_get_info") &&
        info.validation_errors != 0) {
        fprintf(stderr, "saxpy: %llu Vulkan validation errors\n",
                (unsigned long long)info.validation_errors);
        failures++;
    }

out:
    /* Destroy in any order; every handle is checked (a null one is an error,
     * so only live ones are passed). Imported memory is ours to free after
     * its buffer. */
    if (kernel.id) check(coexec_kernel_destroy(kernel), "coexec_kernel_destroy");
    if (x.id) check(coexec_buffer_free(x), "free x");
    if (y.id) check(coexec_buffer_free(y), "free y");
    if (z.id) check(coexec_buffer_free(z), "free z");
    free(imported);
    check(coexec_engine_destroy(engine), "coexec_engine_destroy");
    if (failures) {
        fprintf(stderr, "saxpy: FAILED (%d problem(s))\n", failures);
        return 1;
    }
    printf("saxpy: OK\n");
    return 0;
}
