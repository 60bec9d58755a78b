// mandelbrot.cpp: a Mandelbrot image co-executed on the CPU worker threads
// and the Vulkan device through the coexec C API, from C++.
//
//   c++ -std=c++17 mandelbrot.cpp $(pkg-config --cflags --libs coexec) -o mandelbrot
//   ./mandelbrot [out.pgm]
//
// A 2-D index space (one work-item per pixel); the GPU runs GLSL, the CPU
// workers run mandel_cpu over whole rows. The result is checked against a
// plain C++ loop and written as a binary PGM image (default mandelbrot.pgm).
// Exit status 0 on success, 1 on failure or mismatch.

#include <coexec.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

// Scalar arguments (push constants), laid out as in the shader (std430).
struct Params {
    uint32_t width;
    uint32_t height;
    uint32_t max_iter;
    float x0;
    float y0;
    float step;
};

const char *const kGlsl = R"(#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) buffer Out { uint iters[]; };
layout(push_constant) uniform P {
    uint width; uint height; uint max_iter; float x0; float y0; float step;
} p;
void main() {
    uvec2 g = gl_GlobalInvocationID.xy;
    if (g.x >= p.width || g.y >= p.height) return;
    // `precise`: no fused multiply-add, so the GPU rounds exactly as the
    // C++ reference does.
    precise float cx = p.x0 + float(g.x) * p.step;
    precise float cy = p.y0 + float(g.y) * p.step;
    precise float zx = 0.0;
    precise float zy = 0.0;
    uint i = 0u;
    while (i < p.max_iter) {
        precise float xx = zx * zx;
        precise float yy = zy * zy;
        if (xx + yy > 4.0) break;
        precise float t = xx - yy + cx;
        zy = 2.0 * zx * zy + cy;
        zx = t;
        i++;
    }
    iters[g.y * p.width + g.x] = i;
}
)";

// One pixel, exactly the shader's arithmetic (no FMA contraction: compile
// without -ffast-math; ISO C++ mode keeps -ffp-contract=off on GCC).
uint32_t mandel_pixel(const Params &p, uint32_t x, uint32_t y) {
    const float cx = p.x0 + static_cast<float>(x) * p.step;
    const float cy = p.y0 + static_cast<float>(y) * p.step;
    float zx = 0.0f, zy = 0.0f;
    uint32_t i = 0;
    while (i < p.max_iter) {
        const float xx = zx * zx;
        const float yy = zy * zy;
        if (xx + yy > 4.0f) break;
        const float t = xx - yy + cx;
        zy = 2.0f * zx * zy + cy;
        zx = t;
        i++;
    }
    return i;
}

// Thrown for any coexec error, with coexec_last_error()'s text.
struct Error : std::runtime_error {
    coexec_status status;
    Error(coexec_status s, const std::string &what)
        : std::runtime_error(what + ": " + coexec_status_string(s) + ": " + coexec_last_error()),
          status(s) {}
};

void check(coexec_status s, const char *what) {
    if (s != COEXEC_OK) throw Error(s, what);
}

// Minimal RAII owners for the three handle kinds.
class Engine {
  public:
    explicit Engine(const coexec_engine_options &o) {
        check(coexec_engine_create(&o, &h_), "coexec_engine_create");
    }
    ~Engine() {
        if (h_.id) coexec_engine_destroy(h_);
    }
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;
    coexec_engine get() const { return h_; }

  private:
    coexec_engine h_{};
};

class Buffer {
  public:
    Buffer(const Engine &e, size_t count, size_t elem_size) {
        check(coexec_buffer_alloc(e.get(), count, elem_size, &h_, &ptr_), "coexec_buffer_alloc");
    }
    ~Buffer() {
        if (h_.id) coexec_buffer_free(h_);
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    coexec_buffer get() const { return h_; }
    template <typename T> T *data() const { return static_cast<T *>(ptr_); }

  private:
    coexec_buffer h_{};
    void *ptr_ = nullptr;
};

class Kernel {
  public:
    Kernel(const Engine &e, const char *name, const char *glsl, coexec_cpu_fn cpu, void *user) {
        check(coexec_kernel_from_glsl(e.get(), name, glsl, cpu, user, &h_),
              "coexec_kernel_from_glsl");
    }
    ~Kernel() {
        if (h_.id) coexec_kernel_destroy(h_);
    }
    Kernel(const Kernel &) = delete;
    Kernel &operator=(const Kernel &) = delete;
    coexec_kernel get() const { return h_; }

  private:
    coexec_kernel h_{};
};

}  // namespace

