//! RAPL through Linux powercap: one counter per CPU package,
//! `/sys/class/powercap/intel-rapl:N/energy_uj` (AMD packages appear there
//! too), wrapping at `max_energy_range_uj`. Usually readable by root only:
//! a package that cannot be read is left out (unavailable).

use super::{EnergySource, Unavailable};
use std::path::{Path, PathBuf};

/// The powercap class directory.
const POWERCAP: &str = "/sys/class/powercap";

/// The energy counter of one CPU package.
#[derive(Debug, Clone)]
pub struct RaplPackage {
    dir: PathBuf,
    name: String,
    wrap: Option<u64>,
}

impl RaplPackage {
    /// Every package zone of this machine whose counter can be read now.
    pub fn all() -> Vec<RaplPackage> {
        Self::all_in(Path::new(POWERCAP))
    }

    /// Every readable package zone under `root` (a powercap class
    /// directory): `intel-rapl:N`, not its sub-zones `intel-rapl:N:M`.
    pub fn all_in(root: &Path) -> Vec<RaplPackage> {
        let Ok(entries) = std::fs::read_dir(root) else {
            return Vec::new();
        };
        let mut zones: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_prefix("intel-rapl:"))
                    .is_some_and(|rest| {
                        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit())
                    })
            })
            .collect();
        zones.sort();
        zones
            .into_iter()
            .filter_map(|dir| Self::open(&dir).ok())
            .collect()
    }

    /// The zone at `dir`, if its counter reads.
    pub fn open(dir: &Path) -> Result<RaplPackage, Unavailable> {
        let name = read_trimmed(&dir.join("name")).unwrap_or_else(|_| "package".into());
        let wrap = read_trimmed(&dir.join("max_energy_range_uj"))
            .ok()
            .and_then(|s| s.parse().ok());
        let p = RaplPackage {
            dir: dir.to_path_buf(),
            name,
            wrap,
        };
        p.read_uj()?;
        Ok(p)
    }
}

/// The file's contents without surrounding whitespace.
fn read_trimmed(path: &Path) -> Result<String, Unavailable> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| Unavailable(format!("{}: {e}", path.display())))
}

impl EnergySource for RaplPackage {
    fn name(&self) -> String {
        format!("rapl {}", self.name)
    }

    fn read_uj(&self) -> Result<u64, Unavailable> {
        let path = self.dir.join("energy_uj");
        read_trimmed(&path)?
            .parse()
            .map_err(|e| Unavailable(format!("{}: {e}", path.display())))
    }

    fn wrap_uj(&self) -> Option<u64> {
        self.wrap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A powercap tree with two packages (one unreadable: no counter file,
    /// as for a non-root user) and a sub-zone.
    #[test]
    fn packages_are_found_and_unreadable_ones_left_out() {
        let root = std::env::temp_dir().join(format!("coexec-rapl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let zone = |name: &str, files: &[(&str, &str)]| {
            let d = root.join(name);
            std::fs::create_dir_all(&d).unwrap();
            for (f, v) in files {
                std::fs::write(d.join(f), v).unwrap();
            }
        };
        zone(
            "intel-rapl:0",
            &[
                ("name", "package-0\n"),
                ("energy_uj", "12345\n"),
                ("max_energy_range_uj", "262143328850\n"),
            ],
        );
        zone(
            "intel-rapl:0:0",
            &[("name", "core\n"), ("energy_uj", "5\n")],
        );
        zone("intel-rapl:1", &[("name", "package-1\n")]);
        let found = RaplPackage::all_in(&root);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].name(), "rapl package-0");
        assert_eq!(found[0].read_uj(), Ok(12345));
        assert_eq!(found[0].wrap_uj(), Some(262_143_328_850));
        let err = RaplPackage::open(&root.join("intel-rapl:1")).unwrap_err();
        assert!(err.0.contains("energy_uj"), "{err}");
        assert!(RaplPackage::all_in(&root.join("missing")).is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
