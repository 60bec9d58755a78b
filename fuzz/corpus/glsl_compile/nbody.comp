#version 450
// One time step of an all-pairs n-body simulation with softened gravity:
//   a_i = sum_j m_j (p_j - p_i) / (|p_j - p_i|^2 + eps2)^(3/2)
//   v_i' = v_i + a_i dt,  p_i' = p_i + v_i' dt
// One work-item per body; positions are staged through shared memory in
// tiles of 128 bodies, summed in j order. On lavapipe n is limited to about
// 250000 bodies (its limit of 65535 loop iterations per invocation).
#define T 128
layout(local_size_x = T) in;
layout(std430, binding = 0) readonly buffer Pos { vec4 pos[]; };   // xyz, mass
layout(std430, binding = 1) readonly buffer Vel { vec4 vel[]; };   // xyz, 0
layout(std430, binding = 2) writeonly buffer NPos { vec4 npos[]; };
layout(std430, binding = 3) writeonly buffer NVel { vec4 nvel[]; };
layout(push_constant) uniform Params { uint n; float dt; float eps2; } p;
shared vec4 tile[T];
vec3 pull(vec4 pj, vec3 pi) {
    vec3 d = pj.xyz - pi;
    float r2 = d.x * d.x + d.y * d.y + d.z * d.z + p.eps2;
    float inv = inversesqrt(r2);
    return (pj.w * inv * inv * inv) * d;
}
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint lid = gl_LocalInvocationIndex;
    bool live = i < p.n;
    vec4 pi = live ? pos[i] : vec4(0.0);
    vec3 acc = vec3(0.0);
    for (uint t = 0u; t < p.n; t += uint(T)) {
        uint j = t + lid;
        // Past the last body: mass 0, which adds exact zeros.
        tile[lid] = j < p.n ? pos[j] : vec4(0.0);
        barrier();
        // Unrolled by 4: lavapipe (llvmpipe) stops any invocation after
        // 65535 loop iterations in total.
        for (uint k = 0u; k < uint(T); k += 4u) {
            acc += pull(tile[k], pi.xyz);
            acc += pull(tile[k + 1u], pi.xyz);
            acc += pull(tile[k + 2u], pi.xyz);
            acc += pull(tile[k + 3u], pi.xyz);
        }
        barrier();
    }
    if (live) {
        vec3 v = vel[i].xyz + acc * p.dt;
        nvel[i] = vec4(v, 0.0);
        npos[i] = vec4(pi.xyz + v * p.dt, pi.w);
    }
}
