#version 450
// C = A x B for square n x n f32 matrices, one work-item per element of C,
// 16 x 16 tiles of A and B staged in shared memory. Each element sums its n
// products in k order (as the CPU implementation), possibly fused.
#define T 16
layout(local_size_x = T, local_size_y = T) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Params { uint n; } p;
shared float ta[T][T];
shared float tb[T][T];
void main() {
    uint n = p.n;
    uint col = gl_GlobalInvocationID.x;
    uint row = gl_GlobalInvocationID.y;
    uint lx = gl_LocalInvocationID.x;
    uint ly = gl_LocalInvocationID.y;
    float acc = 0.0;
    for (uint t = 0u; t < n; t += uint(T)) {
        uint ak = t + lx;
        uint bk = t + ly;
        ta[ly][lx] = (row < n && ak < n) ? a[row * n + ak] : 0.0;
        tb[ly][lx] = (bk < n && col < n) ? b[bk * n + col] : 0.0;
        barrier();
        for (uint k = 0u; k < uint(T); k++) {
            acc += ta[ly][k] * tb[k][lx];
        }
        barrier();
    }
    if (row < n && col < n) {
        c[row * n + col] = acc;
    }
}
