//! NVML for NVIDIA GPUs: `libnvidia-ml.so.1` is opened at run time (no
//! build-time dependency), the GPU is found by its UUID (Vulkan's
//! `deviceUUID` is NVML's), and `nvmlDeviceGetTotalEnergyConsumption` gives
//! millijoules since the driver loaded (Volta and newer).

use super::{EnergySource, PowerSource, Unavailable};
use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CString};

/// `nvmlReturn_t` of success.
const NVML_SUCCESS: c_int = 0;

type InitFn = unsafe extern "C" fn() -> c_int;
type ShutdownFn = unsafe extern "C" fn() -> c_int;
type ByUuidFn = unsafe extern "C" fn(*const c_char, *mut *mut c_void) -> c_int;
type EnergyFn = unsafe extern "C" fn(*mut c_void, *mut c_ulonglong) -> c_int;
type PowerFn = unsafe extern "C" fn(*mut c_void, *mut c_uint) -> c_int;

/// The energy counter of one NVIDIA GPU, through NVML.
pub struct NvmlGpu {
    uuid: String,
    device: *mut c_void,
    energy: EnergyFn,
    /// `nvmlDeviceGetPowerUsage`, where the library has it.
    power: Option<PowerFn>,
    shutdown: ShutdownFn,
    // Last: the library is unloaded after the function pointers' last use
    // (Drop calls `shutdown` first).
    _lib: libloading::Library,
}

// SAFETY: NVML is thread-safe (its documentation: every call may be made
// from any thread); the device handle is an opaque token it hands out,
// valid until nvmlShutdown, which only Drop calls.
unsafe impl Send for NvmlGpu {}
// SAFETY: as above; `&self` only reads the counter.
unsafe impl Sync for NvmlGpu {}

impl std::fmt::Debug for NvmlGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmlGpu").field("uuid", &self.uuid).finish()
    }
}

/// NVML's name of the GPU of Vulkan `deviceUUID` `uuid`.
pub(crate) fn uuid_string(uuid: [u8; 16]) -> String {
    let h = |r: std::ops::Range<usize>| {
        uuid[r]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    format!(
        "GPU-{}-{}-{}-{}-{}",
        h(0..4),
        h(4..6),
        h(6..8),
        h(8..10),
        h(10..16)
    )
}

impl NvmlGpu {
    /// The GPU of Vulkan `deviceUUID` `uuid`; unavailable without NVML,
    /// without such a GPU, or where the GPU does not count energy.
    pub fn open(uuid: [u8; 16]) -> Result<NvmlGpu, Unavailable> {
        let name = uuid_string(uuid);
        // SAFETY: loading NVML runs its initialisers; it is the vendor's
        // library, with no preconditions.
        let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }
            .map_err(|e| Unavailable(format!("NVML: {e}")))?;
        // SAFETY: these are NVML's entry points with these C signatures
        // (nvml.h); the pointers are used only while `lib` is loaded.
        let (init, shutdown, by_uuid, energy) = unsafe {
            let sym = |n: &[u8]| -> Result<*const c_void, Unavailable> {
                lib.get::<*const c_void>(n)
                    .map(|s| *s)
                    .map_err(|e| Unavailable(format!("NVML: {e}")))
            };
            (
                std::mem::transmute::<*const c_void, InitFn>(sym(b"nvmlInit_v2\0")?),
                std::mem::transmute::<*const c_void, ShutdownFn>(sym(b"nvmlShutdown\0")?),
                std::mem::transmute::<*const c_void, ByUuidFn>(sym(
                    b"nvmlDeviceGetHandleByUUID\0",
                )?),
                std::mem::transmute::<*const c_void, EnergyFn>(sym(
                    b"nvmlDeviceGetTotalEnergyConsumption\0",
                )?),
            )
        };
        // SAFETY: as above: NVML's entry point of this C signature, used
        // only while `lib` is loaded.
        let power = unsafe {
            lib.get::<*const c_void>(b"nvmlDeviceGetPowerUsage\0")
                .ok()
                .map(|s| std::mem::transmute::<*const c_void, PowerFn>(*s))
        };
        // SAFETY: plain NVML call, no arguments.
        let r = unsafe { init() };
        if r != NVML_SUCCESS {
            return Err(Unavailable(format!("nvmlInit failed ({r})")));
        }
        let c_name = CString::new(name.clone()).expect("hex digits and dashes");
        let mut device = std::ptr::null_mut();
        // SAFETY: NVML is initialised; a NUL-terminated string and a valid
        // out-pointer.
        let r = unsafe { by_uuid(c_name.as_ptr(), &mut device) };
        let gpu = NvmlGpu {
            uuid: name,
            device,
            energy,
            power,
            shutdown,
            _lib: lib,
        };
        if r != NVML_SUCCESS {
            return Err(Unavailable(format!("NVML has no GPU {} ({r})", gpu.uuid)));
        }
        gpu.read_uj()?;
        Ok(gpu)
    }
}

impl EnergySource for NvmlGpu {
    fn name(&self) -> String {
        format!("nvml {}", self.uuid)
    }

    fn read_uj(&self) -> Result<u64, Unavailable> {
        let mut mj: c_ulonglong = 0;
        // SAFETY: NVML is initialised (until Drop) and `device` is its
        // handle; a valid out-pointer.
        let r = unsafe { (self.energy)(self.device, &mut mj) };
        if r != NVML_SUCCESS {
            return Err(Unavailable(format!(
                "nvmlDeviceGetTotalEnergyConsumption failed ({r})"
            )));
        }
        Ok(mj.saturating_mul(1000))
    }

    fn wrap_uj(&self) -> Option<u64> {
        None
    }
}

impl PowerSource for NvmlGpu {
    fn name(&self) -> String {
        format!("nvml power {}", self.uuid)
    }

    fn read_mw(&self) -> Result<u64, Unavailable> {
        let f = self
            .power
            .ok_or_else(|| Unavailable("NVML has no nvmlDeviceGetPowerUsage".into()))?;
        let mut mw: c_uint = 0;
        // SAFETY: NVML is initialised (until Drop) and `device` is its
        // handle; a valid out-pointer.
        let r = unsafe { f(self.device, &mut mw) };
        if r != NVML_SUCCESS {
            return Err(Unavailable(format!("nvmlDeviceGetPowerUsage failed ({r})")));
        }
        Ok(u64::from(mw))
    }
}

impl Drop for NvmlGpu {
    fn drop(&mut self) {
        // SAFETY: balances the successful nvmlInit of `open` (a value
        // exists only after it); the library is still loaded.
        unsafe { (self.shutdown)() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_written_as_nvml_names_them() {
        let u = [
            0x9e, 0x1b, 0x6f, 0x30, 0x55, 0x8a, 0x2c, 0x41, 0x0d, 0x77, 0x12, 0x34, 0x56, 0x78,
            0x9a, 0xbc,
        ];
        assert_eq!(uuid_string(u), "GPU-9e1b6f30-558a-2c41-0d77-123456789abc");
    }

    /// Without NVML (this machine), or with it, never a panic: a reading
    /// or "unavailable".
    #[test]
    fn a_missing_library_or_gpu_is_unavailable() {
        match NvmlGpu::open([0; 16]) {
            Ok(g) => assert!(g.read_uj().is_ok()),
            Err(e) => assert!(e.0.contains("NVML") || e.0.contains("nvml"), "{e}"),
        }
    }
}
