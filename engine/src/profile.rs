//! Persistent profiles: what the scheduler learned about a kernel (each
//! device's [`Cost`], and the measured time per unit of each configuration
//! it ran: see [`crate::outcomes`]), kept on disk beside the pipeline cache
//! so that the next process's first run starts informed.
//!
//! Beside them it keeps the scales of the devices' rates in a co-executed
//! split (see [`crate::split`]; lines `split SLOT SCALE`), and a lone GPU's
//! time per unit at each package count it tried (see [`crate::depth`];
//! lines `depth SLOT PACKAGES SECONDS`), and the time per unit of the
//! latest first run of a process in each configuration (lines `first
//! together SECONDS`, `first alone SLOT SECONDS`, `first without SLOT
//! SECONDS`), and a staged GPU's learned transfer bandwidths (lines
//! `rates SLOT UP DOWN`, bytes per second), and what a GPU's first package
//! of the kernel in a process costs beyond its warm cost, its uploads left
//! out (lines `cold SLOT SECONDS`: a software rasterizer compiles a
//! shader's code at its first dispatch); profiles written before them
//! lack them.
//!
//! A profile is keyed by everything its figures depend on: the kernel (a
//! hash of its SPIR-V, or its name and work-group size for a CPU-only
//! kernel), each device of the run (the CPU's model and worker count; the
//! GPU's name, vendor and device ids, driver version and pipeline-cache
//! UUID) and the index space's shape class (dimensions and the power of two
//! of its unit count). The whole key is stored in the file and compared on
//! load, so a changed device, driver or kernel never reads another's
//! figures.
//!
//! A profile can make a run faster, never wrong: it only seeds the cost
//! model and the measured times, which live packages and runs soon outweigh, and a missing, unreadable,
//! corrupt or stale file is ignored (with a warning, except when missing).
//! Writes go to a temporary file renamed over the profile, so concurrent
//! writers leave one whole file (the last one's).

use crate::outcomes::Mode;
use crate::sched::Cost;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

mod writer;

/// First line of a profile file.
const MAGIC: &str = "coexec-profile 2";

/// What a profile holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Profile {
    /// One cost per device slot (`None`: that device was not measured).
    pub(crate) costs: Vec<Option<Cost>>,
    /// Seconds per unit of each configuration that ran.
    pub(crate) times: Vec<(Mode, f64)>,
    /// The scale of a slot's rate in a co-executed split, where not 1.
    pub(crate) split: Vec<(usize, f64)>,
    /// A slot's lone runs: packages and seconds per unit.
    pub(crate) depth: Vec<(usize, u64, f64)>,
    /// Seconds per unit of the latest first run of a process in each
    /// configuration that had one (see
    /// [`crate::outcomes::Outcomes::record_first`]).
    pub(crate) first: Vec<(Mode, f64)>,
    /// A staged GPU's transfer bandwidths this process learned, bytes per
    /// second up and down, by its device slot (see
    /// [`crate::sched::transfers::TransferRates::seed`]).
    pub(crate) rates: Vec<(usize, f64, f64)>,
    /// A GPU's one-time cost at its first package of the kernel in a
    /// process, seconds beyond its warm cost (uploads left out), by its
    /// device slot (see [`crate::learn::Learning::profile_cold`]).
    pub(crate) cold: Vec<(usize, f64)>,
}

/// Where profiles live and the key of one kernel on one set of devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProfileKey {
    /// Human-readable, stored in the file and compared on load.
    text: String,
    /// File name: the kernel's name (sanitized) and a hash of `text`.
    file: String,
}

impl ProfileKey {
    /// The key of `kernel` (its name and an identity such as its SPIR-V
    /// hash) on `devices` (one descriptive line each, in run slot order)
    /// over a space of `shape`.
    pub(crate) fn new(kernel: &str, identity: u64, devices: &[String], shape: &str) -> Self {
        let mut text = format!("kernel {kernel} {identity:016x}; shape {shape}");
        for (i, d) in devices.iter().enumerate() {
            let _ = write!(text, "; device {i} {d}");
        }
        let text = text.replace(['\n', '\r'], " ");
        let name: String = kernel
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(40)
            .collect();
        let file = format!("{name}-{:016x}.profile", fnv1a(text.as_bytes()));
        ProfileKey { text, file }
    }
}

/// FNV-1a, 64 bits: a hash that is the same in every build and process
/// (std's `DefaultHasher` is not promised to be).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The directory of profiles, or none (profiles off).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ProfileStore {
    dir: Option<PathBuf>,
}

