//! The binding sets a pipeline made for its latest runs, kept for the next
//! run that binds the same buffers: making one (a descriptor pool, a set,
//! its writes) took 25-35 us per run on the H200, and a set seen before
//! lets the dispatch ring resubmit a command buffer it recorded before
//! (see [`super::DispatchRing`]).
//!
//! A set is matched by its buffers' identities (a process-unique serial and
//! the bound handle, which is the buffer's own, its mirror's or its view's
//! on the pipeline's device, each living as long as the buffer) and sizes;
//! a set whose buffers are gone is never matched again (their serials are
//! never reused) and leaves the cache as newer ones come.

use super::{BindingSet, ComputePipeline};
use crate::error::Result;
use crate::mem::BufferBinding;
use ash::vk;
use std::sync::{Arc, Mutex};

/// How many sets a pipeline keeps: the latest runs' (an iterative program
/// alternates between a few argument lists, as a ping-pong stencil does;
/// a staged co-executed run makes two, one for its stolen packages).
const KEPT: usize = 8;

/// One binding of a set's key: the buffer's serial, the handle bound and
/// its size.
type Part = (u64, vk::Buffer, u64);

/// A pipeline's latest binding sets, the most recent last.
#[derive(Default)]
pub(crate) struct SetCache(pub(super) Mutex<Vec<(Vec<Part>, Arc<BindingSet>)>>);

impl SetCache {
    fn key(buffers: &[BufferBinding<'_>]) -> Vec<Part> {
        let part = |b: &BufferBinding<'_>| (b.raw().id().serial, b.handle(), b.raw().bytes());
        buffers.iter().map(part).collect()
    }
}

impl ComputePipeline {
    /// [`ComputePipeline::bind`], or the set made for the same buffers by
    /// one of the pipeline's latest runs.
    pub fn bind_cached(&self, buffers: &[BufferBinding<'_>]) -> Result<Arc<BindingSet>> {
        let key = SetCache::key(buffers);
        let mut sets = self.sets.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = sets.iter().position(|(k, _)| *k == key) {
            let hit = sets.remove(i);
            let set = hit.1.clone();
            sets.push(hit);
            return Ok(set);
        }
        let set = Arc::new(self.bind(buffers)?);
        if sets.len() >= KEPT {
            // A run still using it holds its own reference.
            sets.remove(0);
        }
        sets.push((key, set.clone()));
        Ok(set)
    }
}
