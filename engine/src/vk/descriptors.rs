//! Descriptor sets: the storage buffers of one run, bound to a pipeline's
//! layout.

use super::{ComputePipeline, Device};
use crate::error::{Error, Result, VkError, VkResultExt};
use crate::mem::BufferBinding;
use ash::vk;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A descriptor set for one run (its own small pool, destroyed with it).
/// Its bindings are written once, when it is made, and never changed.
pub struct BindingSet {
    device: Arc<Device>,
    pool: vk::DescriptorPool,
    pub(super) set: vk::DescriptorSet,
    /// Unique in the process, never reused (a handle may be, once the set
    /// is gone): what a recorded command buffer is matched by.
    pub(super) serial: u64,
}

/// The next [`BindingSet::serial`].
fn next_serial() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    // Relaxed: only uniqueness matters, which fetch_add gives in any order.
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Drop for BindingSet {
    fn drop(&mut self) {
        // SAFETY: dropped after the run's GPU work completed (rings wait for
        // every ticket before the run returns).
        unsafe { self.device.raw().destroy_descriptor_pool(self.pool, None) };
    }
}

impl ComputePipeline {
    /// Creates a descriptor set binding `buffers[i]` at
    /// `self.interface().bindings[i]`.
    ///
    /// Fails with [`Error::Interface`] unless there is exactly one buffer
    /// per binding, [`Error::ForeignBuffer`] for a buffer of another device,
    /// and [`Error::BindingRange`] for one larger than the device's
    /// `maxStorageBufferRange`.
    pub fn bind(&self, buffers: &[BufferBinding<'_>]) -> Result<BindingSet> {
        self.check_bindings(buffers)?;
        let spare = self.spare.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let set = match spare {
            Some(set) => set,
            None => self.allocate_set()?,
        };
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = buffers
            .iter()
            .map(|b| {
                [vk::DescriptorBufferInfo::default()
                    .buffer(b.handle())
                    .offset(0)
                    .range(b.raw().bytes())]
            })
            .collect();
        let writes: Vec<_> = self
            .interface
            .bindings
            .iter()
            .zip(&infos)
            .map(|(b, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set.set)
                    .dst_binding(b.binding)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        // SAFETY: the set is freshly allocated and not in use; every binding
        // of its layout gets one live buffer of this device, within the
        // storage range limit (checked above).
        unsafe { self.device.raw().update_descriptor_sets(&writes, &[]) };
        Ok(set)
    }

    /// Checks that `buffers` fit the interface and the device (see
    /// [`ComputePipeline::bind`]).
    fn check_bindings(&self, buffers: &[BufferBinding<'_>]) -> Result<()> {
        if buffers.len() != self.interface.bindings.len() {
            return Err(Error::Interface(format!(
                "the shader declares {} storage buffer(s) but {} were given",
                self.interface.bindings.len(),
                buffers.len()
            )));
        }
        let info = self.device.info();
        for (i, b) in buffers.iter().enumerate() {
            let binding = i as u32;
            if !Arc::ptr_eq(b.device(), &self.device) {
                return Err(Error::ForeignBuffer { binding });
            }
            if b.raw().bytes() > u64::from(info.max_storage_buffer_range) {
                return Err(Error::BindingRange {
                    binding,
                    bytes: b.raw().bytes(),
                    limit: info.max_storage_buffer_range,
                    device: info.name.clone(),
                });
            }
        }
        Ok(())
    }

    /// A descriptor set of this pipeline's layout, in a pool of its own.
    pub(super) fn allocate_set(&self) -> Result<BindingSet, VkError> {
        let raw = self.device.raw();
        let n = self.interface.bindings.len().max(1) as u32;
        let sizes = [vk::DescriptorPoolSize::default()
            .ty(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(n)];
        let pool_info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(1)
            .pool_sizes(&sizes);
        // SAFETY: plain object creation on a live device.
        let pool = unsafe { raw.create_descriptor_pool(&pool_info, None) }
            .call("vkCreateDescriptorPool")?;
        let layouts = [self.set_layout];
        let alloc = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(pool)
            .set_layouts(&layouts);
        // SAFETY: the pool has room for exactly this set.
        match unsafe { raw.allocate_descriptor_sets(&alloc) } {
            Ok(s) => Ok(BindingSet {
                device: self.device.clone(),
                pool,
                set: s[0],
                serial: next_serial(),
            }),
            Err(r) => {
                // SAFETY: created above, unused.
                unsafe { raw.destroy_descriptor_pool(pool, None) };
                Err(VkError::from_result("vkAllocateDescriptorSets", r))
            }
        }
    }
}
