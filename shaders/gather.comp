#version 450
// Sparse gather: item i sums table[hash(i * K + k) & mask] over K
// pseudo-random indices into a large table (latency-bound random reads).
// hash: Wellons' lowbias32. Integer sums wrap modulo 2^32: exact.
#define K 16u
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Table { uint table[]; };
layout(std430, binding = 1) writeonly buffer Out { uint outp[]; };
layout(push_constant) uniform Params { uint n; uint mask; } p;
uint hash32(uint x) {
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    return x ^ (x >> 16);
}
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint sum = 0u;
    for (uint k = 0u; k < K; k++) {
        sum += table[hash32(i * K + k) & p.mask];
    }
    outp[i] = sum;
}
