//! GLSL of the binomial variants: one template (the same operations as
//! `shaders/binomial.comp`) with the parts that vary filled in.

/// Where the node values live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Store {
    /// `float v[STEPS + 1]`, private to the invocation (as today).
    Private,
    /// `shared float sv[(STEPS + 1) * LOCAL]`, node `j` of invocation `l` at
    /// `j * LOCAL + l`: neighbouring invocations hit neighbouring banks.
    Shared,
}

/// How the inner (folding) loop reads the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fold {
    /// `v[j] = qu * v[j + 1] + qd * v[j]`: two loads and a store per node.
    Plain,
    /// `v[j + 1]` carried to the next node in a scalar: one load per node.
    Carry,
}

/// One generated shader.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// `local_size_x`.
    pub local: u32,
    /// Where the nodes live.
    pub store: Store,
    /// The inner loop's form.
    pub fold: Fold,
    /// A control-flow attribute before the inner loop (`"[[unroll]]"`,
    /// `"[[dont_unroll]]"`) or `""`.
    pub attr: &'static str,
    /// `STEPS` as a specialization constant (`constant_id = 0`, default
    /// 255) rather than a `#define`.
    pub spec_steps: bool,
    /// Loop counters (and so array indices) `uint` rather than `int`.
    pub uint_index: bool,
}

impl Shape {
    /// Shared memory the shader declares, bytes.
    pub(crate) fn shared_bytes(&self) -> u64 {
        match self.store {
            Store::Private => 0,
            Store::Shared => 4 * 256 * u64::from(self.local),
        }
    }

    /// The GLSL source.
    pub(crate) fn glsl(&self) -> String {
        let steps = if self.spec_steps {
            "layout(constant_id = 0) const int STEPS = 255;"
        } else {
            "#define STEPS 255"
        };
        let ext = if self.attr.is_empty() {
            ""
        } else {
            "#extension GL_EXT_control_flow_attributes : require\n"
        };
        let (decl, node) = match self.store {
            Store::Private => ("    float v[STEPS + 1];\n".to_string(), "v[{}]"),
            Store::Shared => (
                format!(
                    "    uint lid = gl_LocalInvocationID.x;\n\
                     #define LOCAL {}u\n",
                    self.local
                ),
                "sv[uint({}) * LOCAL + lid]",
            ),
        };
        let shared = match self.store {
            Store::Private => String::new(),
            Store::Shared => format!("shared float sv[(STEPS + 1) * {}];\n", self.local),
        };
        let at = |idx: &str| node.replace("{}", idx);
        let attr = if self.attr.is_empty() {
            String::new()
        } else {
            format!("        {}\n", self.attr)
        };
        let (int, zero) = if self.uint_index {
            ("uint", "0u")
        } else {
            ("int", "0")
        };
        let fold = match self.fold {
            Fold::Plain => format!(
                "{attr}        for ({int} j = {zero}; j < step; j++) {{\n            {vj} = qu * {vj1} + qd * {vj};\n        }}\n",
                vj = at("j"),
                vj1 = at("j + 1"),
            ),
            Fold::Carry => format!(
                "        float lo = {v0};\n{attr}        for ({int} j = {zero}; j < step; j++) {{\n            float hi = {vj1};\n            {vj} = qu * hi + qd * lo;\n            lo = hi;\n        }}\n",
                v0 = at("0"),
                vj = at("j"),
                vj1 = at("j + 1"),
            ),
        };
        format!(
            "#version 450\n{ext}{steps}\nlayout(local_size_x = {local}) in;\n{IO}{shared}void main() {{\n{HEAD}{decl}    for ({int} j = {zero}; j <= {int}(STEPS); j++) {{\n        {vj} = max(s - o.y, 0.0);\n        s *= u2;\n    }}\n    for ({int} step = {int}(STEPS); step > {zero}; step--) {{\n{fold}    }}\n    price[i] = {v0};\n}}\n",
            local = self.local,
            vj = at("j"),
            v0 = at("0"),
        )
    }
}

/// Buffers and push constants, as in `shaders/binomial.comp`.
const IO: &str = "layout(std430, binding = 0) readonly buffer Opt { vec4 opt[]; };
layout(std430, binding = 1) writeonly buffer Price { float price[]; };
layout(push_constant) uniform Params { uint n; float rate; } p;
";

/// The lattice coefficients, as in `shaders/binomial.comp`.
const HEAD: &str = "    uint i = gl_GlobalInvocationID.x;
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
";
