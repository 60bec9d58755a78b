#version 450
// Sparse gather: item i sums table[idx[k * n + i]] over K pseudo-random
// indices into a large table (latency- and bandwidth-bound random reads).
// Integer sums wrap modulo 2^32: exact.
#define K 16
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Table { uint table[]; };
layout(std430, binding = 1) readonly buffer Idx { uint idx[]; };  // K x n, k-major
layout(std430, binding = 2) writeonly buffer Out { uint outp[]; };
layout(push_constant) uniform Params { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint sum = 0u;
    for (uint k = 0u; k < uint(K); k++) {
        sum += table[idx[k * p.n + i]];
    }
    outp[i] = sum;
}
