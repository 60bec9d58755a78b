//! Shared helpers for the integration tests: engines on whatever Vulkan
//! device exists (lavapipe in CI) with the validation layer on when it is
//! installed, and a clean skip when there is no device.

#![allow(dead_code)]

use coexec::{AllocatorBackend, Engine, EngineOptions, Validation};
use std::sync::{Arc, OnceLock};

/// `rounds` rounds of an LCG and a shift from `i`: the CPU reference of
/// the tests' hash kernels (`h = h * 1664525u + 1013904223u; h ^= h >> 13;`).
pub(crate) fn hash(i: u32, rounds: u32) -> u32 {
    let mut h = i;
    for _ in 0..rounds {
        h = h.wrapping_mul(1664525).wrapping_add(1013904223);
        h ^= h >> 13;
    }
    h
}

/// The GLSL of the hash kernel [`hash`] is the reference of, over a
/// write-only output (`o[i] = hash(i, rounds)` for `i < n`, `n` a push
/// constant; work-groups of 64).
pub(crate) fn hash_glsl(rounds: u32) -> String {
    format!(
        "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) writeonly buffer O {{ uint o[]; }};
layout(push_constant) uniform P {{ uint n; }} p;
void main() {{
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint h = i;
    for (int r = 0; r < {rounds}; r++) {{ h = h * 1664525u + 1013904223u; h ^= h >> 13; }}
    o[i] = h;
}}"
    )
}

/// The hash kernel of `rounds` rounds (see [`hash_glsl`]) named `name`,
/// with its CPU twin (each item of a package written with [`hash`]).
#[cfg(feature = "glsl")]
pub(crate) fn hash_kernel(e: &Engine, name: &str, rounds: u32) -> coexec::Kernel {
    let cpu = Arc::new(
        move |pkg: &coexec::Package, args: &mut coexec::CpuArgs<'_>| {
            for (k, v) in args.output::<u32>(0).iter_mut().enumerate() {
                *v = hash(pkg.items.start as u32 + k as u32, rounds);
            }
        },
    );
    e.kernel_glsl(name, &hash_glsl(rounds), Some(cpu)).unwrap()
}

/// An engine with `workers` CPU workers, or `None` (after printing why) when
/// this machine has no Vulkan device.
pub(crate) fn engine_with(workers: Option<usize>, allocator: AllocatorBackend) -> Option<Engine> {
    engine_from(EngineOptions {
        workers,
        allocator,
        validation: Validation::IfAvailable,
        pipeline_cache_dir: Some(std::env::temp_dir().join("coexec-test-pipeline-cache")),
        profiles: false,
        ..Default::default()
    })
}

/// An engine with `opts`, or `None` (after printing why) when this machine
/// has no Vulkan device.
///
/// Any validation error during a buffer or kernel creation or a run turns
/// that call into `Error::Validation`, so it fails the test.
pub(crate) fn engine_from(opts: EngineOptions) -> Option<Engine> {
    // Profiles only where a test names its own cache directory: what other
    // test runs left on disk must not change what a test sees.
    let opts = EngineOptions {
        validation_errors_fail: true,
        profiles: opts.profiles && opts.pipeline_cache_dir.is_some(),
        ..opts
    };
    match Engine::with_options(opts) {
        Ok(e) => Some(e),
        Err(e @ (coexec::Error::NoDevice(_) | coexec::Error::NoLoader(_))) => {
            eprintln!("skipping: no Vulkan device ({e})");
            None
        }
        Err(e) => panic!("engine creation failed: {e}"),
    }
}

/// A shared default engine (engines are costly to create).
pub(crate) fn engine() -> Option<Engine> {
    static E: OnceLock<Option<Engine>> = OnceLock::new();
    E.get_or_init(|| engine_with(None, AllocatorBackend::default()))
        .clone()
}

/// Fails the test if the validation layer reported any error.
pub(crate) fn assert_validation_clean(e: &Engine) {
    let n = e.validation_errors();
    assert_eq!(n, 0, "validation errors: {:#?}", e.validation_messages());
}

