//! The learner against simulated noisy timings (a fixed pseudo-random
//! sequence, so every figure here is deterministic): it converges to the
//! truly best configuration, does not flip on noise, and its total time
//! over many runs stays within a few % of an oracle that always ran the
//! best configuration.

use super::{Mode, Outcomes};

const GPU: Mode = Mode::Alone(1);
const CPU: Mode = Mode::Alone(0);
const ALL: [Mode; 3] = [Mode::Together, CPU, GPU];

/// xorshift64*: uniform numbers in [0, 1).
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A run's noise: a log-normal factor of spread `sigma` (a normal
    /// deviate from twelve uniforms), doubled once in twenty runs (an
    /// interrupt, a page fault storm).
    fn noise(&mut self, sigma: f64) -> f64 {
        let z: f64 = (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0;
        let outlier = if self.uniform() < 0.05 { 2.0 } else { 1.0 };
        (sigma * z).exp() * outlier
    }
}

/// A kernel at one size on one machine: each configuration's true time
/// per run, and what the cost model says.
struct World {
    truth: [(Mode, f64); 3],
    /// The model's prediction of each configuration, as a factor of the
    /// truth (`None`: it cannot tell).
    bias: [(Mode, Option<f64>); 3],
    /// The model's choice after the first run (the first follows nothing
    /// known: co-executing).
    model: Mode,
    /// What the model expects co-executing to gain (`None`: it cannot
    /// tell).
    gain: Option<f64>,
    sigma: f64,
    units: u64,
}

struct Trace {
    /// The configuration of every run.
    modes: Vec<Mode>,
    /// The time of every run.
    times: Vec<f64>,
    /// What the best configuration would have taken on each run (the same
    /// noise).
    oracle: Vec<f64>,
    /// Times the incumbent changed once set.
    switches: usize,
    /// Runs outside the incumbent of their time (explorations).
    explorations: usize,
    incumbent: Option<Mode>,
}

impl World {
    fn true_s(&self, m: Mode) -> f64 {
        self.truth.iter().find(|t| t.0 == m).unwrap().1
    }

    fn best(&self) -> Mode {
        self.truth
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap()
            .0
    }

    /// `n` runs as the engine makes them: the first is not recorded.
    fn run(&self, n: usize, seed: u64) -> Trace {
        // splitmix64 of the seed: unrelated streams for nearby seeds.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let mut rng = Rng((z ^ (z >> 31)) | 1);
        let mut o = Outcomes::default();
        let g = self.units as f64;
        let predict = |m: Mode| {
            let f = self.bias.iter().find(|b| b.0 == m)?.1?;
            Some(self.true_s(m) * f / g)
        };
        let mut t = Trace {
            modes: Vec::new(),
            times: Vec::new(),
            oracle: Vec::new(),
            switches: 0,
            explorations: 0,
            incumbent: None,
        };
        for i in 0..n {
            let model = if i == 0 { Mode::Together } else { self.model };
            let gain = if i == 0 { None } else { self.gain };
            let mode = o.choose(&ALL, (model, gain), &predict, (self.units, &[]));
            if o.incumbent().is_some_and(|m| m != mode) {
                t.explorations += 1;
            }
            let noise = rng.noise(self.sigma);
            let s = self.true_s(mode) * noise;
            if i > 0 {
                o.record(mode, s, self.units);
            }
            if t.incumbent.is_some() && o.incumbent() != t.incumbent {
                t.switches += 1;
            }
            t.incumbent = o.incumbent();
            t.modes.push(mode);
            t.times.push(s);
            t.oracle.push(self.true_s(self.best()) * noise);
        }
        t
    }
}

fn median(v: &[f64]) -> f64 {
    super::median(v).unwrap()
}

/// Worlds where the best configuration is co-executing, a device alone
/// that the model rates slower than it is, and a short run where the
/// other device's fixed cost dominates.
fn worlds() -> Vec<(&'static str, World)> {
    vec![
        (
            "together best, CPU close",
            World {
                truth: [(Mode::Together, 10e-3), (CPU, 11.5e-3), (GPU, 14e-3)],
                bias: [(Mode::Together, None), (CPU, Some(1.0)), (GPU, Some(1.1))],
                model: Mode::Together,
                gain: Some(0.8),
                sigma: 0.03,
                units: 8192,
            },
        ),
        (
            "CPU alone best by 10%, model optimistic about co-executing",
            World {
                truth: [(Mode::Together, 2.0e-3), (CPU, 1.8e-3), (GPU, 3.6e-3)],
                bias: [(Mode::Together, None), (CPU, Some(1.2)), (GPU, Some(0.8))],
                model: Mode::Together,
                gain: Some(0.75),
                sigma: 0.05,
                units: 2048,
            },
        ),
        (
            "short run: the CPU alone, the GPU's package costs 2.5 ms",
            World {
                truth: [(Mode::Together, 380e-6), (CPU, 170e-6), (GPU, 2.5e-3)],
                bias: [(Mode::Together, None), (CPU, Some(1.1)), (GPU, Some(1.0))],
                model: Mode::Together,
                gain: Some(0.07),
                sigma: 0.15,
                units: 256,
            },
        ),
        (
            "tiny run: the GPU alone, the model wrongly says the CPU",
            World {
                truth: [(Mode::Together, 90e-6), (CPU, 75e-6), (GPU, 67e-6)],
                bias: [(Mode::Together, None), (CPU, Some(1.0)), (GPU, Some(1.4))],
                model: CPU,
                gain: None,
                sigma: 0.1,
                units: 4,
            },
        ),
    ]
}

