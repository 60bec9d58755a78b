#version 450
// Resource allocation: item i distributes exactly B_i units over K projects
// to maximise the total value, by a dynamic program over its own budget
// (O(K * B_i^2 / 2) steps; B_i grows like sqrt(i), so the work per item grows
// linearly along the index range). Project pr's value of x units is
// tab[pr][x] plus a per-item perturbation of the item's seed. Integer: exact.
#define K 16
#define BMAX 127
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Tab { uint tab[]; };      // K x (BMAX + 1)
layout(std430, binding = 1) readonly buffer Items { uvec2 item[]; };  // (budget, seed)
layout(std430, binding = 2) writeonly buffer Best { uint best[]; };
layout(push_constant) uniform Params { uint n; } p;
shared uint st[K * (BMAX + 1)];
uint val(uint pr, uint x, uint seed) {
    return st[pr * uint(BMAX + 1) + x] + (((seed * (2u * pr + 1u)) ^ (x * 0x9E3779B9u)) >> 28);
}
void main() {
    for (uint k = gl_LocalInvocationIndex; k < uint(K * (BMAX + 1)); k += 256u) {
        st[k] = tab[k];
    }
    barrier();
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uvec2 it = item[i];
    int bud = int(min(it.x, uint(BMAX)));
    uint seed = it.y;
    uint dp[BMAX + 1];
    for (int b = 0; b <= bud; b++) {
        dp[b] = val(0u, uint(b), seed);
    }
    for (uint pr = 1u; pr < uint(K); pr++) {
        for (int b = bud; b >= 0; b--) {
            uint m = 0u;
            int x = 0;
            // Unrolled by 4: lavapipe (llvmpipe) stops any invocation after
            // 65535 loop iterations in total, which the plain loop exceeds.
            for (; x + 3 <= b; x += 4) {
                m = max(m, dp[b - x] + val(pr, uint(x), seed));
                m = max(m, dp[b - x - 1] + val(pr, uint(x + 1), seed));
                m = max(m, dp[b - x - 2] + val(pr, uint(x + 2), seed));
                m = max(m, dp[b - x - 3] + val(pr, uint(x + 3), seed));
            }
            for (; x <= b; x++) {
                m = max(m, dp[b - x] + val(pr, uint(x), seed));
            }
            dp[b] = m;
        }
    }
    best[i] = dp[bud];
}
