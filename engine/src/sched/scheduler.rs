//! Scheduling policies, their validation, and their textual form.

use std::fmt;
use std::str::FromStr;

/// Default HGuided divisor `k`.
pub const DEFAULT_K: f64 = 2.0;

/// Kind of a device taking part in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// The host CPU: claimed from by pinned worker threads.
    Cpu,
    /// A GPU: claimed from by its one dispatch loop.
    Gpu,
}

/// A device as the scheduler sees it: its kind and how many claimants
/// (independent claiming loops) it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceSlot {
    /// CPU or GPU.
    pub kind: DeviceKind,
    /// Claimants of this device: `workers` for the CPU, 1 for a GPU. Each
    /// claims with `device power / claimants`.
    pub claimants: usize,
    /// The device's natural package granule, in units (at least 1): for a GPU,
    /// the units that fill every shader core once (one *wave*). A package of
    /// a fraction of a wave costs about as long as a whole wave on a kernel
    /// whose work-groups all take equally long, so HGuided rounds this
    /// device's fresh packages up to whole granules (see
    /// [`Scheduler::HGuided`]). 1 for the CPU and for GPUs whose width is
    /// unknown.
    pub granule: u64,
}

impl DeviceSlot {
    /// The CPU device with `workers` worker threads.
    pub fn cpu(workers: usize) -> Self {
        Self {
            kind: DeviceKind::Cpu,
            claimants: workers,
            granule: 1,
        }
    }

    /// A GPU device (one dispatch loop), granule 1.
    pub fn gpu() -> Self {
        Self {
            kind: DeviceKind::Gpu,
            claimants: 1,
            granule: 1,
        }
    }

    /// This slot with package granule `units` (0 counts as 1).
    pub fn with_granule(self, units: u64) -> Self {
        Self {
            granule: units.max(1),
            ..self
        }
    }
}

/// How a run's units are cut into packages.
///
/// `powers`, when given, are relative device powers (any scale), one per
/// device, finite and `>= 0`, not all zero.
///
/// Textual form ([`FromStr`] / [`Display`](fmt::Display), case-insensitive,
/// whitespace around tokens ignored):
/// `static`, `static:powers=3/1`, `dynamic:64` (or `dynamic:packages=64`),
/// `hguided`, `hguided:k=3,min=4`, `hguided:k=2,min=1,powers=3/1`.
///
/// ```
/// use coexec_engine::Scheduler;
///
/// // HGuided with the CPU given a quarter of the power (CPU first, then GPU).
/// let s: Scheduler = "hguided:k=2,min=1,powers=1/3".parse().unwrap();
/// assert_eq!(
///     s,
///     Scheduler::HGuided { powers: Some(vec![1.0, 3.0]), k: 2.0, min_package: 1 }
/// );
/// // Bad input is a typed error that names the rule broken.
/// let err = "dynamic:0".parse::<Scheduler>().unwrap_err();
/// assert!(err.to_string().contains("at least one package"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Scheduler {
    /// One package per device, proportional to power.
    ///
    /// Without `powers`: the measured powers of the estimator given to
    /// `Plan::new` when it has a measurement for every
    /// device (a later run of the same kernel), else equal power per device.
    /// A device of power 0 gets no share.
    Static {
        /// Relative device powers (hints).
        powers: Option<Vec<f64>>,
    },
    /// `packages` equal packages.
    ///
    /// Package size `ceil(total / packages)` (at least 1); `packages > total`
    /// is fine (size 1).
    Dynamic {
        /// Number of packages, `>= 1`.
        packages: u64,
    },
    /// Guided: size = max(min_package, ceil(G_r * P_i / (k * sum P))) capped
    /// at G_r.
    ///
    /// `G_r` is the fresh work left, `P_i` the claimant's power (its device's
    /// power divided by the device's claimants), `sum P` over devices. A
    /// device of power 0 gets `min_package`-sized packages. Without `powers`
    /// the powers are measured live; see `Plan` for the
    /// exploration rule. On a device with a granule above 1
    /// (`DeviceSlot::granule`, a GPU's wave) the size is then rounded up
    /// to whole granules, still capped at G_r. A run with a single claimant
    /// (one GPU alone) takes all of G_r in one package, after its probe
    /// where it is unmeasured: there is nothing to balance, and every cut
    /// would only add per-package costs.
    HGuided {
        /// Relative device powers (hints).
        powers: Option<Vec<f64>>,
        /// Divisor, finite and `> 0`: larger gives smaller packages.
        k: f64,
        /// Smallest package handed out (the last may be smaller), `>= 1`.
        min_package: u64,
    },
}