#[test]
fn converges_to_the_best_and_stays_near_the_oracle() {
    for (name, w) in worlds() {
        for seed in 1..=20 {
            let t = w.run(400, seed);
            assert_eq!(t.incumbent, Some(w.best()), "{name}, seed {seed}");
            let total: f64 = t.times.iter().sum();
            let oracle: f64 = t.oracle.iter().sum();
            // The model misleads by more than 30%: finding the best takes
            // longer.
            let misled = w.bias.iter().any(|b| b.1.is_some_and(|f| f > 1.3));
            let bound = if misled { 1.06 } else { 1.03 };
            assert!(
                total <= bound * oracle,
                "{name}, seed {seed}: {:.4} of the oracle, {:?}",
                total / oracle,
                t.modes
            );
        }
    }
}

/// Two configurations within 1%, runs noisy by 10% and an outlier in
/// twenty: the incumbent hardly moves, and explorations stay rare.
#[test]
fn does_not_flip_on_noise() {
    let w = World {
        truth: [(Mode::Together, 1.0e-3), (CPU, 1.01e-3), (GPU, 3e-3)],
        bias: [(Mode::Together, None), (CPU, Some(0.9)), (GPU, Some(1.0))],
        model: Mode::Together,
        gain: Some(0.3),
        sigma: 0.1,
        units: 4096,
    };
    for seed in 1..=20 {
        let t = w.run(300, seed);
        assert!(t.switches <= 2, "seed {seed}: {} switches", t.switches);
        assert!(
            t.explorations <= 30,
            "seed {seed}: {} explorations",
            t.explorations
        );
        let total: f64 = t.times.iter().sum();
        let oracle: f64 = t.oracle.iter().sum();
        assert!(total <= 1.04 * oracle, "seed {seed}: {}", total / oracle);
    }
}

/// The sweep's measurement: a fresh process, three warm-up runs, then the
/// median of five. Where the model's predictions are within 10% of the
/// truth, explorations that land in the timed runs must not move the
/// median past 2% of the best configuration's. Where the model is wrong by
/// more (it rates the best 20-40% slower), the learner finds the best
/// within its exploration budget: the same measurement after 150 runs.
#[test]
fn a_short_benchmark_lands_on_the_best() {
    for (i, (name, w)) in worlds().into_iter().enumerate() {
        let misled = w.bias.iter().any(|b| b.1.is_some_and(|f| f > 1.1));
        let start = if misled { 150 } else { 3 };
        let mut misses = 0;
        for seed in 1..=50 {
            let t = w.run(start + 5, seed + 100 * i as u64);
            let ratio = median(&t.oracle[start..]) / median(&t.times[start..]);
            if ratio < 0.98 {
                misses += 1;
            }
        }
        assert!(misses <= 3, "{name}: {misses} of 50 below 0.98");
    }
}

/// spmv on the H200: the GPU alone (1.6 ms) is far faster than
/// co-executing (2.7 ms), but the model, fitted to GPU packages slowed by
/// co-running, rates it at 1.07x of the co-executed runs. The allowance at
/// the start (a quarter of a run) pays for trying it as soon as the
/// co-executed runs are confirmed (two samples): from the sixth run on, the
/// GPU runs alone. (Without the allowance, 2% of eight runs pays for
/// nothing: co-executing stays.)
#[test]
fn a_near_tie_the_model_rates_too_slow_is_tried_among_the_first_runs() {
    let w = World {
        truth: [(Mode::Together, 2.7e-3), (CPU, 10e-3), (GPU, 1.6e-3)],
        bias: [
            (Mode::Together, None),
            (CPU, Some(0.9)),
            (GPU, Some(1.07 * 2.7 / 1.6)),
        ],
        model: Mode::Together,
        gain: Some(0.32),
        sigma: 0.05,
        units: 8192,
    };
    let late = (1..=50)
        .filter(|&seed| w.run(8, seed).modes[5..].iter().any(|&m| m != GPU))
        .count();
    assert!(
        late <= 3,
        "{late} of 50 not on the GPU alone from the sixth run"
    );
}

