//! Distributed runs on several ranks. Each test starts itself again under
//! `mpirun` (on this machine, `--oversubscribe`) and passes only if every
//! rank exits 0; inside `mpirun` (COEXEC_MPI_CHILD set) it is the MPI
//! program, and rank 0 checks the results.

use coexec::{Args, Devices, Engine, EngineOptions, Package, Scheduler};
use coexec_mpi::mpi::collective::SystemOperation;
use coexec_mpi::mpi::topology::SimpleCommunicator;
use coexec_mpi::mpi::traits::*;
use coexec_mpi::{DistOptions, DistSpace, Error, Pieces};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// Runs test `name` on `ranks` ranks: `body` inside `mpirun`, else starts
/// `mpirun` on this test binary with the test's exact name.
fn on_ranks(name: &str, ranks: u32, body: fn(&SimpleCommunicator)) {
    let (ok, text) = mpirun(name, ranks, body);
    if std::env::var_os("COEXEC_MPI_CHILD").is_some() {
        return;
    }
    assert!(ok, "mpirun -n {ranks} {name} failed:\n{text}");
    // Each rank's harness ran exactly this test.
    assert_eq!(text.matches("1 passed").count(), ranks as usize, "{text}");
}

/// Runs `body` on `ranks` ranks (see [`on_ranks`]); in the parent, whether
/// `mpirun` exited 0 and what it printed. A rank whose `body` panics
/// aborts the job (`MPI_Abort`), so that no other rank waits for it.
fn mpirun(name: &str, ranks: u32, body: fn(&SimpleCommunicator)) -> (bool, String) {
    if std::env::var_os("COEXEC_MPI_CHILD").is_some() {
        let universe = coexec_mpi::initialize().expect("MPI initialized once per process");
        let world = universe.world();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&world)));
        if r.is_err() {
            world.abort(1);
        }
        return (true, String::new());
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new("mpirun")
        .args([
            "-n",
            &ranks.to_string(),
            "--oversubscribe",
            "--timeout",
            "300",
        ])
        .arg(exe)
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env("COEXEC_MPI_CHILD", "1")
        // Open MPI refuses to start as root without these (CI runs as root).
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun (Open MPI's openmpi-bin) must be installed");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Counts each rank's visits of every item, adds them up at rank 0 and
/// checks each item was visited exactly once, and that the gathered
/// pieces are the items' own indices.
fn exactly_once(
    world: &SimpleCommunicator,
    space: DistSpace,
    options: DistOptions,
    pause: Duration,
) {
    let total = space.items();
    let mut visits = vec![0u32; total as usize];
    let mut pieces = Pieces::<u64>::new(1).unwrap();
    let report = coexec_mpi::run(world, space, &options, |claim| {
        for i in claim.items.clone() {
            visits[i as usize] += 1;
        }
        let ids: Vec<u64> = claim.items.clone().collect();
        pieces.push(claim.items.clone(), &ids).unwrap();
        // Some work, so that the ranks interleave.
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(report.items, pieces.data().len() as u64);
    let root = world.process_at_rank(0);
    let image = pieces.gather(world, 0, total).unwrap();
    if world.rank() == 0 {
        let mut sum = vec![0u32; visits.len()];
        root.reduce_into_root(&visits[..], &mut sum[..], SystemOperation::sum());
        let bad: Vec<usize> = (0..sum.len()).filter(|&i| sum[i] != 1).collect();
        assert!(bad.is_empty(), "items not visited exactly once: {bad:?}");
        let image = image.expect("the root gets the gathered result");
        assert!(image.iter().enumerate().all(|(i, v)| *v == i as u64));
    } else {
        root.reduce_into(&visits[..], SystemOperation::sum());
        assert!(image.is_none());
    }
    eprintln!("rank {}: {report:?}", world.rank());
}

#[test]
fn every_item_exactly_once_on_three_ranks_1d() {
    on_ranks("every_item_exactly_once_on_three_ranks_1d", 3, |w| {
        let space = DistSpace::D1 {
            items: 10_007,
            grain: 7,
        };
        exactly_once(
            w,
            space,
            DistOptions {
                k: 4.0,
                min_units: 2,
            },
            Duration::from_micros(200),
        );
    });
}

#[test]
fn every_row_exactly_once_on_two_ranks_2d() {
    on_ranks("every_row_exactly_once_on_two_ranks_2d", 2, |w| {
        let space = DistSpace::D2 {
            width: 33,
            height: 101,
            rows: 3,
        };
        exactly_once(w, space, DistOptions::default(), Duration::from_micros(200));
    });
}

#[test]
fn one_unit_claims_racing_on_three_ranks_stay_exactly_once() {
    on_ranks(
        "one_unit_claims_racing_on_three_ranks_stay_exactly_once",
        3,
        |w| {
            let space = DistSpace::D1 {
                items: 20_000,
                grain: 1,
            };
            let options = DistOptions {
                k: 1e12,
                min_units: 1,
            };
            exactly_once(w, space, options, Duration::ZERO);
        },
    );
}

#[test]
fn a_failing_rank_fails_every_rank_without_a_hang() {
    on_ranks("a_failing_rank_fails_every_rank_without_a_hang", 3, |w| {
        let space = DistSpace::D1 {
            items: 600,
            grain: 1,
        };
        // One-unit packages of 2 ms: 0.4 s per rank, so rank 1 claims.
        let options = DistOptions {
            k: 1e12,
            min_units: 1,
        };
        let me = w.rank();
        let got = coexec_mpi::run(w, space, &options, |claim| {
            std::thread::sleep(Duration::from_millis(2));
            if me == 1 {
                return Err(coexec::Error::Interface(format!(
                    "refused {:?}",
                    claim.units
                )));
            }
            Ok(())
        });
        match (me, got) {
            (1, Err(Error::Local { .. })) => {}
            (_, Err(Error::PeerFailed { failed: 1 })) if me != 1 => {}
            (_, other) => panic!("rank {me}: {other:?}"),
        }
        // The window was freed on every rank: a second run works.
        let again = coexec_mpi::run(w, space, &DistOptions::default(), |_| Ok(()));
        assert!(again.is_ok(), "{again:?}");
    });
}

#[test]
fn two_failing_ranks_are_counted_on_every_rank() {
    on_ranks("two_failing_ranks_are_counted_on_every_rank", 3, |w| {
        let space = DistSpace::D1 {
            items: 600,
            grain: 1,
        };
        let options = DistOptions {
            k: 1e12,
            min_units: 1,
        };
        let me = w.rank();
        let got = coexec_mpi::run(w, space, &options, |_| {
            std::thread::sleep(Duration::from_millis(2));
            if me > 0 {
                return Err(coexec::Error::Interface("refused".into()));
            }
            Ok(())
        });
        match (me, got) {
            (0, Err(Error::PeerFailed { failed: 2 })) => {}
            (1 | 2, Err(Error::Local { .. })) => {}
            (_, other) => panic!("rank {me}: {other:?}"),
        }
    });
}

#[test]
fn a_dying_rank_aborts_the_whole_job() {
    let name = "a_dying_rank_aborts_the_whole_job";
    let (ok, text) = mpirun(name, 3, |w| {
        let space = DistSpace::D1 {
            items: 600,
            grain: 1,
        };
        let options = DistOptions {
            k: 1e12,
            min_units: 1,
        };
        let me = w.rank();
        let _ = coexec_mpi::run(w, space, &options, |_| {
            std::thread::sleep(Duration::from_millis(2));
            if me == 2 {
                // Dies as a killed process would: no unwinding, no MPI call.
                std::process::abort();
            }
            Ok(())
        });
    });
    if std::env::var_os("COEXEC_MPI_CHILD").is_none() {
        // MPI's fault model: mpirun ends every rank and fails the job.
        assert!(!ok, "the job survived a dead rank:\n{text}");
        assert!(!text.contains("1 passed"), "{text}");
    }
}

#[test]
fn a_panic_becomes_an_error_on_every_rank() {
    on_ranks("a_panic_becomes_an_error_on_every_rank", 2, |w| {
        let space = DistSpace::D1 { items: 8, grain: 1 };
        let options = DistOptions {
            k: 1e12,
            min_units: 1,
        };
        let got = coexec_mpi::run(w, space, &options, |claim| {
            assert!(claim.units.start != 5, "unit 5 is cursed");
            Ok(())
        });
        assert!(
            matches!(
                got,
                Err(Error::Panicked { .. }) | Err(Error::PeerFailed { failed: 1 })
            ),
            "{got:?}"
        );
    });
}

#[test]
fn bad_input_is_a_typed_error_on_every_rank() {
    on_ranks("bad_input_is_a_typed_error_on_every_rank", 2, |w| {
        let empty = DistSpace::D1 { items: 0, grain: 4 };
        let r = coexec_mpi::run(w, empty, &DistOptions::default(), |_| Ok(()));
        assert!(matches!(r, Err(Error::EmptySpace)), "{r:?}");
        let zero = DistSpace::D2 {
            width: 4,
            height: 4,
            rows: 0,
        };
        let r = coexec_mpi::run(w, zero, &DistOptions::default(), |_| Ok(()));
        assert!(matches!(r, Err(Error::ZeroGrain)), "{r:?}");
        let ok = DistSpace::D1 { items: 4, grain: 1 };
        let bad = DistOptions {
            k: 0.5,
            min_units: 1,
        };
        let r = coexec_mpi::run(w, ok, &bad, |_| Ok(()));
        assert!(matches!(r, Err(Error::Options(_))), "{r:?}");
    });
}

/// Each global item's index, written by the engine's CPU workers and GPU:
/// each claim runs its sub-range of the global space, so ids are global.
const INDEX_GLSL: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) y[i] = i;
}";

#[test]
fn engines_on_two_ranks_write_every_global_index_once() {
    on_ranks(
        "engines_on_two_ranks_write_every_global_index_once",
        2,
        |w| {
            let engine = Engine::with_options(EngineOptions {
                workers: Some(1),
                profiles: false,
                ..Default::default()
            })
            .unwrap();
            let cpu = Arc::new(|pkg: &Package, args: &mut coexec::CpuArgs<'_>| {
                for (k, y) in args.output::<u32>(0).iter_mut().enumerate() {
                    *y = pkg.items.start as u32 + k as u32;
                }
            });
            let kernel = engine.kernel_glsl("index", INDEX_GLSL, Some(cpu)).unwrap();
            let total = 50_000u64;
            let space = DistSpace::for_kernel(&kernel, coexec::IndexSpace::D1(total), 1).unwrap();
            assert_eq!(
                space,
                DistSpace::D1 {
                    items: total,
                    grain: 64
                }
            );
            let mut out = engine.buffer::<u32>(total as usize).unwrap();
            let mut pieces = Pieces::new(1).unwrap();
            let mut claimed = 0u64;
            coexec_mpi::run(w, space, &DistOptions::default(), |claim| {
                let units = space.kernel_units(claim, &kernel)?;
                let args = Args::new().output(&mut out).push(&(total as u32));
                let sched = Scheduler::hguided();
                let r = engine.run_range(
                    &kernel,
                    args,
                    space.index_space(),
                    units,
                    &sched,
                    Devices::ALL,
                )?;
                assert_eq!(r.items, claim.len());
                claimed += r.items;
                let items = claim.items.start as usize..claim.items.end as usize;
                pieces.push(claim.items.clone(), &out[items]).unwrap();
                Ok(())
            })
            .unwrap();
            let mut sum = 0u64;
            w.all_reduce_into(&claimed, &mut sum, SystemOperation::sum());
            assert_eq!(sum, total);
            if let Some(all) = pieces.gather(w, 0, total).unwrap() {
                assert!(all.iter().enumerate().all(|(i, v)| *v == i as u32));
            }
        },
    );
}