/// Why a scheduler, device set or scheduler string was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchedError {
    /// No devices.
    #[error("a run needs at least one device")]
    NoDevices,
    /// A device with zero claimants.
    #[error("device {device} has no claimants; every device needs at least one")]
    NoClaimants {
        /// The device index.
        device: usize,
    },
    /// `Dynamic { packages: 0 }`.
    #[error("dynamic scheduling needs at least one package (got 0)")]
    ZeroPackages,
    /// Not one power per device.
    #[error("power hints must give one value per device: expected {expected}, got {got}")]
    PowersLength {
        /// Number of devices.
        expected: usize,
        /// Number of powers given.
        got: usize,
    },
    /// A power that is negative, NaN or infinite.
    #[error("power hint {index} is {value}; powers must be finite and >= 0")]
    InvalidPower {
        /// Index of the offending power.
        index: usize,
        /// Its value.
        value: f64,
    },
    /// Every power is zero.
    #[error("power hints sum to 0; at least one device needs a positive power")]
    PowersSumZero,
    /// Finite powers whose sum overflows to infinity.
    #[error("power hints sum to infinity; use a smaller scale")]
    PowersSumOverflow,
    /// `k <= 0`, NaN or infinite.
    #[error("hguided k must be finite and > 0 (got {0})")]
    InvalidK(f64),
    /// `min_package == 0`.
    #[error("hguided min_package must be >= 1 (got 0)")]
    ZeroMinPackage,
    /// Malformed scheduler string.
    #[error("cannot parse scheduler: {0}")]
    Parse(String),
}

impl Scheduler {
    /// HGuided with no power hints, `k = 2`, `min_package = 1`.
    pub fn hguided() -> Self {
        Scheduler::HGuided {
            powers: None,
            k: DEFAULT_K,
            min_package: 1,
        }
    }

    /// Checks the parameters and that power hints (if any) fit `devices`.
    pub fn validate(&self, devices: usize) -> Result<(), SchedError> {
        if devices == 0 {
            return Err(SchedError::NoDevices);
        }
        self.validate_values()?;
        match self.powers() {
            Some(p) if p.len() != devices => Err(SchedError::PowersLength {
                expected: devices,
                got: p.len(),
            }),
            _ => Ok(()),
        }
    }

    /// This scheduler for a subset of the devices its power hints were
    /// given for: `keep[i]` says whether device `i` takes part. Hints of a
    /// length other than `keep.len()` are left as they are (validation then
    /// names the mismatch); hints left for one device only, or summing to
    /// zero, are dropped (`None`: with one device they cannot matter, and
    /// the policy's own rule applies).
    pub fn for_devices(&self, keep: &[bool]) -> Scheduler {
        let mut s = self.clone();
        if let Scheduler::Static { powers } | Scheduler::HGuided { powers, .. } = &mut s {
            if let Some(p) = powers.as_ref().filter(|p| p.len() == keep.len()) {
                let kept: Vec<f64> = p
                    .iter()
                    .zip(keep)
                    .filter(|(_, &k)| k)
                    .map(|(&x, _)| x)
                    .collect();
                *powers = (kept.len() > 1 && kept.iter().sum::<f64>() > 0.0).then_some(kept);
            }
        }
        s
    }

    /// The power hints, if any.
    pub fn powers(&self) -> Option<&[f64]> {
        match self {
            Scheduler::Static { powers } | Scheduler::HGuided { powers, .. } => powers.as_deref(),
            Scheduler::Dynamic { .. } => None,
        }
    }

    /// Checks everything that does not depend on the device count.
    fn validate_values(&self) -> Result<(), SchedError> {
        match self {
            Scheduler::Dynamic { packages: 0 } => return Err(SchedError::ZeroPackages),
            Scheduler::HGuided { k, min_package, .. } => {
                if !(k.is_finite() && *k > 0.0) {
                    return Err(SchedError::InvalidK(*k));
                }
                if *min_package == 0 {
                    return Err(SchedError::ZeroMinPackage);
                }
            }
            _ => {}
        }
        if let Some(p) = self.powers() {
            check_powers(p)?;
        }
        Ok(())
    }
}

