//! The handle registry: C gets a never-reused 64-bit id, never a pointer, so
//! null, stale (destroyed, double-freed) and wrong-kind handles are recognised
//! and rejected instead of being dereferenced.
//!
//! Each object keeps its engine value in an `RwLock<Option<_>>`: runs hold a
//! read (inputs, engine, kernel) or write (outputs) lock while they are in
//! flight, and destroy/free takes the write lock with `try_write`, so an object
//! is never torn down under a run (`COEXEC_ERROR_BUSY` instead) and, once
//! destroy/free returns, the object is gone: imported memory is released,
//! CPU callbacks are no longer called.

use super::status::{FfiError, FfiResult};
use super::types::coexec_status::*;
use coexec_engine::{Buffer, Engine, Kernel};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

/// Next handle id, shared by every kind; ids are never reused (a `u64` does
/// not wrap in practice), so a stale handle can never name a newer object.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Live objects of one kind by handle id.
pub(crate) struct Registry<T> {
    kind: &'static str,
    map: Mutex<BTreeMap<u64, Arc<T>>>,
}

impl<T> Registry<T> {
    pub(crate) const fn new(kind: &'static str) -> Self {
        Registry {
            kind,
            map: Mutex::new(BTreeMap::new()),
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<T>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `value` and returns its new handle id.
    pub(crate) fn insert(&self, value: T) -> u64 {
        // Relaxed: only uniqueness matters.
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        self.map().insert(id, Arc::new(value));
        id
    }

    fn invalid(&self, id: u64) -> FfiError {
        if id == 0 {
            FfiError::new(
                COEXEC_ERROR_INVALID_HANDLE,
                format!("null {} handle", self.kind),
            )
        } else {
            FfiError::new(
                COEXEC_ERROR_INVALID_HANDLE,
                format!(
                    "{} handle {id} is not live (already destroyed or freed, or not {} {} handle)",
                    self.kind,
                    article(self.kind),
                    self.kind
                ),
            )
        }
    }

    /// The live object `id`.
    pub(crate) fn get(&self, id: u64) -> FfiResult<Arc<T>> {
        self.map().get(&id).cloned().ok_or_else(|| self.invalid(id))
    }

    /// Unregisters `id` (only one caller can win a race to do so).
    pub(crate) fn remove(&self, id: u64) -> FfiResult<Arc<T>> {
        self.map().remove(&id).ok_or_else(|| self.invalid(id))
    }

    /// Registers `value` again under `id` (after a destroy that found it busy).
    pub(crate) fn restore(&self, id: u64, value: Arc<T>) {
        self.map().insert(id, value);
    }

    /// Number of live objects (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map().len()
    }
}

/// "an" before a vowel ("an engine handle"), else "a" ("a buffer handle").
fn article(word: &str) -> &'static str {
    match word.bytes().next() {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => "an",
        _ => "a",
    }
}

/// An object slot: the engine value, taken out when destroyed.
pub(crate) type Slot<V> = RwLock<Option<V>>;

/// Shared access to a slot, or an error when it was destroyed meanwhile.
pub(crate) fn read<'a, V>(
    slot: &'a Slot<V>,
    kind: &str,
) -> FfiResult<RwLockReadGuard<'a, Option<V>>> {
    let g = slot.read().unwrap_or_else(|p| p.into_inner());
    if g.is_none() {
        return Err(destroyed(kind));
    }
    Ok(g)
}

/// Exclusive access to a slot, or an error when it was destroyed meanwhile.
pub(crate) fn write<'a, V>(
    slot: &'a Slot<V>,
    kind: &str,
) -> FfiResult<RwLockWriteGuard<'a, Option<V>>> {
    let g = slot.write().unwrap_or_else(|p| p.into_inner());
    if g.is_none() {
        return Err(destroyed(kind));
    }
    Ok(g)
}

fn destroyed(kind: &str) -> FfiError {
    FfiError::new(
        COEXEC_ERROR_INVALID_HANDLE,
        format!("the {kind} was destroyed while this call waited for it"),
    )
}

/// Unregisters `id` and drops its value, unless a run holds it
/// (`COEXEC_ERROR_BUSY`, and the handle stays valid).
pub(crate) fn destroy<T, V>(
    registry: &Registry<T>,
    id: u64,
    slot: impl Fn(&T) -> &Slot<V>,
) -> FfiResult {
    let obj = registry.remove(id)?;
    let taken = match slot(&obj).try_write() {
        Ok(mut g) => Some(g.take()),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner().take()),
        Err(TryLockError::WouldBlock) => None,
    };
    let Some(value) = taken else {
        registry.restore(id, obj);
        return Err(FfiError::new(
            COEXEC_ERROR_BUSY,
            format!(
                "the {} is in use by a run in progress; destroy it after the run returns",
                registry.kind
            ),
        ));
    };
    // Dropped here, before returning to C: outside the lock, after every run.
    drop(value);
    Ok(())
}

/// An engine behind a handle.
pub(crate) struct EngineObj {
    /// `Engine::id`, to recognise buffers and kernels of other engines.
    pub(crate) engine_id: u64,
    pub(crate) engine: Slot<Engine>,
}

/// A unified buffer behind a handle. Elements are bytes to the engine; the C
/// element size scales `per_item`.
pub(crate) struct BufferObj {
    pub(crate) engine_id: u64,
    pub(crate) buffer: Slot<Buffer<u8>>,
    /// The mapped (or imported) host address.
    pub(crate) host_ptr: usize,
    pub(crate) count: usize,
    pub(crate) elem_size: usize,
    pub(crate) imported: bool,
}

/// A kernel behind a handle.
pub(crate) struct KernelObj {
    pub(crate) engine_id: u64,
    pub(crate) kernel: Slot<Kernel>,
    /// Its arguments' footprints (`coexec_kernel_set_footprint`).
    pub(crate) footprints: super::footprint::Footprints,
}

pub(crate) static ENGINES: Registry<EngineObj> = Registry::new("engine");
pub(crate) static BUFFERS: Registry<BufferObj> = Registry::new("buffer");
pub(crate) static KERNELS: Registry<KernelObj> = Registry::new("kernel");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_null_and_busy_handles_are_recognised() {
        let r: Registry<Slot<u32>> = Registry::new("thing");
        let id = r.insert(RwLock::new(Some(5)));
        assert_eq!(r.len(), 1);
        assert!(r.get(id).is_ok());
        assert_eq!(r.get(0).unwrap_err().code, COEXEC_ERROR_INVALID_HANDLE);
        {
            let obj = r.get(id).unwrap();
            let _held = obj.read().unwrap();
            let e = destroy(&r, id, |s| s).unwrap_err();
            assert_eq!(e.code, COEXEC_ERROR_BUSY);
            assert!(r.get(id).is_ok(), "a busy object stays registered");
        }
        destroy(&r, id, |s| s).unwrap();
        let e = destroy(&r, id, |s| s).unwrap_err();
        assert_eq!(e.code, COEXEC_ERROR_INVALID_HANDLE);
        assert!(e.message.contains("not live"), "{}", e.message);
        assert_eq!(r.len(), 0);
        let id2 = r.insert(RwLock::new(Some(6)));
        assert_ne!(id, id2, "ids are never reused");
    }
}
