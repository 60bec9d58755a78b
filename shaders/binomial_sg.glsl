// Binomial (Cox-Ross-Rubinstein) pricing of European calls, LANES
// invocations of one subgroup per option (included by binomial_sg*.comp,
// which define LANES). The STEPS + 1 = 256 nodes of an option are spread
// over its lanes, NODES_PER_LANE each, in registers (constant indices after
// unrolling); at every step a lane takes its upper neighbour's lowest node
// by a subgroup shuffle. Every node is folded at every step: at step `s`
// nodes j < s are exact, which is all the next step reads (the top lane's
// highest node, fed by a shuffle from outside the option, is never read).
//
// One work-item per option, as binomial.comp: a work-group of 256
// invocations prices options 256 g .. 256 g + 255, 256 / LANES at a time,
// in LANES rounds. Needs a subgroup size that is a multiple of LANES, full
// subgroups (256 is a multiple of every such size) and relative shuffles.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle_relative : require
#extension GL_EXT_control_flow_attributes : require
#define STEPS 255
#define NODES_PER_LANE ((STEPS + 1) / LANES)
layout(local_size_x = 256) in;
// Per option: spot S, strike K, years to expiry T, volatility sigma.
layout(std430, binding = 0) readonly buffer Opt { vec4 opt[]; };
layout(std430, binding = 1) writeonly buffer Price { float price[]; };
layout(push_constant) uniform Params { uint n; float rate; } p;
// The price of option `o` (valid in lane 0) as the LANES lanes of this
// subgroup that share `o` compute it, `lane` being this one.
float price_one(vec4 o, uint lane) {
    float dt = o.z / float(STEPS);
    float sq = o.w * sqrt(dt);
    float u = exp(sq);
    float d = 1.0 / u;
    float pu = (exp(p.rate * dt) - d) / (u - d);
    float disc = exp(-p.rate * dt);
    float qu = disc * pu;
    float qd = disc - qu;
    float u2 = u * u;
    float s = o.x * exp(-float(STEPS) * sq);
    // The lane's lowest node: s * u2^(lane * NODES_PER_LANE), by squaring.
    float m = u2;
    for (uint e = lane * uint(NODES_PER_LANE); e != 0u; e >>= 1) {
        if ((e & 1u) != 0u) s *= m;
        m *= m;
    }
    float v[NODES_PER_LANE];
    [[unroll]] for (int k = 0; k < NODES_PER_LANE; k++) {
        v[k] = max(s - o.y, 0.0);
        s *= u2;
    }
    for (int step = STEPS; step > 0; step--) {
        float up = subgroupShuffleDown(v[0], 1u);
        [[unroll]] for (int k = 0; k < NODES_PER_LANE - 1; k++) {
            v[k] = qu * v[k + 1] + qd * v[k];
        }
        v[NODES_PER_LANE - 1] = qu * up + qd * v[NODES_PER_LANE - 1];
    }
    return v[0];
}
void main() {
    // Lanes by subgroup, not by gl_LocalInvocationIndex: the lanes that
    // shuffle together must be one subgroup's, whatever the driver's layout.
    uint slot = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
    uint lane = slot % uint(LANES);
    uint first = gl_WorkGroupID.x * 256u + slot / uint(LANES);
    for (uint round = 0u; round < uint(LANES); round++) {
        uint i = first + round * (256u / uint(LANES));
        // Every lane takes part in the shuffles: lanes past the last option
        // price a copy of it and do not store.
        float v0 = price_one(opt[min(i, p.n - 1u)], lane);
        if (lane == 0u && i < p.n) {
            price[i] = v0;
        }
    }
}
