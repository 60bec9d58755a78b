/*
 * misuse.c: the C ABI under misuse, as a C program sees it. Run by
 * scripts/c-examples.sh plainly, under valgrind memcheck and under
 * AddressSanitizer.
 *
 * First a 2-D 3x3 box blur (GLSL for the GPU, a C CPU function reading the
 * run's buffers) co-executed and checked against a serial reference; then
 * each misuse of the issue that found them, each of which must return its
 * documented status (never crash, hang or print to stdout). Everything this
 * program prints goes to stderr: the script checks that stdout stays empty,
 * so nothing of the library's may write there either.
 *
 * Exit status 0 when every check held, 1 otherwise.
 *
 *   cc -std=c11 misuse.c $(pkg-config --cflags --libs coexec) -o misuse
 */
#include <coexec.h>

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define FAIL(...)                                                                  \
    do {                                                                           \
        fprintf(stderr, "misuse: FAIL line %d: ", __LINE__);                     \
        fprintf(stderr, __VA_ARGS__);                                              \
        fprintf(stderr, "\n");                                                     \
        failures++;                                                                \
    } while (0)

/* A call that must return `want`; a wrong status is a failure. */
#define EXPECT(call, want)                                                         \
    do {                                                                           \
        coexec_status got_ = (call);                                               \
        if (got_ != (want))                                                        \
            FAIL("%s returned %s, want %s (%s)", #call, coexec_status_string(got_), \
                 coexec_status_string(want), coexec_last_error());                 \
        else                                                                       \
            fprintf(stderr, "ok  %-28s %s\n", coexec_status_string(got_),          \
                    (want) == COEXEC_OK ? "" : coexec_last_error());               \
    } while (0)

/* ------------------------------------------------------------ the blur --- */

typedef struct {
    uint32_t w, h;
} blur_push; /* { uint w; uint h; }: 8 bytes */

static const char *BLUR_GLSL =
    "#version 450\n"
    "layout(local_size_x = 8, local_size_y = 8) in;\n"
    "layout(std430, binding = 0) readonly buffer I { float src[]; };\n"
    "layout(std430, binding = 1) writeonly buffer O { float dst[]; };\n"
    "layout(push_constant) uniform P { uint w; uint h; } p;\n"
    "void main() {\n"
    "    ivec2 g = ivec2(gl_GlobalInvocationID.xy);\n"
    "    if (g.x >= int(p.w) || g.y >= int(p.h)) return;\n"
    "    float s = 0.0;\n"
    "    for (int dy = -1; dy <= 1; dy++)\n"
    "        for (int dx = -1; dx <= 1; dx++) {\n"
    "            int x = clamp(g.x + dx, 0, int(p.w) - 1);\n"
    "            int y = clamp(g.y + dy, 0, int(p.h) - 1);\n"
    "            s += src[y * int(p.w) + x];\n"
    "        }\n"
    "    dst[g.y * int(p.w) + g.x] = s / 9.0;\n"
    "}\n";

static float blur_at(const float *src, uint32_t w, uint32_t h, uint32_t x, uint32_t y)
{
    float s = 0.0f;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            int xx = (int)x + dx, yy = (int)y + dy;
            xx = xx < 0 ? 0 : (xx >= (int)w ? (int)w - 1 : xx);
            yy = yy < 0 ? 0 : (yy >= (int)h ? (int)h - 1 : yy);
            s += src[yy * (int)w + xx];
        }
    return s / 9.0f;
}

/* What the CPU function counts; it fails (returns 42) once `fail` is set. */
typedef struct {
    atomic_ulong calls;
    atomic_int fail;
} blur_state;

static int32_t blur_cpu(const coexec_package *pkg, const coexec_cpu_args *args, void *user_data)
{
    blur_state *st = user_data;
    atomic_fetch_add(&st->calls, 1);
    if (atomic_load(&st->fail)) return 42;
    if (args->num_buffers != 2 || args->push_size != sizeof(blur_push)) return 1;
    const blur_push *p = args->push;
    const float *src = args->buffers[0].data;
    float *dst = args->buffers[1].data;
    for (uint32_t y = pkg->row_start; y < pkg->row_end; y++)
        for (uint32_t x = 0; x < pkg->width; x++)
            dst[(size_t)y * p->w + x] = blur_at(src, p->w, p->h, x, y);
    return 0;
}

