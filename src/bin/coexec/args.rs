//! Value parsers of the command's arguments: each value is checked when the
//! command line is read (clap reports a bad one with the flag's name, before
//! an engine starts), through the library's own `FromStr` impls and name
//! lists.

use coexec::suite::{SCHEDULERS, SOLO_SCHEDULERS};
use coexec::workloads::{self, Size};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// A value parsed with `T`'s `FromStr`, with the text it was given (reports
/// echo the text as typed).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Given<T> {
    /// The text on the command line.
    pub(crate) text: String,
    /// The parsed value.
    pub(crate) value: T,
}

impl<T: FromStr> FromStr for Given<T>
where
    T::Err: fmt::Display,
{
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(Given {
            text: s.to_string(),
            value: s.parse().map_err(|e: T::Err| e.to_string())?,
        })
    }
}

impl<T> fmt::Display for Given<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A kernel name: one of `workloads::NAMES` or `workloads::COMPARABLE`.
pub(crate) fn kernel(name: &str) -> Result<String, String> {
    let name = name.trim();
    workloads::check_name(name)?;
    Ok(name.to_string())
}

/// A co-executed configuration: a key of `coexec::suite::SCHEDULERS`.
pub(crate) fn co_key(key: &str) -> Result<String, String> {
    one_of(key, SCHEDULERS.iter().map(|s| s.0))
}

/// A solo scheduler: one of `coexec::suite::SOLO_SCHEDULERS`.
pub(crate) fn solo_key(key: &str) -> Result<String, String> {
    one_of(key, SOLO_SCHEDULERS.iter().copied())
}

/// `key` if it is one of `keys`, else the error that lists them.
fn one_of<'a>(key: &str, keys: impl Iterator<Item = &'a str> + Clone) -> Result<String, String> {
    let key = key.trim();
    if keys.clone().any(|k| k == key) {
        Ok(key.to_string())
    } else {
        let known: Vec<&str> = keys.collect();
        Err(format!("unknown `{key}` (one of {})", known.join(", ")))
    }
}

/// Parses `KERNEL=SIZE` pairs of `--sizes`.
pub(crate) fn parse_sizes(pairs: &[String]) -> Result<BTreeMap<String, Size>, String> {
    let mut sizes = BTreeMap::new();
    for pair in pairs {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("--sizes: `{pair}` is not KERNEL=SIZE"))?;
        let k = k.trim();
        workloads::check_name(k).map_err(|e| format!("--sizes: {e}"))?;
        let size: Size = v
            .trim()
            .parse()
            .map_err(|e| format!("--sizes: {k}={v}: {e}"))?;
        if sizes.insert(k.to_string(), size).is_some() {
            return Err(format!("--sizes: {k} given twice"));
        }
    }
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use coexec::{Devices, Scheduler};

    fn pairs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sizes_parse_and_bad_ones_are_named() {
        let s = parse_sizes(&pairs(&["nbody=32768", " matmul = 512x256", "taylor=2^20"])).unwrap();
        assert_eq!(s["nbody"], Size::Linear(32768));
        assert_eq!(s["matmul"], Size::Image(512, 256));
        assert_eq!(s["taylor"], Size::Linear(1 << 20));
        assert!(parse_sizes(&[]).unwrap().is_empty());
        let err = |v: &[&str]| parse_sizes(&pairs(v)).unwrap_err();
        assert!(err(&["nbody"]).contains("not KERNEL=SIZE"));
        assert!(err(&["fft=1024"]).contains("unknown kernel `fft`"));
        assert!(err(&["nbody=lots"]).contains("nbody=lots"));
        assert!(err(&["nbody=1", "nbody=2"]).contains("given twice"));
    }

    #[test]
    fn given_values_keep_their_text() {
        let s: Given<Scheduler> = "dynamic:16".parse().unwrap();
        assert_eq!(s.value, Scheduler::Dynamic { packages: 16 });
        assert_eq!(s.to_string(), "dynamic:16");
        let d: Given<Devices> = "cpu,gpu".parse().unwrap();
        assert_eq!(d.value, Devices::ALL);
        assert_eq!(d.text, "cpu,gpu");
        let e = "tpu".parse::<Given<Devices>>().unwrap_err();
        assert!(e.contains("unknown device"), "{e}");
        assert!("dynamic:x".parse::<Given<Scheduler>>().is_err());
        // GPUs by index, as `coexec info` numbers them.
        let d: Given<Devices> = "cpu,gpu0,gpu1".parse().unwrap();
        assert_eq!(d.value, Devices::gpu(0).with_gpu(1).with_cpu());
        assert!(d.value.has_gpu(1) && !d.value.has_gpu(2) && !d.value.gpu);
        assert_eq!(d.value.to_string(), "cpu,gpu0,gpu1");
        for bad in ["gpu64", "gpu-1", "gpux", "gpu0,"] {
            let e = bad.parse::<Given<Devices>>().unwrap_err();
            assert!(e.contains("unknown device"), "{bad}: {e}");
        }
    }

    #[test]
    fn names_and_keys_are_checked() {
        assert_eq!(kernel(" mandelbrot").unwrap(), "mandelbrot");
        assert!(kernel("fft").unwrap_err().contains("unknown kernel `fft`"));
        assert_eq!(co_key("hguided:hints").unwrap(), "hguided:hints");
        let e = co_key("hguided").unwrap_err();
        assert!(e.contains("dynamic:5, dynamic:200, static"), "{e}");
        assert_eq!(solo_key("dynamic:64").unwrap(), "dynamic:64");
        assert!(solo_key("dynamic:5").is_err());
    }
}

/// `coexec bench --cpu-impl`: an engine path for the CPU share, or the
/// rayon baseline (the kernel's CPU implementation through rayon over the
/// whole range, the CPU alone, no coexec scheduling).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BenchImpl {
    /// `native` or `spirv`: the engine's path.
    Engine(coexec::CpuImpl),
    /// `rayon`: the baseline (`Engine::set_rayon_baseline`).
    Rayon,
}

impl BenchImpl {
    /// The engine's CPU path (the rayon baseline runs the native code).
    pub(crate) fn engine(self) -> coexec::CpuImpl {
        match self {
            BenchImpl::Engine(i) => i,
            BenchImpl::Rayon => coexec::CpuImpl::Native,
        }
    }
}

impl FromStr for BenchImpl {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "rayon" => Ok(BenchImpl::Rayon),
            other => other
                .parse()
                .map(BenchImpl::Engine)
                .map_err(|_| format!("{other:?} is not native, spirv or rayon")),
        }
    }
}