/// Powers must be finite, `>= 0`, with a positive finite sum.
pub(crate) fn check_powers(powers: &[f64]) -> Result<f64, SchedError> {
    if let Some((index, &value)) = powers
        .iter()
        .enumerate()
        .find(|(_, v)| !(v.is_finite() && **v >= 0.0))
    {
        return Err(SchedError::InvalidPower { index, value });
    }
    let sum: f64 = powers.iter().sum();
    if sum == 0.0 {
        Err(SchedError::PowersSumZero)
    } else if !sum.is_finite() {
        Err(SchedError::PowersSumOverflow)
    } else {
        Ok(sum)
    }
}

fn parse_err(msg: impl Into<String>) -> SchedError {
    SchedError::Parse(msg.into())
}

fn parse_u64(key: &str, v: &str) -> Result<u64, SchedError> {
    v.parse()
        .map_err(|_| parse_err(format!("{key}: expected a non-negative integer, got {v:?}")))
}

fn parse_powers(v: &str) -> Result<Vec<f64>, SchedError> {
    v.split('/')
        .map(|p| {
            let p = p.trim();
            p.parse::<f64>().map_err(|_| {
                parse_err(format!(
                    "powers: expected numbers separated by '/', got {p:?}"
                ))
            })
        })
        .collect()
}

/// Splits `a=1,b=2` into pairs, rejecting empty and duplicate keys.
fn params(s: &str) -> Result<Vec<(String, &str)>, SchedError> {
    let mut out: Vec<(String, &str)> = vec![];
    for item in s.split(',') {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| parse_err(format!("expected key=value, got {:?}", item.trim())))?;
        let k = k.trim().to_ascii_lowercase();
        if out.iter().any(|(seen, _)| *seen == k) {
            return Err(parse_err(format!("parameter {k:?} given twice")));
        }
        out.push((k, v.trim()));
    }
    Ok(out)
}

impl FromStr for Scheduler {
    type Err = SchedError;

    /// Parses the textual form (see [`Scheduler`]) and checks every parameter
    /// that does not depend on the device count; the powers' length is
    /// checked by [`validate`](Scheduler::validate).
    fn from_str(s: &str) -> Result<Self, SchedError> {
        let (name, args) = match s.split_once(':') {
            Some((n, a)) => (n.trim().to_ascii_lowercase(), Some(a.trim())),
            None => (s.trim().to_ascii_lowercase(), None),
        };
        let sched = match name.as_str() {
            "static" => {
                let mut powers = None;
                for (k, v) in args.map(params).transpose()?.unwrap_or_default() {
                    match k.as_str() {
                        "powers" => powers = Some(parse_powers(v)?),
                        _ => {
                            return Err(parse_err(format!(
                                "static: unknown parameter {k:?} (known: powers)"
                            )))
                        }
                    }
                }
                Scheduler::Static { powers }
            }
            "dynamic" => {
                let a = args
                    .ok_or_else(|| parse_err("dynamic needs a package count, e.g. dynamic:64"))?;
                let packages = match a.split_once('=') {
                    None => parse_u64("dynamic", a)?,
                    Some(_) => {
                        let mut packages = None;
                        for (k, v) in params(a)? {
                            match k.as_str() {
                                "packages" => packages = Some(parse_u64("packages", v)?),
                                _ => {
                                    return Err(parse_err(format!(
                                        "dynamic: unknown parameter {k:?} (known: packages)"
                                    )))
                                }
                            }
                        }
                        packages.ok_or_else(|| parse_err("dynamic needs packages=M"))?
                    }
                };
                Scheduler::Dynamic { packages }
            }
            "hguided" => {
                let (mut powers, mut k, mut min_package) = (None, DEFAULT_K, 1);
                for (key, v) in args.map(params).transpose()?.unwrap_or_default() {
                    match key.as_str() {
                        "k" => {
                            k = v.parse().map_err(|_| {
                                parse_err(format!("k: expected a number, got {v:?}"))
                            })?
                        }
                        "min" | "min_package" => min_package = parse_u64("min", v)?,
                        "powers" => powers = Some(parse_powers(v)?),
                        _ => {
                            return Err(parse_err(format!(
                                "hguided: unknown parameter {key:?} (known: k, min, powers)"
                            )))
                        }
                    }
                }
                Scheduler::HGuided {
                    powers,
                    k,
                    min_package,
                }
            }
            other => {
                return Err(parse_err(format!(
                    "unknown scheduler {other:?} (expected static, dynamic:M or hguided)"
                )))
            }
        };
        sched.validate_values()?;
        Ok(sched)
    }
}