impl ProfileStore {
    /// Profiles under `dir` (created on the first save); `None`: off.
    pub(crate) fn new(dir: Option<PathBuf>) -> Self {
        ProfileStore { dir }
    }

    /// Whether profiles are read and written.
    pub(crate) fn enabled(&self) -> bool {
        self.dir.is_some()
    }

    fn path(&self, key: &ProfileKey) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(&key.file))
    }

    /// The profile stored for `key`, over `devices` device slots. `None`
    /// when off, missing, or unusable (warned).
    pub(crate) fn load(&self, key: &ProfileKey, devices: usize) -> Option<Profile> {
        let path = self.path(key)?;
        let read = writer::pending(&path).map_or_else(|| std::fs::read_to_string(&path), Ok);
        let text = match read {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!("ignoring profile {}: {e}", path.display());
                return None;
            }
        };
        match parse(&text, key, devices) {
            Ok(p) => Some(p),
            Err(why) => {
                tracing::warn!("ignoring profile {}: {why}", path.display());
                None
            }
        }
    }

    /// Stores `profile` for `key`, off the caller's thread (see
    /// [`writer`]). Failures are warned about, never returned: a profile is
    /// an optimization.
    pub(crate) fn save(&self, key: &ProfileKey, profile: &Profile) {
        let Some(path) = self.path(key) else { return };
        writer::queue(path, render(key, profile), write_or_warn);
    }
}

impl Drop for ProfileStore {
    /// What this store saved is on disk once it is gone.
    fn drop(&mut self) {
        if self.enabled() {
            writer::flush();
        }
    }
}

fn write_or_warn(path: &Path, text: &str) {
    if let Err(e) = write_atomically(path, text) {
        tracing::warn!("could not write profile {}: {e}", path.display());
    }
}

fn render(key: &ProfileKey, profile: &Profile) -> String {
    let mut s = format!("{MAGIC}\nkey {}\n", key.text);
    for (i, c) in profile.costs.iter().enumerate() {
        if let Some(c) = c.filter(Cost::is_usable) {
            // `{:e}` of an f64 parses back to the same value.
            let _ = writeln!(s, "cost {i} {:e} {:e}", c.overhead_s, c.rate);
        }
    }
    for &(slot, f) in &profile.split {
        if f.is_finite() && f > 0.0 {
            let _ = writeln!(s, "split {slot} {f:e}");
        }
    }
    for &(slot, n, t) in &profile.depth {
        if t.is_finite() && t > 0.0 {
            let _ = writeln!(s, "depth {slot} {n} {t:e}");
        }
    }
    for &(slot, up, down) in &profile.rates {
        if [up, down].iter().all(|r| r.is_finite() && *r > 0.0) {
            let _ = writeln!(s, "rates {slot} {up:e} {down:e}");
        }
    }
    for &(slot, t) in &profile.cold {
        if t.is_finite() && t >= 0.0 {
            let _ = writeln!(s, "cold {slot} {t:e}");
        }
    }
    for (word, list) in [("time", &profile.times), ("first", &profile.first)] {
        for &(mode, t) in list {
            if t.is_finite() && t > 0.0 {
                let _ = match mode {
                    Mode::Together => writeln!(s, "{word} together {t:e}"),
                    Mode::Alone(slot) => writeln!(s, "{word} alone {slot} {t:e}"),
                    Mode::Without(slot) => writeln!(s, "{word} without {slot} {t:e}"),
                };
            }
        }
    }
    s
}

