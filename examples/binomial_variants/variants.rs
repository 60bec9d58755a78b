//! The variants the harness times.

use crate::shaders::{Fold, Shape, Store};
use coexec::shader::OptLevel;

/// `shaders/binomial.comp` as the build compiles it.
pub(crate) const BINOMIAL_COMP: &str = include_str!("../../shaders/binomial.comp");

/// Where a variant's SPIR-V comes from.
pub(crate) enum Source {
    /// The build-time SPIR-V (`coexec::workloads::spirv::BINOMIAL`).
    Build,
    /// GLSL compiled at run time at an optimization level.
    Glsl(String, OptLevel),
}

/// One variant.
pub(crate) struct Variant {
    /// Short name (the output's first column, the dump's file names).
    pub name: String,
    /// What it changes.
    pub what: String,
    /// Its SPIR-V's origin.
    pub source: Source,
    /// Shared memory it declares, bytes (checked against the device's limit).
    pub shared_bytes: u64,
}

/// A variant generated from `shape` at `OptLevel::Performance`.
fn shaped(name: &str, what: &str, shape: Shape) -> Variant {
    Variant {
        name: name.into(),
        what: what.into(),
        shared_bytes: shape.shared_bytes(),
        source: Source::Glsl(shape.glsl(), OptLevel::Performance),
    }
}

/// The base shape: as `shaders/binomial.comp`, at `local` invocations.
fn base(local: u32) -> Shape {
    Shape {
        local,
        store: Store::Private,
        fold: Fold::Plain,
        attr: "",
        spec_steps: false,
        uint_index: false,
    }
}

/// Every variant, in output order.
pub(crate) fn all() -> Vec<Variant> {
    let mut v = vec![Variant {
        name: "build".into(),
        what: "as today: shaders/binomial.comp, build-time SPIR-V (Performance)".into(),
        source: Source::Build,
        shared_bytes: 0,
    }];
    for (name, level) in [
        ("opt-zero", OptLevel::Zero),
        ("opt-size", OptLevel::Size),
        ("opt-perf", OptLevel::Performance),
    ] {
        v.push(Variant {
            name: name.into(),
            what: format!("shaders/binomial.comp compiled at run time, shaderc {level:?}"),
            source: Source::Glsl(BINOMIAL_COMP.into(), level),
            shared_bytes: 0,
        });
    }
    v.push(shaped(
        "tmpl",
        "the harness's template of the same kernel (local 256)",
        base(256),
    ));
    for local in [64, 128, 256, 512] {
        let what = format!("local_size_x = {local}");
        v.push(shaped(&format!("wg{local}"), &what, base(local)));
    }
    for local in [16, 32, 64] {
        let shape = Shape {
            store: Store::Shared,
            ..base(local)
        };
        let what = format!("nodes in shared memory, v[j * {local} + lid], local {local}");
        v.push(shaped(&format!("shared{local}"), &what, shape));
    }
    let carry = Shape {
        fold: Fold::Carry,
        ..base(256)
    };
    v.push(shaped(
        "carry",
        "v[j + 1] carried in a scalar (one load per node)",
        carry,
    ));
    v.push(shaped(
        "carry-wg64",
        "carry, local 64",
        Shape { local: 64, ..carry },
    ));
    let shared_carry = Shape {
        store: Store::Shared,
        ..Shape { local: 32, ..carry }
    };
    v.push(shaped(
        "shared32-carry",
        "shared memory, local 32, carry",
        shared_carry,
    ));
    for (name, attr) in [("unroll", "[[unroll]]"), ("dont-unroll", "[[dont_unroll]]")] {
        let what = format!("{attr} on the inner loop");
        v.push(shaped(name, &what, Shape { attr, ..base(256) }));
    }
    let what = "carry with [[unroll]] on the inner loop";
    v.push(shaped(
        "carry-unroll",
        what,
        Shape {
            attr: "[[unroll]]",
            ..carry
        },
    ));
    let what = "STEPS a specialization constant (default 255), not a #define";
    v.push(shaped(
        "spec-steps",
        what,
        Shape {
            spec_steps: true,
            ..base(256)
        },
    ));
    let what = "uint loop counters and array indices (int today)";
    v.push(shaped(
        "uint-index",
        what,
        Shape {
            uint_index: true,
            ..base(256)
        },
    ));
    v
}
