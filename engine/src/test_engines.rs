//! Engines for the unit tests that need a Vulkan device: `None` (and a
//! line saying why) where none can be made.

use crate::{Engine, EngineOptions, MemoryPlacement};

/// An engine of one CPU worker with staged memory (device-local mirrors,
/// as on a discrete GPU), validation on where available, no profiles.
pub(crate) fn staged() -> Option<Engine> {
    one_worker(MemoryPlacement::Staged)
}

/// An engine of one CPU worker with buffers placed as `memory` says,
/// validation on where available, no profiles.
pub(crate) fn one_worker(memory: MemoryPlacement) -> Option<Engine> {
    let made = Engine::with_options(EngineOptions {
        workers: Some(1),
        validation: crate::vk::Validation::IfAvailable,
        profiles: false,
        memory,
        ..Default::default()
    });
    if made.is_err() {
        eprintln!("skipping: no Vulkan device");
    }
    made.ok()
}