fn parse(text: &str, key: &ProfileKey, devices: usize) -> Result<Profile, String> {
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        return Err("not a coexec profile of this version".into());
    }
    match lines.next().and_then(|l| l.strip_prefix("key ")) {
        Some(k) if k == key.text => {}
        Some(_) => return Err("stale: made for another kernel, device or driver".into()),
        None => return Err("no key line".into()),
    }
    let mut p = Profile {
        costs: vec![None; devices],
        times: Vec::new(),
        split: Vec::new(),
        depth: Vec::new(),
        first: Vec::new(),
        rates: Vec::new(),
        cold: Vec::new(),
    };
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let bad = || format!("bad line {line:?}");
        let mut f = line.split_ascii_whitespace();
        let slot = |v: Option<&str>| -> Result<usize, String> {
            v.and_then(|v| v.parse().ok())
                .filter(|&s| s < devices)
                .ok_or_else(bad)
        };
        let num = |v: Option<&str>| -> Result<f64, String> {
            v.and_then(|v| v.parse().ok()).ok_or_else(bad)
        };
        match f.next() {
            Some("cost") => {
                let i = slot(f.next())?;
                let cost = Cost {
                    overhead_s: num(f.next())?,
                    rate: num(f.next())?,
                };
                if !cost.is_usable() {
                    return Err(bad());
                }
                p.costs[i] = Some(cost);
            }
            Some("split") => {
                let i = slot(f.next())?;
                let scale = num(f.next())?;
                if !(scale.is_finite() && scale > 0.0) {
                    return Err(bad());
                }
                p.split.push((i, scale));
            }
            Some("depth") => {
                let i = slot(f.next())?;
                let n = f.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
                let t = num(f.next())?;
                if !(t.is_finite() && t > 0.0) {
                    return Err(bad());
                }
                p.depth.push((i, n, t));
            }
            Some("rates") => {
                let i = slot(f.next())?;
                let (up, down) = (num(f.next())?, num(f.next())?);
                if ![up, down].iter().all(|r| r.is_finite() && *r > 0.0) {
                    return Err(bad());
                }
                p.rates.push((i, up, down));
            }
            Some("cold") => {
                let i = slot(f.next())?;
                let t = num(f.next())?;
                if !(t.is_finite() && t >= 0.0) {
                    return Err(bad());
                }
                p.cold.push((i, t));
            }
            Some(word @ ("time" | "first")) => {
                let mode = match f.next() {
                    Some("together") => Mode::Together,
                    Some("alone") => Mode::Alone(slot(f.next())?),
                    Some("without") => Mode::Without(slot(f.next())?),
                    _ => return Err(bad()),
                };
                let t = num(f.next())?;
                if !(t.is_finite() && t > 0.0) {
                    return Err(bad());
                }
                match word {
                    "time" => p.times.push((mode, t)),
                    _ => p.first.push((mode, t)),
                }
            }
            _ => return Err(bad()),
        }
        if f.next().is_some() {
            return Err(bad());
        }
    }
    Ok(p)
}

