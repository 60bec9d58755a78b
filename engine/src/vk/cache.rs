//! The on-disk pipeline cache of a device.

use super::PhysicalDeviceInfo;
use ash::vk;
use std::path::{Path, PathBuf};

/// A `VkPipelineCache` loaded from and saved to disk.
pub struct PipelineCache {
    raw: vk::PipelineCache,
    path: Option<PathBuf>,
}

impl PipelineCache {
    /// The default cache directory: `$COEXEC_CACHE_DIR`, else the user's cache
    /// directory followed by `coexec`.
    pub fn default_dir() -> Option<PathBuf> {
        if let Some(d) = std::env::var_os("COEXEC_CACHE_DIR") {
            return Some(PathBuf::from(d));
        }
        dirs::cache_dir().map(|d| d.join("coexec"))
    }

    /// Path of the cache file for a device inside `dir` (keyed by the
    /// driver's pipeline cache UUID, so another driver never reads it).
    pub fn file_for(dir: &Path, info: &PhysicalDeviceInfo) -> PathBuf {
        dir.join(format!(
            "pipelines-{:04x}-{:04x}-{}.bin",
            info.vendor_id,
            info.device_id,
            info.pipeline_cache_uuid_hex()
        ))
    }

    pub(super) fn open(
        device: &ash::Device,
        info: &PhysicalDeviceInfo,
        dir: Option<&Path>,
    ) -> Self {
        let dir = match dir {
            Some(d) if d.as_os_str().is_empty() => None,
            Some(d) => Some(d.to_path_buf()),
            None => Self::default_dir(),
        };
        let path = dir.map(|d| Self::file_for(&d, info));
        let data = path
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .unwrap_or_default();
        let info_ci = vk::PipelineCacheCreateInfo::default().initial_data(&data);
        // SAFETY: the initial data is only a hint: implementations validate its
        // header (vendor, device, UUID) and ignore data that does not match.
        let raw = match unsafe { device.create_pipeline_cache(&info_ci, None) } {
            Ok(c) => c,
            Err(_) => {
                // A corrupt file may be refused: start empty.
                let empty = vk::PipelineCacheCreateInfo::default();
                // SAFETY: as above, with no initial data.
                unsafe { device.create_pipeline_cache(&empty, None) }
                    .unwrap_or(vk::PipelineCache::null())
            }
        };
        PipelineCache { raw, path }
    }

    /// The raw handle (null if no cache could be created).
    pub fn raw(&self) -> vk::PipelineCache {
        self.raw
    }

    /// Where the cache is persisted, if anywhere.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub(super) fn save(&self, device: &ash::Device) {
        let (Some(path), false) = (&self.path, self.raw == vk::PipelineCache::null()) else {
            return;
        };
        // SAFETY: the cache belongs to `device` and is alive.
        let Ok(data) = (unsafe { device.get_pipeline_cache_data(self.raw) }) else {
            return;
        };
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        // Write then rename so that a concurrent reader never sees half a file.
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, &data).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }

    /// # Safety
    /// No pipeline creation using this cache is in progress.
    pub(super) unsafe fn destroy(&self, device: &ash::Device) {
        if self.raw != vk::PipelineCache::null() {
            // SAFETY: the caller guarantees no concurrent use.
            unsafe { device.destroy_pipeline_cache(self.raw, None) };
        }
    }
}
