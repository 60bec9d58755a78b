//! What HGuided minimizes: time (the default) or the energy-delay product,
//! and the choice of devices for the latter.

use crate::vk::DeviceType;

/// What a run's device choice minimizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Objective {
    /// Wall time: every device that shortens the run takes part.
    #[default]
    Time,
    /// Energy-delay product (joules x seconds): under HGuided, a device
    /// whose speed-up costs more energy than it saves sits the run out
    /// (see [`edp_choice`]).
    Edp,
}

impl std::str::FromStr for Objective {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "time" => Ok(Objective::Time),
            "edp" => Ok(Objective::Edp),
            other => Err(format!("{other:?} is not time or edp")),
        }
    }
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Objective::Time => "time",
            Objective::Edp => "edp",
        })
    }
}

/// A device's power draw, in watts, while it runs packages and while it
/// waits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DevicePower {
    /// Watts while busy.
    pub active_w: f64,
    /// Watts while idle (the run goes on without it).
    pub idle_w: f64,
}

impl DevicePower {
    /// The model for CPU workers where nothing was measured: 5 W per busy
    /// worker, 1 W per idle one (a server core's order of magnitude; only
    /// the ratios between devices matter to the choice).
    pub fn model_cpu(workers: usize) -> DevicePower {
        let n = workers.max(1) as f64;
        DevicePower {
            active_w: 5.0 * n,
            idle_w: 1.0 * n,
        }
    }

    /// The model for a GPU where nothing was measured: discrete 250 W busy,
    /// 50 W idle; integrated 15 W / 1 W; a CPU implementation 5 W / 1 W per
    /// core of its share (`cpu_cores`); others as integrated.
    pub fn model_gpu(kind: DeviceType, cpu_cores: usize) -> DevicePower {
        match kind {
            DeviceType::Discrete => DevicePower {
                active_w: 250.0,
                idle_w: 50.0,
            },
            DeviceType::Cpu => DevicePower::model_cpu(cpu_cores),
            _ => DevicePower {
                active_w: 15.0,
                idle_w: 1.0,
            },
        }
    }

    /// This model with its busy power replaced by `measured` watts (from
    /// the device's energy counter over its last run), where that is a
    /// usable figure; the idle power stays the model's, at most `measured`.
    pub fn measured(self, measured: Option<f64>) -> DevicePower {
        match measured.filter(|w| w.is_finite() && *w > 0.0) {
            Some(w) => DevicePower {
                active_w: w,
                idle_w: self.idle_w.min(w),
            },
            None => self,
        }
    }
}

/// The devices that sit a run out to minimize its energy-delay product,
/// in the order of `alone_s` and `power` (`true`: sits out); `None` where
/// a device's time is unknown (nothing learned yet: no decision).
///
/// `alone_s[i]` is how long device `i` would take for the whole range
/// alone. Every non-empty set of devices is a candidate: together they take
/// `1 / sum(1 / alone_s)` (perfect balance, HGuided's aim), while its
/// devices draw their busy power and the others their idle power (they
/// stay powered). The set of least EDP wins; among equal ones the larger.
pub fn edp_choice(alone_s: &[Option<f64>], power: &[DevicePower]) -> Option<Vec<bool>> {
    let n = alone_s.len();
    if n == 0 || n != power.len() || n > 16 {
        return None;
    }
    let t: Vec<f64> = alone_s
        .iter()
        .map(|t| t.filter(|t| t.is_finite() && *t > 0.0))
        .collect::<Option<_>>()?;
    let edp_of = |set: u32| {
        let rate: f64 = (0..n)
            .filter(|i| set & (1 << i) != 0)
            .map(|i| 1.0 / t[i])
            .sum();
        let time = 1.0 / rate;
        let watts: f64 = (0..n)
            .map(|i| {
                if set & (1 << i) != 0 {
                    power[i].active_w
                } else {
                    power[i].idle_w
                }
            })
            .sum();
        watts * time * time
    };
    let best = (1u32..(1 << n))
        .map(|set| (edp_of(set), set))
        .min_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then(b.1.count_ones().cmp(&a.1.count_ones()))
        })?
        .1;
    Some((0..n).map(|i| best & (1 << i) == 0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn w(active_w: f64, idle_w: f64) -> DevicePower {
        DevicePower { active_w, idle_w }
    }

    /// A GPU 10x faster than the CPU at 300 W against the CPU's 100 W:
    /// time wants both (10 % faster), EDP leaves the CPU out (its 100 W for
    /// a 9 % shorter run costs more than it saves).
    #[test]
    fn a_slow_hungry_device_is_left_out() {
        let sit = edp_choice(&[Some(10.0), Some(1.0)], &[w(100.0, 20.0), w(300.0, 50.0)]);
        assert_eq!(sit, Some(vec![true, false]));
    }

    /// Two equal devices: together halves the time for the same energy.
    #[test]
    fn equal_devices_run_together() {
        let sit = edp_choice(&[Some(2.0), Some(2.0)], &[w(50.0, 10.0), w(50.0, 10.0)]);
        assert_eq!(sit, Some(vec![false, false]));
    }

    /// A frugal slow device still pays where the fast one idles hungrily:
    /// the discrete GPU's 50 W idle makes every second count.
    #[test]
    fn a_hungry_idle_device_favours_the_faster_set() {
        // CPU alone: 4 s at 20 + 50 W; GPU alone 1 s at 250 + 5 W;
        // together 0.8 s at 270 W: EDP 172.8 against 255 and 1120.
        let sit = edp_choice(&[Some(4.0), Some(1.0)], &[w(20.0, 5.0), w(250.0, 50.0)]);
        assert_eq!(sit, Some(vec![false, false]));
    }

    /// Unknown or unusable times give no decision.
    #[test]
    fn unknown_times_decide_nothing() {
        assert_eq!(edp_choice(&[None, Some(1.0)], &[w(1.0, 1.0); 2]), None);
        assert_eq!(
            edp_choice(&[Some(f64::NAN), Some(1.0)], &[w(1.0, 1.0); 2]),
            None
        );
        assert_eq!(edp_choice(&[Some(1.0)], &[w(1.0, 1.0); 2]), None);
        assert_eq!(edp_choice(&[], &[]), None);
    }

    #[test]
    fn models_and_measurements() {
        assert_eq!(DevicePower::model_cpu(4), w(20.0, 4.0));
        assert_eq!(
            DevicePower::model_gpu(DeviceType::Discrete, 0),
            w(250.0, 50.0)
        );
        assert_eq!(DevicePower::model_gpu(DeviceType::Cpu, 2), w(10.0, 2.0));
        assert_eq!(DevicePower::model_cpu(4).measured(Some(3.0)), w(3.0, 3.0));
        assert_eq!(
            DevicePower::model_cpu(4).measured(Some(f64::NAN)),
            w(20.0, 4.0)
        );
        assert_eq!("edp".parse(), Ok(Objective::Edp));
        assert_eq!("time".parse(), Ok(Objective::Time));
        assert!("energy".parse::<Objective>().is_err());
    }
}
