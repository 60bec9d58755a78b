#version 450
// Collatz: the steps from a 64-bit start to 1 (x -> x / 2 if even, 3x + 1 if
// odd), one start per work-item, in 64-bit arithmetic on (lo, hi) 32-bit
// halves (no shaderInt64 needed). Starts are log-uniform, so the iteration
// count varies from 0 to about a thousand between neighbours. A step that
// would overflow 64 bits stops the item with OVERFLOW (starts below 2^33
// never do).
#define OVERFLOW 0xFFFFFFFEu
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Starts { uvec2 starts[]; };  // (lo, hi)
layout(std430, binding = 1) writeonly buffer Steps { uint steps[]; };
layout(push_constant) uniform Params { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint lo = starts[i].x, hi = starts[i].y;
    uint count = 0u;
    while (hi != 0u || lo > 1u) {
        if ((lo & 1u) == 0u) {
            lo = (lo >> 1) | (hi << 31);
            hi >>= 1;
        } else {
            // 3x + 1 fits in 64 bits iff x <= (2^64 - 2) / 3 = 0x5555555555555554.
            if (hi > 0x55555555u || (hi == 0x55555555u && lo > 0x55555554u)) {
                count = OVERFLOW;
                break;
            }
            uint mhi, mlo;
            umulExtended(lo, 3u, mhi, mlo);
            uint carry;
            lo = uaddCarry(mlo, 1u, carry);
            hi = hi * 3u + mhi + carry;
        }
        count++;
    }
    steps[i] = count;
}
