//! One configuration measured: warm-up, timed repetitions, energy over a
//! window, the output checked; and the schedulers of the suite's keys.

use super::energy::EnergyMeter;
use super::stats::median_of_sorted;
use crate::workloads::Workload;
use crate::{Devices, Engine, Report, Scheduler};
use std::time::Instant;

/// A configuration's measurement: the median repetition's report and time,
/// joules per run, and whether the output verified.
pub(super) struct Measured {
    /// The median of the timed repetitions' times, seconds.
    pub(super) time_s: f64,
    /// The report of the lower-median repetition.
    pub(super) report: Report,
    /// Joules per run (`None`: no counters).
    pub(super) energy_j: Option<f64>,
    /// The last output matched the kernel's reference.
    pub(super) verified: bool,
}

/// Runs `w` once to warm up, then `reps` times; checks the last output.
///
/// Energy is read over the timed repetitions, extended by untimed ones until
/// the window lasts at least `energy_window_s`: NVML's counter advances in
/// steps of tens of milliseconds, so one short run alone would read 0 or one
/// whole step. Joules per run = the window's joules / its runs.
pub(super) fn measure(
    w: &mut dyn Workload,
    engine: &Engine,
    scheduler: &Scheduler,
    devices: Devices,
    reps: usize,
    meter: &EnergyMeter,
    energy_window_s: f64,
) -> Result<Measured, String> {
    let run = |w: &mut dyn Workload| {
        w.run(engine, scheduler, devices)
            .map_err(|e| crate::error::chain(&e))
    };
    run(w)?;
    let before = meter.available().then(|| meter.sample());
    let window = Instant::now();
    let mut runs: Vec<Report> = Vec::with_capacity(reps);
    for _ in 0..reps {
        runs.push(run(w)?);
    }
    let energy_j = match before {
        Some(before) => {
            // Untimed runs until the window is long enough.
            let mut n = reps;
            while window.elapsed().as_secs_f64() < energy_window_s {
                run(w)?;
                n += 1;
            }
            meter.joules(&before, &meter.sample()).map(|j| j / n as f64)
        }
        None => None,
    };
    let verified = w.verify().ok;
    runs.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
    let times: Vec<f64> = runs.iter().map(|r| r.time_s).collect();
    let time_s = median_of_sorted(&times);
    // The lower median's report (balance, packages, trace).
    let report = runs.swap_remove((runs.len() - 1) / 2);
    Ok(Measured {
        time_s,
        report,
        energy_j,
        verified,
    })
}

/// The scheduler of a [`SOLO_SCHEDULERS`](super::SOLO_SCHEDULERS) key (its
/// text form), HGuided for anything else.
pub(super) fn solo_scheduler(key: &str) -> Scheduler {
    key.parse().unwrap_or_else(|_| Scheduler::hguided())
}

/// Solo powers `[cpu, gpu]` (the GPU solo run uses every GPU) as hints for
/// a run of the CPU and `gpus` GPUs: the GPUs share the GPU power equally.
pub(super) fn split_gpu_power(powers: &[f64], gpus: usize) -> Vec<f64> {
    match powers {
        [cpu, gpu] if gpus > 1 => std::iter::once(*cpu)
            .chain(std::iter::repeat_n(gpu / gpus as f64, gpus))
            .collect(),
        _ => powers.to_vec(),
    }
}

/// The scheduler of a [`SCHEDULERS`](super::SCHEDULERS) key, with the
/// devices' solo powers as hints where the key takes them (`static`,
/// `hguided:hints`); HGuided without hints for anything else.
pub(super) fn co_scheduler(key: &str, powers: &[f64]) -> Scheduler {
    match key {
        "dynamic:5" => Scheduler::Dynamic { packages: 5 },
        "dynamic:200" => Scheduler::Dynamic { packages: 200 },
        "static" => Scheduler::Static {
            powers: Some(powers.to_vec()),
        },
        "hguided:hints" => Scheduler::HGuided {
            powers: Some(powers.to_vec()),
            k: crate::DEFAULT_K,
            min_package: 1,
        },
        _ => Scheduler::hguided(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_keys_map_to_their_schedulers() {
        assert_eq!(solo_scheduler("static"), Scheduler::Static { powers: None });
        assert_eq!(
            solo_scheduler("dynamic:200"),
            Scheduler::Dynamic { packages: 200 }
        );
        assert_eq!(solo_scheduler("hguided"), Scheduler::hguided());
        assert_eq!(solo_scheduler("anything"), Scheduler::hguided());
        let p = [1.0, 3.0];
        assert_eq!(
            co_scheduler("dynamic:5", &p),
            Scheduler::Dynamic { packages: 5 }
        );
        assert_eq!(co_scheduler("hguided:nohints", &p), Scheduler::hguided());
        assert_eq!(
            co_scheduler("static", &p),
            Scheduler::Static {
                powers: Some(p.to_vec())
            }
        );
        assert!(matches!(
            co_scheduler("hguided:hints", &p),
            Scheduler::HGuided { powers: Some(ref q), min_package: 1, .. } if q == &p
        ));
    }

    #[test]
    fn the_gpu_power_is_shared_by_the_gpus() {
        assert_eq!(split_gpu_power(&[1.0, 4.0], 1), [1.0, 4.0]);
        assert_eq!(split_gpu_power(&[1.0, 4.0], 2), [1.0, 2.0, 2.0]);
        assert_eq!(split_gpu_power(&[1.0, 3.0], 3), [1.0, 1.0, 1.0, 1.0]);
    }
}
