#version 450
// Black-Scholes European call and put prices, one option per work-item:
// log, sqrt, two exp and a polynomial cumulative normal (Abramowitz-Stegun
// 26.2.17) per option. Same formula and order as the CPU implementation.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Spot { float spot[]; };
layout(std430, binding = 1) readonly buffer Strike { float strike[]; };
layout(std430, binding = 2) readonly buffer Years { float years[]; };
layout(std430, binding = 3) writeonly buffer Call { float call[]; };
layout(std430, binding = 4) writeonly buffer Put { float put[]; };
layout(push_constant) uniform Params { float rate; float vol; uint n; } p;
float cnd(float d) {
    const float A1 = 0.31938153, A2 = -0.356563782, A3 = 1.781477937;
    const float A4 = -1.821255978, A5 = 1.330274429;
    const float RSQRT2PI = 0.39894228040143267793994605993438;
    float k = 1.0 / (1.0 + 0.2316419 * abs(d));
    float c = RSQRT2PI * exp(-0.5 * d * d) * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))));
    return d > 0.0 ? 1.0 - c : c;
}
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    float s = spot[i], x = strike[i], t = years[i];
    float sqrt_t = sqrt(t);
    float d1 = (log(s / x) + (p.rate + 0.5 * p.vol * p.vol) * t) / (p.vol * sqrt_t);
    float d2 = d1 - p.vol * sqrt_t;
    float c1 = cnd(d1), c2 = cnd(d2);
    float disc = x * exp(-p.rate * t);
    call[i] = s * c1 - disc * c2;
    put[i] = disc * (1.0 - c2) - s * (1.0 - c1);
}
