//! Test-only fault injection (cargo feature `test-hooks`): makes the GPU
//! executor fail in a chosen way on a chosen package of the next run, so the
//! failure paths can be exercised on any device, lavapipe included.

/// The fault to inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuFault {
    /// The package's submission fails (as `vkQueueSubmit` would, with an
    /// error that leaves the package unsent). It never ran: it is run again
    /// elsewhere.
    SubmitError,
    /// The wait for the package reports `VK_ERROR_DEVICE_LOST` although the
    /// package really ran: the engine reads the timeline, sees it completed,
    /// and counts it once.
    DeviceLost,
    /// The package hangs: its submission waits on a semaphore the host
    /// signals only after the engine declared the timeout, then runs its
    /// real dispatch and writes its outputs. It ends late and counts once.
    Hang,
    /// The package hangs and the device is then lost: its submission waits
    /// on a semaphore and does nothing, and after the timeout the engine
    /// observes `VK_ERROR_DEVICE_LOST` for it and every later package in
    /// flight. Their outcome is unknown: they run again elsewhere only if the
    /// kernel's outputs are all write-only, else the run returns
    /// [`Error::GpuLostMidPackage`](crate::Error::GpuLostMidPackage).
    HangThenLost,
}

/// When and how the GPU fails in the next run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultInjection {
    /// The fault.
    pub fault: GpuFault,
    /// Packages the GPU completes normally first (seen complete on the
    /// device: a staged run may still be downloading their results).
    pub after_packages: usize,
}