static coexec_index_space d2(uint32_t w, uint32_t h)
{
    coexec_index_space s = {2, w, h};
    return s;
}

/* Runs the blur; checks the output against the serial reference. */
static void blur_and_check(coexec_engine e, coexec_kernel k, coexec_buffer in, coexec_buffer out,
                           uint32_t w, uint32_t h, uint32_t devices)
{
    coexec_arg args[2] = {{in, COEXEC_ACCESS_INPUT, 0}, {out, COEXEC_ACCESS_OUTPUT, 1}};
    blur_push push = {w, h};
    coexec_buffer_info ii, oi;
    EXPECT(coexec_buffer_get_info(in, &ii), COEXEC_OK);
    EXPECT(coexec_buffer_get_info(out, &oi), COEXEC_OK);
    memset(oi.host_ptr, 0, oi.size_bytes);
    EXPECT(coexec_run(e, k, args, 2, &push, sizeof push, d2(w, h), NULL, devices, NULL),
           COEXEC_OK);
    const float *src = ii.host_ptr, *dst = oi.host_ptr;
    size_t bad = 0;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++)
            if (fabsf(dst[(size_t)y * w + x] - blur_at(src, w, h, x, y)) > 1e-4f) bad++;
    if (bad) FAIL("blur on devices %u: %zu of %u pixels differ", devices, bad, w * h);
}

/* ------------------------------------------------------------- misuses --- */

static void engine_options(void)
{
    coexec_engine_options o = coexec_engine_options_default();
    coexec_engine e = {7};
    if (o.gpu_in_flight != 2 || o.gpu_timeout_s != 30.0)
        FAIL("defaults are %u in flight, %g s", o.gpu_in_flight, o.gpu_timeout_s);
    o.gpu_in_flight = UINT32_MAX; /* used to abort: a 32 GiB ring */
    EXPECT(coexec_engine_create(&o, &e), COEXEC_ERROR_INVALID_ARGUMENT);
    if (e.id != 0) FAIL("handle not nulled");
    o = coexec_engine_options_default();
    o.gpu_timeout_s = NAN;
    EXPECT(coexec_engine_create(&o, &e), COEXEC_ERROR_INVALID_ARGUMENT);
    o = coexec_engine_options_default();
    o.workers = 1 << 20;
    EXPECT(coexec_engine_create(&o, &e), COEXEC_ERROR_INVALID_ARGUMENT);
    o = coexec_engine_options_default();
    o.pipeline_cache_dir = "/proc/coexec-unwritable";
    EXPECT(coexec_engine_create(&o, &e), COEXEC_ERROR_INVALID_ARGUMENT);
}

static void bad_kernels(coexec_engine e, blur_state *st)
{
    coexec_kernel k = {0};
    /* No #version, or empty: an error, and glslang prints nothing. */
    EXPECT(coexec_kernel_from_glsl(e, "nov", "layout(local_size_x=1) in; void main(){}",
                                   blur_cpu, st, &k),
           COEXEC_ERROR_SHADER_COMPILE);
    EXPECT(coexec_kernel_from_glsl(e, "empty", "", blur_cpu, st, &k),
           COEXEC_ERROR_SHADER_COMPILE);
    EXPECT(coexec_kernel_from_glsl(e, "bad", "#version 450\nvoid main() { nope(); }", NULL,
                                   NULL, &k),
           COEXEC_ERROR_SHADER_COMPILE);
    EXPECT(coexec_kernel_from_glsl(e, NULL, NULL, NULL, NULL, &k), COEXEC_ERROR_NULL_POINTER);
    EXPECT(coexec_kernel_cpu_only(e, "x", 8, 8, NULL, NULL, &k), COEXEC_ERROR_NULL_POINTER);
    EXPECT(coexec_kernel_destroy(k), COEXEC_ERROR_INVALID_HANDLE);
}

