#version 450
// Gaussian blur: out(x, y) = sum over a (2R+1)^2 window of w(dx, dy) *
// in(clamp(x + dx), clamp(y + dy)), R = 16 (33 x 33 = 1089 taps), borders
// clamped. Each 16 x 16 work-group stages its (16 + 2R)^2 input tile and the
// weights in shared memory. Summation order: dy ascending, then dx
// ascending (as the CPU implementation).
#define R 16
#define SIDE (2 * R + 1)
#define TILE (16 + 2 * R)
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer Img { float img[]; };
layout(std430, binding = 1) readonly buffer W { float wts[]; };
layout(std430, binding = 2) writeonly buffer Out { float outp[]; };
layout(push_constant) uniform Params { uint width; uint height; } p;
shared float tile[TILE * TILE];
shared float sw[SIDE * SIDE];
void main() {
    uint lid = gl_LocalInvocationIndex;
    ivec2 origin = ivec2(gl_WorkGroupID.xy) * 16 - R;
    ivec2 maxc = ivec2(int(p.width) - 1, int(p.height) - 1);
    for (uint k = lid; k < uint(TILE * TILE); k += 256u) {
        ivec2 c = clamp(origin + ivec2(int(k % uint(TILE)), int(k / uint(TILE))), ivec2(0), maxc);
        tile[k] = img[uint(c.y) * p.width + uint(c.x)];
    }
    for (uint k = lid; k < uint(SIDE * SIDE); k += 256u) {
        sw[k] = wts[k];
    }
    barrier();
    uint x = gl_GlobalInvocationID.x;
    uint y = gl_GlobalInvocationID.y;
    if (x >= p.width || y >= p.height) return;
    uvec2 l = gl_LocalInvocationID.xy;
    float sum = 0.0;
    for (uint dy = 0u; dy < uint(SIDE); dy++) {
        uint trow = (l.y + dy) * uint(TILE) + l.x;
        uint wrow = dy * uint(SIDE);
        for (uint dx = 0u; dx < uint(SIDE); dx++) {
            sum += sw[wrow + dx] * tile[trow + dx];
        }
    }
    outp[y * p.width + x] = sum;
}
