#version 450
// Escape-time iteration count of each pixel of the Mandelbrot set.
// `precise` keeps the GPU from fusing multiply-adds, so that it computes the
// same float operations as the CPU reference.
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) writeonly buffer Out { uint iters[]; };
layout(push_constant) uniform Params {
    uint width; uint height; uint max_iter; uint _pad;
    float x0; float y0; float dx; float dy;
} p;
void main() {
    uint px = gl_GlobalInvocationID.x;
    uint py = gl_GlobalInvocationID.y;
    if (px >= p.width || py >= p.height) return;
    precise float cr = p.x0 + float(px) * p.dx;
    precise float ci = p.y0 + float(py) * p.dy;
    precise float zr = 0.0;
    precise float zi = 0.0;
    uint i = 0u;
    while (i < p.max_iter) {
        precise float zr2 = zr * zr;
        precise float zi2 = zi * zi;
        if (zr2 + zi2 > 4.0) break;
        precise float t = zr2 - zi2 + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        i++;
    }
    iters[py * p.width + px] = i;
}
