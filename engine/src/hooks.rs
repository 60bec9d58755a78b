//! Test-only fault injection (cargo feature `test-hooks`): makes the GPU
//! executor fail in a chosen way on a chosen package of the next run, so the
//! requeue path can be exercised on any device, lavapipe included.

/// The fault to inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuFault {
    /// The package's submission fails (as `vkQueueSubmit` would).
    SubmitError,
    /// The wait for the package reports `VK_ERROR_DEVICE_LOST` (the package
    /// really ran; its results count as lost).
    DeviceLost,
    /// The package hangs: it waits on an event the host sets only after the
    /// engine's GPU timeout has expired.
    Hang,
}

/// When and how the GPU fails in the next run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultInjection {
    /// The fault.
    pub fault: GpuFault,
    /// Packages the GPU completes normally first.
    pub after_packages: usize,
}