/// GLSL of a kernel that adds 1 to `out[i]` for every work-item `i < n`
/// (1-D) or `out[y * w + x]` (2-D): run once, every element must be 1.
pub(crate) fn count_glsl(local_x: u32, local_y: u32, two_d: bool) -> String {
    let body = if two_d {
        "uvec2 g = gl_GlobalInvocationID.xy; if (g.x < p.w && g.y < p.h) { out_[g.y * p.w + g.x] += 1u; }"
    } else {
        "uint i = gl_GlobalInvocationID.x; if (i < p.n) { out_[i] += 1u; }"
    };
    format!(
        "#version 450\nlayout(local_size_x = {local_x}, local_size_y = {local_y}) in;\n\
         layout(std430, binding = 0) buffer O {{ uint out_[]; }};\n\
         layout(push_constant) uniform P {{ uint n; uint w; uint h; }} p;\n\
         void main() {{ {body} }}"
    )
}

/// The CPU twin of [`count_glsl`].
pub(crate) fn count_cpu() -> Arc<coexec::CpuFn> {
    Arc::new(|_: &coexec::Package, args: &mut coexec::CpuArgs<'_>| {
        for v in args.output::<u32>(0) {
            *v += 1;
        }
    })
}

/// The count kernel ([`count_glsl`], 1-D, work-groups of 64) named
/// `name`, with its CPU twin [`count_cpu`].
#[cfg(feature = "glsl")]
pub(crate) fn count_kernel(e: &Engine, name: &str) -> coexec::Kernel {
    e.kernel_glsl(name, &count_glsl(64, 1, false), Some(count_cpu()))
        .unwrap()
}

/// Runs the 1-D count kernel `k` once over `n` items on every device with
/// `sched` and checks that every item ran once.
pub(crate) fn run_count(
    e: &Engine,
    k: &coexec::Kernel,
    n: u64,
    sched: &coexec::Scheduler,
) -> coexec::Report {
    let mut out = e.buffer::<u32>(n as usize).unwrap();
    let r = e
        .run(
            k,
            coexec::Args::new().output(&mut out).push(&[n as u32, 0, 0]),
            coexec::IndexSpace::D1(n),
            sched,
            coexec::Devices::ALL,
        )
        .unwrap();
    assert!(out.iter().all(|&v| v == 1), "every item exactly once");
    r
}

/// Runs, on the CPU alone with Static, a 1-D kernel of `units` work-groups
/// of 64 whose first half costs `per_unit` of sleep a work-group (the
/// second half nothing); checks that every item ran once and returns the
/// report. With two workers, each claims one half.
pub(crate) fn run_slow_first_half(
    e: &Engine,
    units: u64,
    per_unit: std::time::Duration,
) -> coexec::Report {
    let slow = slow_count_cpu(per_unit, units * 64 / 2);
    let k = e
        .kernel("slow-first-half", None, Some(slow), Some([64, 1, 1]))
        .unwrap();
    let space = coexec::IndexSpace::D1(units * 64);
    let mut out = e.buffer::<u32>(space.items() as usize).unwrap();
    let r = e
        .run(
            &k,
            coexec::Args::new().output(&mut out),
            space,
            &coexec::Scheduler::Static { powers: None },
            coexec::Devices::CPU,
        )
        .unwrap();
    assert!(out.iter().all(|&v| v == 1));
    r
}

/// [`count_cpu`] made slow: packages starting below item `slow_below`
/// sleep `per_group` for each work-group of 64 items they hold.
pub(crate) fn slow_count_cpu(
    per_group: std::time::Duration,
    slow_below: u64,
) -> Arc<coexec::CpuFn> {
    Arc::new(move |p: &coexec::Package, args: &mut coexec::CpuArgs<'_>| {
        if p.items.start < slow_below {
            std::thread::sleep(per_group * (p.len() / 64) as u32);
        }
        for v in args.output::<u32>(0) {
            *v += 1;
        }
    })
}

/// Input data for the tests' kernels: `n` values from a multiplicative hash
/// of the index, offset by `seed`.
pub(crate) fn input(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(seed))
        .collect()
}

