//! The claim rate of the RMA counter: every rank claims packages of one
//! unit (HGuided with a huge `k`) and runs nothing, so a run is all
//! claiming. Rank 0 prints claims per second over all ranks.
//!
//! ```text
//! mpirun -n 4 --oversubscribe target/release/examples/claim_rate [units]
//! ```

use coexec_mpi::mpi::traits::*;
use coexec_mpi::{DistOptions, DistSpace};
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let Some(universe) = coexec_mpi::initialize() else {
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let units: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let space = DistSpace::D1 {
        items: units,
        grain: 1,
    };
    let options = DistOptions {
        k: 1e18,
        min_units: 1,
    };
    world.barrier();
    let t = Instant::now();
    let report = match coexec_mpi::run(&world, space, &options, |_| Ok(())) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("claim_rate: {e}");
            return ExitCode::FAILURE;
        }
    };
    world.barrier();
    let secs = t.elapsed().as_secs_f64();
    let mut packages = 0u64;
    let root = world.process_at_rank(0);
    if world.rank() == 0 {
        root.reduce_into_root(
            &report.packages,
            &mut packages,
            coexec_mpi::mpi::collective::SystemOperation::sum(),
        );
        println!(
            "claim rate: {} ranks, {packages} claims in {:.3} s: {:.0} claims/s in all, {:.2} us per claim per rank (rank 0: {} raced)",
            world.size(),
            secs,
            packages as f64 / secs,
            secs * 1e6 * f64::from(world.size()) / packages as f64,
            report.raced
        );
        if packages != units {
            eprintln!("claim_rate: {packages} claims for {units} units");
            return ExitCode::FAILURE;
        }
    } else {
        root.reduce_into(
            &report.packages,
            coexec_mpi::mpi::collective::SystemOperation::sum(),
        );
    }
    ExitCode::SUCCESS
}