// The CPU implementation, with C linkage as coexec_cpu_fn expects; called for
// each part of a package (whole rows in 2-D) from several workers at once,
// with the run's buffers and push constants. It must not throw: nothing in it
// can. It returns 0: success.
extern "C" int32_t mandel_cpu(const coexec_package *pkg, const coexec_cpu_args *args,
                              void * /*user_data*/) {
    auto *iters = static_cast<uint32_t *>(args->buffers[0].data);
    Params p;
    std::memcpy(&p, args->push, sizeof p);
    for (uint32_t y = pkg->row_start; y < pkg->row_end; ++y) {
        for (uint32_t x = 0; x < pkg->width; ++x) {
            iters[static_cast<size_t>(y) * p.width + x] = mandel_pixel(p, x, y);
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *out_path = argc > 1 ? argv[1] : "mandelbrot.pgm";
    try {
        const Params params{1024, 768, 256, -2.2f, -1.2f, 3.2f / 1024.0f};
        const size_t pixels = static_cast<size_t>(params.width) * params.height;

        const Engine engine(coexec_engine_options_default());
        coexec_engine_info info{};
        check(coexec_engine_get_info(engine.get(), &info), "coexec_engine_get_info");
        std::printf("coexec %s on %s with %u CPU workers\n", coexec_version(), info.device_name,
                    info.workers);

        const Buffer out(engine, pixels, sizeof(uint32_t));
        const Kernel kernel(engine, "mandelbrot", kGlsl, mandel_cpu, nullptr);

        const coexec_arg args[] = {{out.get(), COEXEC_ACCESS_OUTPUT, 1}};
        const coexec_index_space space{2, params.width, params.height};
        coexec_scheduler sched{};  // zero-initialised: HGuided, k = 2, min 1
        sched.kind = COEXEC_SCHEDULER_HGUIDED;
        coexec_report report{};
        check(coexec_run(engine.get(), kernel.get(), args, 1, &params, sizeof params, space,
                         &sched, COEXEC_DEVICE_CPU | COEXEC_DEVICE_GPU, &report),
              "coexec_run");

        std::printf("%u x %u pixels in %.3f ms, %llu packages, balance %.3f\n", params.width,
                    params.height, report.time_s * 1e3,
                    static_cast<unsigned long long>(report.packages), report.balance);
        for (uint32_t i = 0; i < report.num_devices; ++i) {
            const coexec_device_report &d = report.devices[i];
            std::printf("  %s %-40.40s %4llu packages %8llu items  busy %8.3f ms\n",
                        d.kind == COEXEC_DEVICE_KIND_CPU ? "cpu" : "gpu", d.name,
                        static_cast<unsigned long long>(d.packages),
                        static_cast<unsigned long long>(d.items), d.busy_s * 1e3);
        }

        // Verify against the plain C++ loop. `precise` makes the GPU's
        // arithmetic match exactly on conformant drivers; a handful of
        // boundary pixels is tolerated for drivers that still differ.
        const uint32_t *iters = out.data<uint32_t>();
        size_t mismatches = 0;
        for (uint32_t y = 0; y < params.height; ++y) {
            for (uint32_t x = 0; x < params.width; ++x) {
                const uint32_t want = mandel_pixel(params, x, y);
                const uint32_t got = iters[static_cast<size_t>(y) * params.width + x];
                if (got != want && ++mismatches <= 5) {
                    std::fprintf(stderr, "pixel (%u, %u): %u iterations, expected %u\n", x, y,
                                 got, want);
                }
            }
        }
        const size_t tolerated = pixels / 10000;
        std::printf("verified: %zu of %zu pixels differ from the C++ reference (tolerance %zu)\n",
                    mismatches, pixels, tolerated);
        if (mismatches > tolerated) {
            std::fprintf(stderr, "mandelbrot: FAILED: result does not match the reference\n");
            return 1;
        }

        // Write the image as binary PGM.
        std::vector<unsigned char> gray(pixels);
        for (size_t i = 0; i < pixels; ++i) {
            gray[i] = iters[i] >= params.max_iter
                          ? 0
                          : static_cast<unsigned char>(255 - (iters[i] * 255) / params.max_iter);
        }
        std::ofstream f(out_path, std::ios::binary);
        f << "P5\n" << params.width << " " << params.height << "\n255\n";
        f.write(reinterpret_cast<const char *>(gray.data()),
                static_cast<std::streamsize>(gray.size()));
        if (!f) {
            std::fprintf(stderr, "mandelbrot: cannot write %s\n", out_path);
            return 1;
        }
        std::printf("wrote %s\nmandelbrot: OK\n", out_path);
        return 0;
    } catch (const Error &e) {
        std::fprintf(stderr, "mandelbrot: %s\n", e.what());
        return 1;
    }
}
