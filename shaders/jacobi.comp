#version 450
// One Jacobi sweep of the 2-D Laplace equation on a width x height grid:
// every interior point becomes the mean of its four neighbours, summed as
// ((up + left) + right) + down and scaled by 0.25; border points keep their
// value (Dirichlet boundary). Bandwidth-bound, 2-D index space.
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer In { float src[]; };
layout(std430, binding = 1) writeonly buffer Out { float dst[]; };
layout(push_constant) uniform Params { uint width; uint height; } p;
void main() {
    uint x = gl_GlobalInvocationID.x;
    uint y = gl_GlobalInvocationID.y;
    if (x >= p.width || y >= p.height) return;
    uint i = y * p.width + x;
    if (x == 0u || y == 0u || x + 1u == p.width || y + 1u == p.height) {
        dst[i] = src[i];
        return;
    }
    dst[i] = 0.25 * (((src[i - p.width] + src[i - 1u]) + src[i + 1u]) + src[i + p.width]);
}