/* Runs of the blur kernel with wrong arguments. */
static void bad_runs(coexec_engine e, coexec_kernel k, coexec_buffer in, coexec_buffer out,
                     uint32_t w, uint32_t h)
{
    coexec_arg args[2] = {{in, COEXEC_ACCESS_INPUT, 0}, {out, COEXEC_ACCESS_OUTPUT, 1}};
    blur_push push = {w, h};
    uint32_t all = COEXEC_DEVICE_ALL;
    /* push_size past the 8 bytes there are: refused before it is read. */
    EXPECT(coexec_run(e, k, args, 2, &push, (size_t)1 << 30, d2(w, h), NULL, all, NULL),
           COEXEC_ERROR_INTERFACE);
    EXPECT(coexec_run(e, k, args, 2, &push, 4, d2(w, h), NULL, COEXEC_DEVICE_CPU, NULL),
           COEXEC_ERROR_INTERFACE);
    EXPECT(coexec_run(e, k, args, SIZE_MAX, &push, 8, d2(w, h), NULL, all, NULL),
           COEXEC_ERROR_INVALID_ARGUMENT);
    EXPECT(coexec_run(e, k, args, 2, &push, 8, d2(w, h), NULL, 0, NULL),
           COEXEC_ERROR_INVALID_ARGUMENT);
    coexec_arg twice[2] = {{out, COEXEC_ACCESS_INPUT, 0}, {out, COEXEC_ACCESS_OUTPUT, 1}};
    EXPECT(coexec_run(e, k, twice, 2, &push, 8, d2(w, h), NULL, all, NULL),
           COEXEC_ERROR_INVALID_ARGUMENT);
    /* per_item is ignored for inputs, whatever its value. */
    coexec_arg big = args[0];
    big.per_item = UINT64_MAX;
    coexec_arg args2[2] = {big, args[1]};
    EXPECT(coexec_run(e, k, args2, 2, &push, 8, d2(w, h), NULL, all, NULL), COEXEC_OK);
    /* 2-byte elements behind a float binding. */
    coexec_buffer half;
    EXPECT(coexec_buffer_alloc(e, 2 * (size_t)w * h, 2, &half, NULL), COEXEC_OK);
    coexec_arg halves[2] = {{half, COEXEC_ACCESS_INPUT, 0}, args[1]};
    EXPECT(coexec_run(e, k, halves, 2, &push, 8, d2(w, h), NULL, all, NULL),
           COEXEC_ERROR_INTERFACE);
    EXPECT(coexec_buffer_free(half), COEXEC_OK);
    EXPECT(coexec_buffer_free(half), COEXEC_ERROR_INVALID_HANDLE);
}

/* A vec4 shader over a float buffer: refused (it used to return OK with
 * nearly every value wrong). */
static void wrong_element_type(coexec_engine e, coexec_buffer in, coexec_buffer out)
{
    static const char *VEC4 =
        "#version 450\n"
        "layout(local_size_x = 64) in;\n"
        "layout(std430, binding = 0) readonly buffer I { vec4 a[]; };\n"
        "layout(std430, binding = 1) buffer O { vec4 b[]; };\n"
        "layout(push_constant) uniform P { uint n; } p;\n"
        "void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) b[i] = a[i] * 2.0; }\n";
    coexec_kernel k;
    EXPECT(coexec_kernel_from_glsl(e, "vec4", VEC4, NULL, NULL, &k), COEXEC_OK);
    coexec_arg args[2] = {{in, COEXEC_ACCESS_INPUT, 0}, {out, COEXEC_ACCESS_OUTPUT, 1}};
    uint32_t n = 100;
    coexec_index_space s = {1, n, 0};
    EXPECT(coexec_run(e, k, args, 2, &n, 4, s, NULL, COEXEC_DEVICE_GPU, NULL),
           COEXEC_ERROR_INTERFACE);
    EXPECT(coexec_kernel_destroy(k), COEXEC_OK);
}