/// spmv on an H200 beside 31 CPU workers (one process of eight): the
/// GPU's packages co-running ran 2.3 times slower than alone, and the model
/// fitted to them put the GPU alone at 1.17x of co-executing (2.45 ms) where
/// it takes 1.5 ms: past what the start allowance pays after co-executing
/// is confirmed (at a chance of 26%). Never run alone and predicted within
/// a quarter of a run, the GPU is tried among the first runs (the third),
/// and from the fifth on it runs alone. The first samples are noisy: a
/// co-executed sample 5% fast leaves the GPU past the quarter, a GPU run
/// interrupted at its one try (once in twenty) looks slow; both wait for
/// the budget or a recheck.
#[test]
fn a_device_alone_the_model_rates_slightly_slower_is_tried_before_confirming() {
    let w = World {
        truth: [(Mode::Together, 2.45e-3), (CPU, 5.7e-3), (GPU, 1.5e-3)],
        bias: [
            (Mode::Together, None),
            (CPU, Some(1.0)),
            (GPU, Some(1.17 * 2.45 / 1.5)),
        ],
        model: Mode::Together,
        gain: Some(0.57),
        sigma: 0.05,
        units: 8192,
    };
    let (mut early, mut settled) = (0, 0);
    for seed in 1..=50 {
        let t = w.run(40, seed);
        let alone = |r: &[Mode]| r.iter().all(|&m| m == GPU);
        early += usize::from(t.modes[2] == GPU && alone(&t.modes[4..]));
        settled += usize::from(alone(&t.modes[24..]));
    }
    assert!(early >= 40, "{early} of 50 alone from the fifth run");
    assert!(settled >= 48, "{settled} of 50 alone from the 25th run");
}

/// A histogram kernel on an H100: the GPU alone (0.5 ms) beats
/// co-executing (0.7 ms), but the model's best case for co-executing
/// keeps it co-executing; its prediction of the GPU alone (0.8 of the
/// truth) is far below the co-executed sample. The third run (the second
/// recorded) tries the GPU alone, and from the fourth the GPU runs alone.
#[test]
fn a_device_alone_predicted_far_faster_than_co_executing_is_tried_at_once() {
    let w = World {
        truth: [(Mode::Together, 0.7e-3), (CPU, 6e-3), (GPU, 0.5e-3)],
        bias: [(Mode::Together, None), (CPU, Some(1.0)), (GPU, Some(0.8))],
        model: Mode::Together,
        gain: Some(0.07),
        sigma: 0.05,
        units: 16384,
    };
    let late = (1..=50)
        .filter(|&seed| w.run(8, seed).modes[2..].iter().any(|&m| m != GPU))
        .count();
    assert!(
        late <= 3,
        "{late} of 50 not on the GPU alone from the third run"
    );
}

/// A kernel on the dev machine (lavapipe beside one CPU worker, two cores):
/// co-executing takes 2.4 ms, the worker alone 4.0, lavapipe alone 5.3,
/// runs noisy by 20% and doubled once in twenty; the model, fitted beside
/// the other device, puts the worker alone at 3.0 ms (within a quarter of
/// the first co-executed sample: the near try). Fresh processes measured as
/// the sweep measures them (three warm-ups, the median of five) used to
/// land on the worker alone for three of the five timed runs in 11 of 1000
/// and below 0.9 of co-executing in 108: the worker's lucky pair of
/// samples against co-executing's median of three, and a slow worker
/// sample retried at the model's prediction it contradicted (see
/// `Outcomes::on_equal_footing` and `Outcomes::worth_trying`).
#[test]
fn a_lucky_pair_of_samples_does_not_take_co_executing_out() {
    let w = World {
        truth: [(Mode::Together, 2.4e-3), (CPU, 4.0e-3), (GPU, 5.3e-3)],
        bias: [(Mode::Together, None), (CPU, Some(0.75)), (GPU, Some(1.0))],
        model: Mode::Together,
        gain: Some(0.8),
        sigma: 0.2,
        units: 1000,
    };
    let (mut sat_out, mut low, mut wrong) = (0, 0, 0);
    for seed in 1..=1000 {
        let t = w.run(60, seed);
        let timed = 3..8;
        let alone = t.modes[timed.clone()]
            .iter()
            .filter(|&&m| m != Mode::Together)
            .count();
        sat_out += usize::from(alone >= 3);
        low += usize::from(median(&t.oracle[timed.clone()]) < 0.9 * median(&t.times[timed]));
        wrong += usize::from(t.incumbent != Some(Mode::Together));
    }
    assert!(sat_out <= 9, "{sat_out} of 1000 mostly on one device");
    assert!(low <= 80, "{low} of 1000 below 0.9 of co-executing");
    assert!(wrong <= 2, "{wrong} of 1000 not co-executing after 60 runs");
}
