#version 450
// Binomial (Cox-Ross-Rubinstein) pricing of European calls, one option per
// work-item: a private array of STEPS + 1 node values, filled with the
// payoffs at expiry and folded backwards step by step.
#define STEPS 255
layout(local_size_x = 256) in;
// Per option: spot S, strike K, years to expiry T, volatility sigma.
layout(std430, binding = 0) readonly buffer Opt { vec4 opt[]; };
layout(std430, binding = 1) writeonly buffer Price { float price[]; };
layout(push_constant) uniform Params { uint n; float rate; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    vec4 o = opt[i];
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
    float v[STEPS + 1];
    for (int j = 0; j <= STEPS; j++) {
        v[j] = max(s - o.y, 0.0);
        s *= u2;
    }
    for (int step = STEPS; step > 0; step--) {
        for (int j = 0; j < step; j++) {
            v[j] = qu * v[j + 1] + qd * v[j];
        }
    }
    price[i] = v[0];
}