/* A CPU function that fails: the run stops and says so; the engine goes on. */
static void failing_cpu_function(coexec_engine e, coexec_kernel k, blur_state *st,
                                 coexec_buffer in, coexec_buffer out, uint32_t w, uint32_t h)
{
    coexec_arg args[2] = {{in, COEXEC_ACCESS_INPUT, 0}, {out, COEXEC_ACCESS_OUTPUT, 1}};
    blur_push push = {w, h};
    coexec_engine_info info;
    EXPECT(coexec_engine_get_info(e, &info), COEXEC_OK);
    atomic_store(&st->calls, 0);
    atomic_store(&st->fail, 1);
    EXPECT(coexec_run(e, k, args, 2, &push, 8, d2(w, h), NULL, COEXEC_DEVICE_CPU, NULL),
           COEXEC_ERROR_KERNEL_FAILED);
    if (coexec_last_kernel_code() != 42) FAIL("kernel code %d", coexec_last_kernel_code());
    unsigned long calls = atomic_load(&st->calls);
    if (calls > info.workers) FAIL("%lu calls after the failure (workers: %u)", calls,
                                   info.workers);
    atomic_store(&st->fail, 0);
    blur_and_check(e, k, in, out, w, h, COEXEC_DEVICE_ALL);
}

int main(void)
{
    const uint32_t w = 67, h = 45;
    engine_options();
    coexec_engine e;
    coexec_status s = coexec_engine_create(NULL, &e);
    if (s == COEXEC_ERROR_NO_DEVICE) {
        fprintf(stderr, "misuse: no Vulkan device, skipping the device parts\n");
        return failures ? 1 : 0;
    }
    EXPECT(s, COEXEC_OK);
    if (s != COEXEC_OK) return 1;
    blur_state st;
    atomic_init(&st.calls, 0);
    atomic_init(&st.fail, 0);
    coexec_kernel k;
    EXPECT(coexec_kernel_from_glsl(e, "blur", BLUR_GLSL, blur_cpu, &st, &k), COEXEC_OK);
    coexec_buffer in, out, in2, out2;
    float *src, *src2;
    EXPECT(coexec_buffer_alloc(e, (size_t)w * h, sizeof(float), &in, (void **)&src), COEXEC_OK);
    EXPECT(coexec_buffer_alloc(e, (size_t)w * h, sizeof(float), &out, NULL), COEXEC_OK);
    EXPECT(coexec_buffer_alloc(e, (size_t)w * h, sizeof(float), &in2, (void **)&src2),
           COEXEC_OK);
    EXPECT(coexec_buffer_alloc(e, (size_t)w * h, sizeof(float), &out2, NULL), COEXEC_OK);
    for (size_t i = 0; i < (size_t)w * h; i++) {
        src[i] = (float)((i * 7919) % 101);
        src2[i] = (float)i * 0.5f;
    }
    /* One kernel, two sets of buffers: the CPU function reads the run's. */
    blur_and_check(e, k, in, out, w, h, COEXEC_DEVICE_ALL);
    blur_and_check(e, k, in2, out2, w, h, COEXEC_DEVICE_ALL);
    blur_and_check(e, k, in, out, w, h, COEXEC_DEVICE_CPU);
    if (strcmp(coexec_last_validation_messages(), "") != 0)
        FAIL("validation: %s", coexec_last_validation_messages());

    bad_kernels(e, &st);
    bad_runs(e, k, in, out, w, h);
    wrong_element_type(e, in, out);
    failing_cpu_function(e, k, &st, in, out, w, h);

    EXPECT(coexec_engine_destroy(e), COEXEC_OK);
    EXPECT(coexec_run(e, k, NULL, 0, NULL, 0, d2(w, h), NULL, 3, NULL),
           COEXEC_ERROR_INVALID_HANDLE);
    EXPECT(coexec_kernel_destroy(k), COEXEC_OK);
    coexec_buffer bufs[4] = {in, out, in2, out2};
    for (int i = 0; i < 4; i++) EXPECT(coexec_buffer_free(bufs[i]), COEXEC_OK);
    fprintf(stderr, "misuse: %s\n", failures ? "FAILED" : "all checks held");
    return failures ? 1 : 0;
}