/// Writes `text` to a fresh temporary file beside `path`, then renames it
/// over `path`.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    // Relaxed: only uniqueness within the process matters.
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(
        ".{}.{}-{seq}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("profile"),
        std::process::id()
    ));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test's profile directory, removed when dropped once every queued
    /// profile is written (a write still queued would make it again).
    struct Scratch(PathBuf);

    impl std::ops::Deref for Scratch {
        type Target = Path;

        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            writer::flush();
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn store() -> (ProfileStore, Scratch) {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("coexec-profile-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        (ProfileStore::new(Some(dir.clone())), Scratch(dir))
    }

    fn key(driver: &str) -> ProfileKey {
        ProfileKey::new(
            "blur 2d",
            0xabcdef,
            &["cpu X 4 workers".into(), format!("gpu Y driver {driver}")],
            "d2 2^12",
        )
    }

    fn costs(c: &[Option<Cost>]) -> Profile {
        Profile {
            costs: c.to_vec(),
            times: Vec::new(),
            split: Vec::new(),
            depth: Vec::new(),
            first: Vec::new(),
            rates: Vec::new(),
            cold: Vec::new(),
        }
    }

    const GPU: Cost = Cost {
        overhead_s: 4.5e-5,
        rate: 123456789.0,
    };

    #[test]
    fn round_trip_and_missing() {
        let (s, _dir) = store();
        let k = key("1");
        assert_eq!(s.load(&k, 2), None); // missing: silently nothing
        let p = Profile {
            costs: vec![None, Some(GPU)],
            times: vec![
                (Mode::Together, 1.5e-9),
                (Mode::Alone(1), 2.25e-9),
                (Mode::Without(0), 1.75e-9),
            ],
            split: vec![(0, 1.25), (1, 0.75)],
            depth: vec![(1, 1, 3.5e-9), (1, 2, 3.25e-9)],
            first: vec![(Mode::Together, 7.5e-9), (Mode::Alone(0), 8.5e-9)],
            rates: vec![(1, 43.5e9, 41.25e9)],
            cold: vec![(1, 2.25e-3)],
        };
        s.save(&k, &p);
        assert_eq!(s.load(&k, 2), Some(p));
        assert!(k.file.starts_with("blur_2d-"));
    }

    #[test]
    fn saves_reach_the_disk_latest_first_once_the_store_goes() {
        let (s, _dir) = store();
        let k = key("1");
        let path = s.path(&k).unwrap();
        let first = costs(&[Some(GPU), None]);
        let last = costs(&[None, Some(GPU)]);
        s.save(&k, &first);
        s.save(&k, &last);
        // Queued or written, a load sees the latest.
        assert_eq!(s.load(&k, 2), Some(last.clone()));
        drop(s);
        // The store flushed as it went: the file holds the latest.
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(parse(&text, &k, 2), Ok(last));
        assert!(writer::pending(&path).is_none());
    }

    #[test]
    fn stale_corrupt_and_unreadable_are_ignored() {
        let (s, _dir) = store();
        s.save(&key("1"), &costs(&[Some(GPU), Some(GPU)]));
        writer::flush();
        // Another driver: another file name, and a key mismatch if forced.
        assert_eq!(s.load(&key("2"), 2), None);
        let path = s.path(&key("2")).unwrap();
        std::fs::copy(s.path(&key("1")).unwrap(), &path).unwrap();
        assert_eq!(s.load(&key("2"), 2), None);
        for junk in [
            "",
            "garbage",
            "coexec-profile 2\n",
            "coexec-profile 2\nkey x\n",
            // The previous version's format.
            &format!("coexec-profile 1\nkey {}\ncost 0 1e-6 1\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ncost 0 nan 1\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ncost 9 1e-6 1\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ncost 0 1e-6\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ncost 0 1e-6 -5\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ncost 0 1e-6 5 7\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ntime together 0\n", key("2").text),
            &format!(
                "coexec-profile 2\nkey {}\ntime alone 2 1e-9\n",
                key("2").text
            ),
            &format!("coexec-profile 2\nkey {}\ntime apart 1e-9\n", key("2").text),
            &format!(
                "coexec-profile 2\nkey {}\nfirst together 0\n",
                key("2").text
            ),
            &format!(
                "coexec-profile 2\nkey {}\nfirst alone 2 1e-9\n",
                key("2").text
            ),
            &format!(
                "coexec-profile 2\nkey {}\nfirsts together 1e-9\n",
                key("2").text
            ),
            &format!("coexec-profile 2\nkey {}\nrates 1 4e10\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ncold 1 -1e-3\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ncold 1 nan\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ncold 4 1e-3\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ncold 1\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\nrates 1 4e10 0\n", key("2").text),
            &format!(
                "coexec-profile 2\nkey {}\nrates 3 4e10 4e10\n",
                key("2").text
            ),
            &format!("coexec-profile 2\nkey {}\nsplit 0 -1\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\nsplit 5 1\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ndepth 1 4 0\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ndepth 1 -4 1e-9\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ndepth 7 4 1e-9\n", key("2").text),
            &format!("coexec-profile 2\nkey {}\ndepth 1 4\n", key("2").text),
            &format!(
                "coexec-profile 2\nkey {}\ntime together inf\n",
                key("2").text
            ),
        ] {
            std::fs::write(&path, junk).unwrap();
            assert_eq!(s.load(&key("2"), 2), None, "{junk:?}");
        }
        std::fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
        assert_eq!(s.load(&key("2"), 2), None);
        // A directory where the file should be: unreadable, ignored; saving
        // over it fails with a warning only.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert_eq!(s.load(&key("2"), 2), None);
        s.save(&key("2"), &costs(&[Some(GPU), None]));
    }

    #[test]
    fn off_reads_and_writes_nothing() {
        let s = ProfileStore::new(None);
        assert!(!s.enabled());
        s.save(&key("1"), &costs(&[Some(GPU)]));
        assert_eq!(s.load(&key("1"), 1), None);
    }

    #[test]
    fn concurrent_writers_leave_one_whole_file() {
        let (s, dir) = store();
        let k = key("1");
        std::thread::scope(|scope| {
            for t in 0..8u32 {
                let (s, k) = (&s, &k);
                scope.spawn(move || {
                    for i in 0..50u32 {
                        let c = Cost {
                            overhead_s: 1e-6 * f64::from(t + 1),
                            rate: f64::from(1000 * (t + 1) + i),
                        };
                        s.save(k, &costs(&[Some(c), Some(c)]));
                        // Every read sees some writer's whole file.
                        let got = s.load(k, 2).expect("a whole profile").costs;
                        assert!(got[0].is_some() && got[0] == got[1], "{got:?}");
                    }
                });
            }
        });
        writer::flush();
        let left: Vec<_> = std::fs::read_dir(&*dir).unwrap().collect();
        assert_eq!(left.len(), 1, "temporary files left behind: {left:?}");
    }
}