struct Powers<'a>(&'a [f64]);

impl fmt::Display for Powers<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// Writes the canonical textual form, which [`FromStr`] parses back to an
/// equal value.
impl fmt::Display for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scheduler::Static { powers: None } => f.write_str("static"),
            Scheduler::Static { powers: Some(p) } => write!(f, "static:powers={}", Powers(p)),
            Scheduler::Dynamic { packages } => write!(f, "dynamic:{packages}"),
            Scheduler::HGuided {
                powers,
                k,
                min_package,
            } => {
                write!(f, "hguided:k={k},min={min_package}")?;
                if let Some(p) = powers {
                    write!(f, ",powers={}", Powers(p))?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn hg(powers: Option<Vec<f64>>, k: f64, min_package: u64) -> Scheduler {
        Scheduler::HGuided {
            powers,
            k,
            min_package,
        }
    }

    #[test]
    fn parses_every_form() {
        assert_eq!("static".parse(), Ok(Scheduler::Static { powers: None }));
        assert_eq!(
            " Static : powers = 3/1 ".parse(),
            Ok(Scheduler::Static {
                powers: Some(vec![3.0, 1.0])
            })
        );
        assert_eq!("dynamic:8".parse(), Ok(Scheduler::Dynamic { packages: 8 }));
        assert_eq!(
            "dynamic:packages=8".parse(),
            Ok(Scheduler::Dynamic { packages: 8 })
        );
        assert_eq!("hguided".parse(), Ok(Scheduler::hguided()));
        assert_eq!("HGUIDED:k=3,min=4".parse(), Ok(hg(None, 3.0, 4)));
        assert_eq!(
            "hguided:min_package=2,powers=0.5/0/2,k=1.5".parse(),
            Ok(hg(Some(vec![0.5, 0.0, 2.0]), 1.5, 2))
        );
    }

    #[test]
    fn parse_errors_are_typed() {
        let e = |s: &str| s.parse::<Scheduler>().unwrap_err();
        assert_eq!(e("dynamic:0"), SchedError::ZeroPackages);
        assert_eq!(e("hguided:k=0"), SchedError::InvalidK(0.0));
        assert_eq!(e("hguided:k=-1"), SchedError::InvalidK(-1.0));
        assert!(matches!(e("hguided:k=NaN"), SchedError::InvalidK(k) if k.is_nan()));
        assert_eq!(e("hguided:k=inf"), SchedError::InvalidK(f64::INFINITY));
        assert_eq!(e("hguided:min=0"), SchedError::ZeroMinPackage);
        assert_eq!(e("static:powers=0/0"), SchedError::PowersSumZero);
        assert_eq!(
            e("static:powers=1/-2"),
            SchedError::InvalidPower {
                index: 1,
                value: -2.0
            }
        );
        assert_eq!(
            e("static:powers=1e308/1e308"),
            SchedError::PowersSumOverflow
        );
        for bad in [
            "",
            "guided",
            "dynamic",
            "dynamic:x",
            "dynamic:-3",
            "dynamic:n=3",
            "static:3/1",
            "static:powers=",
            "static:powers=1/a",
            "hguided:k",
            "hguided:k=two",
            "hguided:z=1",
            "hguided:k=1,k=2",
            "hguided:min=1.5",
        ] {
            assert!(
                matches!(e(bad), SchedError::Parse(_)),
                "{bad:?} -> {:?}",
                e(bad)
            );
        }
        assert!(e("hguided:z=1").to_string().contains("unknown parameter"));
    }

    #[test]
    fn display_round_trips() {
        for s in [
            Scheduler::Static { powers: None },
            Scheduler::Static {
                powers: Some(vec![3.0, 0.25]),
            },
            Scheduler::Dynamic { packages: 17 },
            Scheduler::hguided(),
            hg(Some(vec![1.0, 2.5, 1e-3]), 0.75, 9),
        ] {
            assert_eq!(s.to_string().parse(), Ok(s.clone()), "{s}");
        }
        assert_eq!(hg(None, 3.0, 4).to_string(), "hguided:k=3,min=4");
    }

    #[test]
    fn validate_rules() {
        let st = |p: Vec<f64>| Scheduler::Static { powers: Some(p) };
        assert_eq!(Scheduler::hguided().validate(0), Err(SchedError::NoDevices));
        assert_eq!(Scheduler::hguided().validate(3), Ok(()));
        assert_eq!(
            Scheduler::Dynamic { packages: 0 }.validate(1),
            Err(SchedError::ZeroPackages)
        );
        assert_eq!(Scheduler::Dynamic { packages: 1 }.validate(1), Ok(()));
        assert_eq!(
            st(vec![1.0]).validate(2),
            Err(SchedError::PowersLength {
                expected: 2,
                got: 1
            })
        );
        assert_eq!(st(vec![1.0, 0.0]).validate(2), Ok(()));
        assert_eq!(
            st(vec![0.0, 0.0]).validate(2),
            Err(SchedError::PowersSumZero)
        );
        assert_eq!(
            st(vec![1.0, f64::INFINITY]).validate(2),
            Err(SchedError::InvalidPower {
                index: 1,
                value: f64::INFINITY
            })
        );
        assert!(matches!(
            st(vec![f64::NAN, 1.0]).validate(2),
            Err(SchedError::InvalidPower { index: 0, .. })
        ));
        assert!(hg(None, f64::NAN, 1)
            .validate(1)
            .unwrap_err()
            .to_string()
            .contains("k must be finite and > 0"));
        assert_eq!(
            hg(None, 2.0, 0).validate(1),
            Err(SchedError::ZeroMinPackage)
        );
        assert_eq!(
            hg(Some(vec![1.0, 2.0, 3.0]), 2.0, 1).validate(2),
            Err(SchedError::PowersLength {
                expected: 2,
                got: 3
            })
        );
        assert!(SchedError::PowersLength {
            expected: 2,
            got: 3
        }
        .to_string()
        .contains("one value per device"));
    }

    #[test]
    fn for_devices_drops_the_hints_of_devices_left_out() {
        let hg = |p: Option<Vec<f64>>| Scheduler::HGuided {
            powers: p,
            k: 2.0,
            min_package: 1,
        };
        let st = Scheduler::Static {
            powers: Some(vec![0.2, 0.8]),
        };
        // All kept: unchanged.
        assert_eq!(st.for_devices(&[true, true]), st);
        // One left: no hints (they cannot matter for one device).
        assert_eq!(
            st.for_devices(&[true, false]),
            Scheduler::Static { powers: None }
        );
        assert_eq!(
            hg(Some(vec![0.2, 0.8])).for_devices(&[false, true]),
            hg(None)
        );
        // Three devices, one left out: the others keep their hints.
        assert_eq!(
            hg(Some(vec![1.0, 2.0, 3.0])).for_devices(&[true, false, true]),
            hg(Some(vec![1.0, 3.0]))
        );
        // What is left sums to zero: dropped.
        assert_eq!(
            hg(Some(vec![0.0, 0.0, 3.0])).for_devices(&[true, true, false]),
            hg(None)
        );
        // A length that does not fit is left for validation to name.
        let bad = hg(Some(vec![1.0, 2.0, 3.0]));
        assert_eq!(bad.for_devices(&[true, false]), bad);
        let d = Scheduler::Dynamic { packages: 4 };
        assert_eq!(d.for_devices(&[true, false]), d);
    }

    #[test]
    fn device_slots() {
        assert_eq!(
            DeviceSlot::cpu(8),
            DeviceSlot {
                kind: DeviceKind::Cpu,
                claimants: 8,
                granule: 1,
            }
        );
        assert_eq!(DeviceSlot::gpu().claimants, 1);
        assert_eq!(DeviceSlot::gpu().with_granule(0).granule, 1);
        assert_eq!(DeviceSlot::gpu().with_granule(96).granule, 96);
    }
}
