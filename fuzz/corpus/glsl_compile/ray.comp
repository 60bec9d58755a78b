#version 450
// Whitted-style ray tracer: a ground plane and `count` spheres (shared
// memory), a directional light with one shadow ray per hit, up to DEPTH
// mirror bounces, ss x ss rays per pixel. Output: packed RGBA8 (alpha 255).
// Irregular: sky pixels stop after one scene test, reflective ones bounce.
#define MAXS 64
#define DEPTH 4
#define EPS 1e-3
layout(local_size_x = 16, local_size_y = 16) in;
// Per sphere two vec4: (center, radius), (albedo rgb, reflectivity).
layout(std430, binding = 0) readonly buffer Spheres { vec4 sph[]; };
layout(std430, binding = 1) writeonly buffer Out { uint rgba[]; };
layout(push_constant) uniform Params { uint width; uint height; uint count; uint ss; } p;
shared vec4 s[2 * MAXS];

const vec3 LIGHT = vec3(-0.4082483, 0.8164966, -0.4082483); // normalize(-1, 2, -1)
const vec3 CAM = vec3(0.0, 2.0, -8.0);

float hitSphere(uint k, vec3 o, vec3 d) {
    vec3 oc = o - s[2u * k].xyz;
    float r = s[2u * k].w;
    float b = dot(oc, d);
    float c = dot(oc, oc) - r * r;
    float disc = b * b - c;
    if (disc < 0.0) return -1.0;
    float q = sqrt(disc);
    float t = -b - q;
    if (t > EPS) return t;
    t = -b + q;
    return t > EPS ? t : -1.0;
}

void main() {
    uint cnt = min(p.count, uint(MAXS));
    for (uint k = gl_LocalInvocationIndex; k < 2u * cnt; k += 256u) {
        s[k] = sph[k];
    }
    barrier();
    uint px = gl_GlobalInvocationID.x;
    uint py = gl_GlobalInvocationID.y;
    if (px >= p.width || py >= p.height) return;
    float aspect = float(p.width) / float(p.height);
    vec3 total = vec3(0.0);
    for (uint sy = 0u; sy < p.ss; sy++) {
        for (uint sx = 0u; sx < p.ss; sx++) {
            float u = ((float(px) + (float(sx) + 0.5) / float(p.ss)) / float(p.width) * 2.0 - 1.0) * aspect * 0.6;
            float v = (1.0 - (float(py) + (float(sy) + 0.5) / float(p.ss)) / float(p.height) * 2.0) * 0.6 - 0.15;
            vec3 o = CAM;
            vec3 d = normalize(vec3(u, v, 1.0));
            vec3 col = vec3(0.0);
            float w = 1.0;
            for (int depth = 0; depth < DEPTH; depth++) {
                float tbest = 1e30;
                int hit = -2; // -2: none, -1: plane, k: sphere k
                if (d.y < 0.0) {
                    float tp = -o.y / d.y;
                    if (tp > EPS) { tbest = tp; hit = -1; }
                }
                for (uint k = 0u; k < cnt; k++) {
                    float t = hitSphere(k, o, d);
                    if (t > 0.0 && t < tbest) { tbest = t; hit = int(k); }
                }
                if (hit == -2) {
                    float f = 0.5 * (d.y + 1.0);
                    col += w * mix(vec3(1.0), vec3(0.5, 0.7, 1.0), f);
                    break;
                }
                vec3 hp = o + tbest * d;
                vec3 n;
                vec3 alb;
                float refl;
                if (hit == -1) {
                    n = vec3(0.0, 1.0, 0.0);
                    alb = vec3(0.6, 0.6, 0.55);
                    refl = 0.25;
                } else {
                    vec4 cr = s[2u * uint(hit)];
                    vec4 m = s[2u * uint(hit) + 1u];
                    n = (hp - cr.xyz) / cr.w;
                    alb = m.xyz;
                    refl = m.w;
                }
                vec3 so = hp + EPS * n;
                float lit = 1.0;
                for (uint k = 0u; k < cnt; k++) {
                    if (hitSphere(k, so, LIGHT) > 0.0) { lit = 0.0; break; }
                }
                float diff = max(dot(n, LIGHT), 0.0) * lit;
                col += w * (1.0 - refl) * alb * (0.1 + 0.9 * diff);
                w *= refl;
                if (w < 0.01) break;
                o = so;
                d = reflect(d, n);
            }
            total += col;
        }
    }
    vec3 c = clamp(total / float(p.ss * p.ss), 0.0, 1.0);
    uvec3 b = uvec3(c * 255.0 + 0.5);
    rgba[py * p.width + px] = b.r | (b.g << 8) | (b.b << 16) | (255u << 24);
}