/// An engine with `workers` CPU workers and memory placement `memory`
/// (`COEXEC_MEMORY` overrides it), profiles off.
pub(crate) fn engine_placed(memory: coexec::MemoryPlacement, workers: usize) -> Option<Engine> {
    engine_from(EngineOptions {
        workers: Some(workers),
        validation: Validation::IfAvailable,
        pipeline_cache_dir: Some(std::env::temp_dir().join("coexec-test-pipeline-cache")),
        profiles: false,
        memory,
        ..Default::default()
    })
}

/// 2-D, two elements per item: `o[2k] = x[k] ^ y`, `o[2k+1] = x[k] + x`
/// (`k = y * w + x`), `o` writeonly; work-groups of 8x4.
pub(crate) const IMG_GLSL: &str = "#version 450
layout(local_size_x = 8, local_size_y = 4) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer O { uint o[]; };
layout(push_constant) uniform P { uint w; uint h; } p;
void main() {
    uvec2 g = gl_GlobalInvocationID.xy;
    if (g.x >= p.w || g.y >= p.h) return;
    uint k = g.y * p.w + g.x;
    o[2u * k] = x[k] ^ g.y;
    o[2u * k + 1u] = x[k] + g.x;
}";

/// The host reference of [`IMG_GLSL`] over input `x` of width `w`.
pub(crate) fn img_ref(x: &[u32], w: u32) -> Vec<u32> {
    let mut o = vec![0; x.len() * 2];
    for (k, &v) in x.iter().enumerate() {
        let (gx, gy) = (k as u32 % w, k as u32 / w);
        o[2 * k] = v ^ gy;
        o[2 * k + 1] = v.wrapping_add(gx);
    }
    o
}

