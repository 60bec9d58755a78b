//! The harness's own checks (run by `cargo test`: the example is declared
//! with `test = true`).

use super::*;
use coexec::shader::{compile_glsl, compile_glsl_with, OptLevel};

/// A small problem: `n` options, every one checked.
fn problem(engine: &Engine, n: usize) -> Problem {
    let opts = options(n);
    let params = Params {
        n: n as u32,
        rate: 0.02,
    };
    Problem {
        options: engine.buffer_from_slice(&opts).unwrap(),
        price: engine.buffer::<f32>(n).unwrap(),
        sample: reference(&opts, n, params.rate),
        params,
    }
}

fn cli(args: &[&str]) -> Cli {
    let dir = std::env::temp_dir().join(format!("binomial_variants_test_{}", std::process::id()));
    let dir = dir.display().to_string();
    let mut all = vec!["binomial_variants", "--dump-dir", &dir];
    all.extend_from_slice(args);
    Cli::parse_from(all)
}

#[test]
fn the_template_is_the_shipped_shader() {
    // Same operations in the same order: the optimized modules have the
    // same opcode counts and size as the build's shaders/binomial.comp.
    let tmpl = variants::all()
        .into_iter()
        .find(|v| v.name == "tmpl")
        .unwrap();
    let Source::Glsl(src, _) = &tmpl.source else {
        panic!("tmpl is GLSL")
    };
    let ours = dump::stats(&compile_glsl(src, "tmpl").unwrap());
    let shipped = dump::stats(&compile_glsl(variants::BINOMIAL_COMP, "b").unwrap());
    assert_eq!(format!("{ours:?}"), format!("{shipped:?}"));
}

#[test]
fn every_variant_compiles_with_what_it_claims() {
    for v in variants::all() {
        let Source::Glsl(src, level) = &v.source else {
            continue;
        };
        let s = dump::stats(&compile_glsl_with(src, &v.name, *level).unwrap());
        let shared = v.shared_bytes > 0;
        assert_eq!(s.workgroup_vars, usize::from(shared), "{}", v.name);
        if v.name.contains("unroll") {
            let (on, off) = (s.loops_unroll, s.loops_dont_unroll);
            let want = if v.name.starts_with("dont") {
                (0, 1)
            } else {
                (1, 0)
            };
            assert_eq!((on, off), want, "{}", v.name);
        }
    }
}

#[test]
fn stats_count_known_opcodes() {
    let w = compile_glsl_with(variants::BINOMIAL_COMP, "b", OptLevel::Zero).unwrap();
    let s = dump::stats(&w);
    assert_eq!(s.bytes, w.len() * 4);
    // Three loops, no hints; the node array and the locals are Function
    // variables at level Zero (one per GLSL local), none Workgroup.
    assert_eq!((s.loops, s.loops_unroll, s.loops_dont_unroll), (3, 0, 0));
    assert!(s.function_vars > 10, "{s:?}");
    assert_eq!(s.workgroup_vars, 0);
    assert!(s.loads > 0 && s.stores > 0 && s.ext_insts >= 4, "{s:?}");
}

#[test]
fn every_variant_verifies_on_a_small_problem() {
    let Ok(engine) = Engine::new() else { return }; // no device: skip
    let cli = cli(&["--reps", "1", "--warmup", "0"]);
    let shared = max_shared(&engine);
    let mut p = problem(&engine, 300); // a partial last work-group
    let outcomes: Vec<_> = variants::all()
        .iter()
        .map(|v| measure(&engine, &cli, v, &mut p, shared))
        .collect();
    for o in &outcomes {
        assert!(
            o.status == "ok" || o.status.starts_with("skipped"),
            "{}: {}",
            o.name,
            o.status
        );
        assert!(o.status != "ok" || o.times_ms.len() == 1, "{}", o.name);
    }
    assert!(failures(&outcomes).is_empty());
}

#[test]
fn a_wrong_result_is_a_failure() {
    let Ok(engine) = Engine::new() else { return }; // no device: skip
    let cli = cli(&["--reps", "2", "--warmup", "1"]);
    let mut p = problem(&engine, 64);
    // A reference off by more than the tolerance at one option.
    p.sample[5].1 += 0.5 + 2e-3 * p.sample[5].1.abs();
    let v = &variants::all()[0];
    let o = measure(&engine, &cli, v, &mut p, max_shared(&engine));
    assert_eq!(
        (o.status.as_str(), o.mismatches, o.times_ms.len()),
        ("mismatch", 1, 2)
    );
    assert_eq!(failures(&[o]), ["build"]);
}

#[test]
fn median_and_skips() {
    assert_eq!(median(&[]), None);
    assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    let engine_less = Outcome {
        name: "x".into(),
        what: String::new(),
        status: "skipped: too much shared memory".into(),
        median_ms: None,
        times_ms: vec![],
        checked: 0,
        mismatches: 0,
        spirv: None,
    };
    assert!(failures(&[engine_less]).is_empty());
}
