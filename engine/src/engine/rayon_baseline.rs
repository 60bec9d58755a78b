//! The rayon baseline: a kernel's CPU implementation over the whole range
//! through rayon's thread pool, without coexec's queue, schedulers, pinned
//! workers or GPUs. It is what a Rust user would write without coexec
//! (`par_iter` over chunks), the CPU-alone baseline of the benchmarks
//! (`coexec bench --devices cpu --cpu-impl rayon`).

use super::Engine;
use crate::error::{Error, Result};
use crate::exec::cpu::call_failure;
use crate::exec::kernel::{Args, Geometry, Kernel};
use crate::exec::reduce;
use crate::exec::report::{DeviceReport, PackageLog, PackageRecord, Report};
use crate::mem::MemoryPlacement;
use crate::sched::DeviceKind;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Chunks per rayon thread: enough for its work stealing to even out
/// uneven chunks, few enough that a call's overhead does not count.
const CHUNKS_PER_THREAD: u64 = 4;

/// The `n`-th of `chunks` equal parts of `0..units`.
fn chunk(units: u64, chunks: u64, n: u64) -> Range<u64> {
    let at = |i: u64| (u128::from(units) * u128::from(i) / u128::from(chunks)) as u64;
    at(n)..at(n + 1)
}

impl Engine {
    /// While `on`, runs on the CPU alone ([`Devices::CPU`](crate::Devices))
    /// call the kernel's CPU implementation through rayon's global thread
    /// pool over the whole range (4 chunks per rayon thread), instead of
    /// through the engine's queue and pinned workers: a baseline for the
    /// benchmarks. The report has one CPU device, noted `rayon baseline`,
    /// with one package per chunk. A kernel without a CPU implementation
    /// runs as usual.
    pub fn set_rayon_baseline(&self, on: bool) {
        // Relaxed: a setting read at the start of later runs; nothing is
        // handed over through it.
        self.inner.rayon_baseline.store(on, Ordering::Relaxed);
    }

    /// Whether a run on `cpu` alone takes the rayon baseline.
    pub(super) fn takes_rayon_baseline(&self, kernel: &Kernel, cpu_alone: bool) -> bool {
        // Relaxed: as in `set_rayon_baseline`.
        cpu_alone && kernel.cpu.is_some() && self.inner.rayon_baseline.load(Ordering::Relaxed)
    }

    /// Runs `kernel`'s CPU implementation over all of `geometry` through
    /// rayon (see [`set_rayon_baseline`](Self::set_rayon_baseline)), with
    /// the host coherence of a CPU run: the host copies it reads brought up
    /// to date from the GPUs' mirrors first (lazy host coherence), and the
    /// outputs it wrote marked as the host's afterwards (staged).
    pub(super) fn run_rayon(
        &self,
        kernel: &Kernel,
        args: &Args<'_>,
        geometry: &Geometry,
    ) -> Result<Report> {
        crate::exec::staging::sync_for_host(&args.buffers, |_| true)?;
        let report = self.run_rayon_chunks(kernel, args, geometry);
        if self.inner.memory.placement() == MemoryPlacement::Staged {
            // Written (in part, where it failed) on the host alone.
            crate::exec::staging::outputs_written_by_host(&args.buffers, geometry.space);
        }
        report
    }

    /// The chunks of [`run_rayon`](Self::run_rayon) on rayon's pool.
    fn run_rayon_chunks(
        &self,
        kernel: &Kernel,
        args: &Args<'_>,
        geometry: &Geometry,
    ) -> Result<Report> {
        let cpu = kernel.cpu.as_deref().ok_or_else(|| {
            Error::NoDeviceSelected("the rayon baseline needs a CPU implementation".into())
        })?;
        let threads = rayon::current_num_threads().max(1);
        let chunks = (threads as u64 * CHUNKS_PER_THREAD)
            .min(geometry.units)
            .max(1);
        let failed = AtomicBool::new(false);
        let t0 = Instant::now();
        let results: Vec<(PackageRecord, Option<Error>)> = (0..chunks)
            .into_par_iter()
            .filter_map(|n| {
                // Relaxed: a hint to skip work after a failure; the error
                // itself travels in the results.
                if failed.load(Ordering::Relaxed) {
                    return None;
                }
                let units = chunk(geometry.units, chunks, n);
                let lane = rayon::current_thread_index().unwrap_or(0);
                let start = t0.elapsed().as_secs_f64();
                let called = reduce::call(cpu, args, geometry, &units);
                let err = call_failure(called.outcome, called.failure, &units, lane);
                if err.is_some() {
                    failed.store(true, Ordering::Relaxed);
                }
                let record = PackageRecord {
                    device: 0,
                    lane,
                    items: geometry.package(units.clone()).items,
                    work_items: called.items,
                    units,
                    start_s: start,
                    end_s: t0.elapsed().as_secs_f64(),
                    stolen: false,
                };
                Some((record, err))
            })
            .collect();
        let time_s = t0.elapsed().as_secs_f64();
        let mut records = Vec::with_capacity(results.len());
        for (r, err) in results {
            if let Some(e) = err {
                return Err(e);
            }
            records.push(r);
        }
        Ok(self.rayon_report(records, threads, time_s, geometry))
    }

    /// The report of a rayon baseline run.
    fn rayon_report(
        &self,
        records: Vec<PackageRecord>,
        threads: usize,
        time_s: f64,
        geometry: &Geometry,
    ) -> Report {
        let mut d = DeviceReport::sat_out(&self.inner.topology.model, DeviceKind::Cpu, threads);
        d.declined_s = None;
        d.cpu_impl = Some(crate::CpuImpl::Native);
        d.note = Some(format!("rayon baseline ({threads} threads)"));
        d.packages = records.len();
        d.items = records.iter().map(|r| r.work_items).sum();
        d.busy_s = records.iter().map(|r| r.end_s - r.start_s).sum();
        d.first_start_s = records
            .iter()
            .map(|r| r.start_s)
            .fold(f64::INFINITY, f64::min);
        d.finish_s = records.iter().map(|r| r.end_s).fold(0.0, f64::max);
        if records.is_empty() {
            d.first_start_s = 0.0;
        }
        let mut packages = PackageLog::default();
        packages.push_lane(records);
        Report {
            time_s,
            items: geometry.items_in(0..geometry.units),
            units: geometry.units,
            devices: vec![d],
            packages,
            from_profile: false,
            one_time_transfer: false,
            memory: MemoryPlacement::ZeroCopy,
            energy: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::chunk;

    #[test]
    fn chunks_cover_the_range_once() {
        for (units, chunks) in [(10, 3), (1, 1), (7, 7), (1 << 40, 64)] {
            let mut at = 0;
            for n in 0..chunks {
                let c = chunk(units, chunks, n);
                assert_eq!(c.start, at);
                assert!(c.end > c.start, "{units} {chunks} {n}");
                at = c.end;
            }
            assert_eq!(at, units);
        }
    }
}