/// The one profile an engine wrote under the cache directory `dir` (its
/// `profiles/` folder must hold exactly one file).
pub(crate) fn the_profile(dir: &std::path::Path) -> std::path::PathBuf {
    let files: Vec<_> = std::fs::read_dir(dir.join("profiles"))
        .expect("a profile was written")
        .map(|f| f.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

/// The GPU's index among `r`'s devices, if it took part.
pub(crate) fn gpu_index(r: &coexec::Report) -> Option<usize> {
    r.devices
        .iter()
        .position(|d| d.kind == coexec::DeviceKind::Gpu)
}

/// The packages device `dev` of `r` ran: only those it claimed itself
/// (not the parts it stole from CPU workers) where `own_only`.
fn packages_of(
    r: &coexec::Report,
    dev: usize,
    own_only: bool,
) -> impl Iterator<Item = &coexec::PackageRecord> {
    r.packages
        .iter()
        .filter(move |p| p.device == dev && !(own_only && p.stolen))
}

/// The items of every package the GPU ran in `r` (stolen parts included).
pub(crate) fn gpu_items(r: &coexec::Report) -> Vec<std::ops::Range<u64>> {
    gpu_index(r).map_or_else(Vec::new, |g| {
        packages_of(r, g, false).map(|p| p.items.clone()).collect()
    })
}

/// [`gpu_items`] of the packages the GPU claimed itself (not those it
/// stole from CPU workers, which a staged GPU writes to the host copies
/// directly: no download, and its mirror does not hold them).
pub(crate) fn gpu_own_items(r: &coexec::Report) -> Vec<std::ops::Range<u64>> {
    gpu_index(r).map_or_else(Vec::new, |g| {
        packages_of(r, g, true).map(|p| p.items.clone()).collect()
    })
}

/// Bytes the devices of `r` uploaded (staged runs).
pub(crate) fn upload_bytes(r: &coexec::Report) -> u64 {
    r.devices.iter().map(|d| d.transfers.upload_bytes).sum()
}

/// A directory of one test's own under the system's temporary directory
/// (`coexec-TAG-PID`), emptied when made and removed when dropped. Declared
/// before the engines that write into it, it outlives them: an engine
/// writes its pipeline cache and profiles when it drops, and a directory
/// removed before that is made again and left behind.
pub(crate) struct TempDir(std::path::PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("coexec-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;

    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for TempDir {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The work-items of device report `d`'s packages (of report `r`) that it
/// claimed itself: all but those it stole from CPU workers, which a staged
/// GPU writes to the host copies directly (no download).
pub(crate) fn own_items(r: &coexec::Report, d: &coexec::DeviceReport) -> u64 {
    r.devices
        .iter()
        .position(|x| std::ptr::eq(x, d))
        .map_or(0, |dev| {
            packages_of(r, dev, true).map(|p| p.work_items).sum()
        })
}

/// `o[i] = 3i + 1`, in work-groups of 64 (the GPU side of
/// [`costly_fill_kernel`]).
const FILL_GLSL: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) writeonly buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) o[i] = i * 3u + 1u;
}";

/// Work-groups of [`costly_fill_kernel`]'s runs in the tests that use it.
pub(crate) const FILL_UNITS: u64 = 1024;

/// The work-groups of [`costly_fill_kernel`] that are cheap on the CPU.
pub(crate) const FILL_CHEAP: u64 = 64;

/// What each later work-group costs a CPU worker.
pub(crate) const FILL_COST: std::time::Duration = std::time::Duration::from_millis(1);

/// The reference of [`costly_fill_kernel`]: item `i`'s value.
pub(crate) fn fill(i: u64) -> u32 {
    (i as u32).wrapping_mul(3).wrapping_add(1)
}

/// The kernel `o[i] = 3i + 1` (work-groups of 64) named `name`, whose CPU
/// side costs a worker [`FILL_COST`] per work-group past the first
/// [`FILL_CHEAP`]: sized from the cheap ones it measured first, a worker's
/// packages reach the costly ones, and the GPU, done with its own, steals
/// their rest.
#[cfg(feature = "glsl")]
pub(crate) fn costly_fill_kernel(e: &Engine, name: &str) -> coexec::Kernel {
    let cpu = Arc::new(|p: &coexec::Package, a: &mut coexec::CpuArgs<'_>| {
        let o = a.output::<u32>(0);
        for (k, i) in p.items.clone().enumerate() {
            o[k] = fill(i);
        }
        let groups = p.items.start / 64..p.items.end.div_ceil(64);
        for _ in groups.filter(|&g| g >= FILL_CHEAP) {
            std::thread::sleep(FILL_COST);
        }
    });
    e.kernel_glsl(name, FILL_GLSL, Some(cpu)).unwrap()
}

/// A first run (a fresh kernel object named `name`) of
/// [`costly_fill_kernel`] over [`FILL_UNITS`] work-groups on every device
/// under HGuided, its output checked against [`fill`]: the report and the
/// output.
#[cfg(feature = "glsl")]
pub(crate) fn first_costly_fill(e: &Engine, name: &str) -> (coexec::Report, coexec::Buffer<u32>) {
    let n = FILL_UNITS * 64;
    let k = costly_fill_kernel(e, name);
    let mut out = e.buffer_from_slice(&vec![0u32; n as usize]).unwrap();
    let r = e
        .run(
            &k,
            coexec::Args::new().output(&mut out).push(&(n as u32)),
            coexec::IndexSpace::D1(n),
            &coexec::Scheduler::hguided(),
            coexec::Devices::ALL,
        )
        .unwrap();
    for (i, &v) in out.iter().enumerate() {
        assert_eq!(v, fill(i as u64), "{name}, item {i}");
    }
    (r, out)
}

/// Runs `attempt` until it returns `Ok`, at most `attempts` times, and
/// panics with its last `Err` after that: for a test whose premise (which
/// device claims first, whether a worker started in time) a loaded
/// machine can break in one run without the behaviour under test being
/// wrong. Each attempt still asserts what must hold of every run.
pub(crate) fn retried(attempts: usize, mut attempt: impl FnMut() -> Result<(), String>) {
    let mut last = String::new();
    for _ in 0..attempts {
        match attempt() {
            Ok(()) => return,
            Err(why) => last = why,
        }
    }
    panic!("{attempts} attempts: {last}");
}
