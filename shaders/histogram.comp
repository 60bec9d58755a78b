#version 450
// 256-bin histogram of bytes, privatized: each work-group counts the 32
// bytes (8 words) of each of its 256 items in a shared-memory histogram,
// then writes it to its own slot of the output (groups x 256 counts).
// Item t of group g reads words g * 2048 + j * 256 + t, j = 0..7.
#define WORDS 8
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Data { uint data[]; };  // items * WORDS
layout(std430, binding = 1) writeonly buffer Part { uint part[]; }; // groups * 256
shared uint hist[256];
void main() {
    uint lid = gl_LocalInvocationIndex;
    hist[lid] = 0u;
    barrier();
    uint base = gl_WorkGroupID.x * uint(256 * WORDS) + lid;
    for (uint j = 0u; j < uint(WORDS); j++) {
        uint w = data[base + j * 256u];
        atomicAdd(hist[w & 255u], 1u);
        atomicAdd(hist[(w >> 8) & 255u], 1u);
        atomicAdd(hist[(w >> 16) & 255u], 1u);
        atomicAdd(hist[w >> 24], 1u);
    }
    barrier();
    part[gl_WorkGroupID.x * 256u + lid] = hist[lid];
}
