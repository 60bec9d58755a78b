#version 450
// Taylor series per element, evaluated by Horner's rule with `terms` terms
// each (compute bound):
//   lg[i] = ln(1 + x) = sum_{k<terms} (-1)^k x^(k+1) / (k + 1)
//   at[i] = atan(x)   = sum_{k<terms} (-1)^k x^(2k+1) / (2k + 1)
// The coefficient tables (cl, then ca, MAXT each) are staged in shared memory.
#define MAXT 1024
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Coef { float coef[]; };
layout(std430, binding = 2) writeonly buffer Lg { float lg[]; };
layout(std430, binding = 3) writeonly buffer At { float at[]; };
layout(push_constant) uniform Params { uint n; uint terms; } p;
shared float c[2 * MAXT];
void main() {
    for (uint k = gl_LocalInvocationIndex; k < uint(2 * MAXT); k += 256u) {
        c[k] = coef[k];
    }
    barrier();
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint t = clamp(p.terms, 1u, uint(MAXT));
    float v = x[i];
    float y = v * v;
    float l = c[t - 1u];
    float a = c[MAXT + t - 1u];
    for (uint k = t - 1u; k > 0u; k--) {
        l = l * v + c[k - 1u];
        a = a * y + c[MAXT + k - 1u];
    }
    lg[i] = l * v;
    at[i] = a * v;
}
