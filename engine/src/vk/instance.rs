//! Vulkan instance: loader, optional Khronos validation, device enumeration.

use crate::error::{Error, Result, VkResultExt};
use ash::{ext::debug_utils, vk};
use std::collections::VecDeque;
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Name of the Khronos validation layer.
pub const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// Whether the Khronos validation layer is turned on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Validation {
    /// On when the environment variable `COEXEC_VALIDATION=1` is set.
    #[default]
    FromEnv,
    /// On if the layer is installed, silently off otherwise (used by tests).
    IfAvailable,
    /// Always on; creating the instance fails if the layer is missing.
    Required,
    /// Off.
    Off,
}

/// Messages a [`ValidationLog`] keeps: the most recent ones for
/// [`ValidationLog::error_messages`], and the first ones of each
/// [`ValidationCapture`].
pub const KEPT_MESSAGES: usize = 64;

/// Messages reported by the validation layer.
#[derive(Debug, Default)]
pub struct ValidationLog {
    errors: AtomicU64,
    warnings: AtomicU64,
    /// The most recent error messages (at most [`KEPT_MESSAGES`]).
    recent: Mutex<VecDeque<String>>,
    /// The open captures: (id, the first messages reported since it opened).
    captures: Mutex<Vec<(u64, Vec<String>)>>,
    next_capture: AtomicU64,
}

impl ValidationLog {
    /// Number of validation errors reported so far.
    pub fn errors(&self) -> u64 {
        // Relaxed: a statistic read by the owner; the message lists below
        // are behind mutexes for anything that needs the contents.
        self.errors.load(Ordering::Relaxed)
    }

    /// Number of validation warnings reported so far.
    pub fn warnings(&self) -> u64 {
        // Relaxed: a statistic, as above.
        self.warnings.load(Ordering::Relaxed)
    }

    /// The most recent error messages (at most [`KEPT_MESSAGES`]), oldest
    /// first.
    pub fn error_messages(&self) -> Vec<String> {
        self.recent
            .lock()
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Starts collecting the error messages reported from now on (by any
    /// thread using the instance) until the capture is finished: a call's
    /// own messages, whatever the instance logged before.
    pub fn capture(&self) -> ValidationCapture<'_> {
        // Relaxed: only uniqueness of the id matters.
        let id = self.next_capture.fetch_add(1, Ordering::Relaxed);
        lock(&self.captures).push((id, Vec::new()));
        ValidationCapture { log: self, id }
    }

    /// Records an error message: counted, kept among the recent ones and in
    /// every open capture (the first [`KEPT_MESSAGES`] of each).
    pub(crate) fn record_error(&self, message: String) {
        // Relaxed: a counter; readers only need an eventually exact count.
        self.errors.fetch_add(1, Ordering::Relaxed);
        for (_, m) in lock(&self.captures).iter_mut() {
            if m.len() < KEPT_MESSAGES {
                m.push(message.clone());
            }
        }
        let mut recent = lock(&self.recent);
        if recent.len() == KEPT_MESSAGES {
            recent.pop_front();
        }
        recent.push_back(message);
    }

    /// Records a warning (counted only).
    pub(crate) fn record_warning(&self) {
        // Relaxed: a counter, as above.
        self.warnings.fetch_add(1, Ordering::Relaxed);
    }
}

/// A mutex's contents, also after a panic elsewhere poisoned it (the lists
/// stay consistent: every update is one push or pop).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The error messages reported while it is open ([`ValidationLog::capture`]).
#[derive(Debug)]
pub struct ValidationCapture<'a> {
    log: &'a ValidationLog,
    id: u64,
}

impl ValidationCapture<'_> {
    /// Closes the capture: the first [`KEPT_MESSAGES`] error messages
    /// reported while it was open.
    pub fn finish(self) -> Vec<String> {
        self.take()
    }

    fn take(&self) -> Vec<String> {
        let mut captures = lock(&self.log.captures);
        match captures.iter().position(|(id, _)| *id == self.id) {
            Some(i) => captures.swap_remove(i).1,
            None => Vec::new(),
        }
    }
}

impl Drop for ValidationCapture<'_> {
    fn drop(&mut self) {
        // After `finish` this finds nothing; otherwise (a panic) it closes
        // the capture so that the log does not keep collecting for it.
        self.take();
    }
}

/// A Vulkan instance with the loader that created it.
pub struct Instance {
    entry: ash::Entry,
    raw: ash::Instance,
    debug: Option<(debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    // Boxed so that its address, handed to the debug callback, is stable.
    log: Box<ValidationLog>,
    validation_on: bool,
    api_version: u32,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("validation", &self.validation_on)
            .field("api_version", &version_string(self.api_version))
            .finish()
    }
}

unsafe extern "system" fn debug_callback(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: `user` is the address of the instance's boxed `ValidationLog`,
    // which outlives the messenger (the messenger is destroyed first in Drop);
    // `data` and its message are valid for the duration of the callback, as the
    // Vulkan spec guarantees for debug-utils callbacks.
    let (log, message) = unsafe {
        let log = &*(user as *const ValidationLog);
        let message = if data.is_null() || (*data).p_message.is_null() {
            String::from("(no message)")
        } else {
            CStr::from_ptr((*data).p_message)
                .to_string_lossy()
                .into_owned()
        };
        (log, message)
    };
    if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) {
        tracing::error!(target: "coexec::validation", "{message}");
        log.record_error(message);
    } else if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::WARNING) {
        log.record_warning();
        tracing::warn!(target: "coexec::validation", "{message}");
    }
    vk::FALSE
}

/// Formats a packed Vulkan version.
pub fn version_string(v: u32) -> String {
    format!(
        "{}.{}.{}",
        vk::api_version_major(v),
        vk::api_version_minor(v),
        vk::api_version_patch(v)
    )
}

/// The API version to ask the loader for: the highest it offers, up to
/// `cap` (at most 1.3); [`Error::LoaderTooOld`] below 1.1.
fn instance_version(loader_version: u32, cap: u32) -> Result<u32> {
    if loader_version < vk::API_VERSION_1_1 {
        return Err(Error::LoaderTooOld {
            version: version_string(loader_version),
        });
    }
    Ok(loader_version
        .min(vk::API_VERSION_1_3)
        .min(cap.max(vk::API_VERSION_1_1)))
}

/// Whether to turn the validation layer on, given whether it is installed
/// and whether the environment asks for it (`COEXEC_VALIDATION=1`):
/// [`Error::ValidationLayerMissing`] when it was required and is missing,
/// a warning when the environment asked for a missing one.
fn validation_wanted(validation: Validation, layer_present: bool, env_on: bool) -> Result<bool> {
    let wanted = match validation {
        Validation::FromEnv => env_on,
        Validation::IfAvailable => layer_present,
        Validation::Required => true,
        Validation::Off => false,
    };
    if wanted && !layer_present {
        if validation == Validation::Required {
            return Err(Error::ValidationLayerMissing);
        }
        tracing::warn!("COEXEC_VALIDATION=1 but the validation layer is not installed");
    }
    Ok(wanted && layer_present)
}

impl Instance {
    /// Loads the Vulkan loader and creates an instance for Vulkan 1.1 or newer
    /// (the highest the loader offers, up to 1.3).
    pub fn new(validation: Validation) -> Result<Instance> {
        Self::with_api_cap(validation, vk::API_VERSION_1_3)
    }

    /// As [`Instance::new`], for a Vulkan version of at most `cap` (at
    /// least 1.1): what a device may be asked is capped by it, and the
    /// validation layer checks that nothing newer is used.
    pub fn with_api_cap(validation: Validation, cap: u32) -> Result<Instance> {
        // SAFETY: loading the system Vulkan loader runs its initialisers; the
        // loader is a well-behaved shared library with no preconditions.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| Error::NoLoader(Box::new(e)))?;
        // SAFETY: plain query through a loaded entry.
        let loader_version = unsafe { entry.try_enumerate_instance_version() }
            .call("vkEnumerateInstanceVersion")?
            .unwrap_or(vk::API_VERSION_1_0);
        let api_version = instance_version(loader_version, cap)?;

        // SAFETY: plain query through a loaded entry.
        let layers = unsafe { entry.enumerate_instance_layer_properties() }
            .call("vkEnumerateInstanceLayerProperties")?;
        let layer_present = layers
            .iter()
            .any(|l| l.layer_name_as_c_str().ok() == Some(VALIDATION_LAYER));
        let validation_on = validation_wanted(
            validation,
            layer_present,
            std::env::var("COEXEC_VALIDATION").is_ok_and(|v| v == "1"),
        )?;

        let app = vk::ApplicationInfo::default()
            .application_name(c"coexec")
            .engine_name(c"coexec")
            .api_version(api_version);
        let layer_names = [VALIDATION_LAYER.as_ptr()];
        let ext_names = [debug_utils::NAME.as_ptr()];
        let mut info = vk::InstanceCreateInfo::default().application_info(&app);
        // `COEXEC_VALIDATION_SYNC=1`: the layer's synchronization
        // validation too (hazards between submissions and queues).
        let sync_features = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
        let mut features =
            vk::ValidationFeaturesEXT::default().enabled_validation_features(&sync_features);
        if validation_on {
            info = info
                .enabled_layer_names(&layer_names)
                .enabled_extension_names(&ext_names);
            if std::env::var("COEXEC_VALIDATION_SYNC").is_ok_and(|v| v == "1") {
                info = info.push_next(&mut features);
            }
        }
        // SAFETY: `info` and everything it points to live until the call returns.
        let raw = match unsafe { entry.create_instance(&info, None) } {
            Ok(raw) => raw,
            Err(vk::Result::ERROR_INCOMPATIBLE_DRIVER) => {
                return Err(Error::NoDevice(
                    "no Vulkan driver is installed (e.g. apt install mesa-vulkan-drivers)".into(),
                ))
            }
            Err(r) => return Err(crate::error::VkError::from_result("vkCreateInstance", r).into()),
        };

        let log = Box::<ValidationLog>::default();
        let debug = if validation_on {
            let loader = debug_utils::Instance::new(&entry, &raw);
            let messenger_info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::ERROR
                        | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                        | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
                )
                .pfn_user_callback(Some(debug_callback))
                .user_data(&*log as *const ValidationLog as *mut c_void);
            // SAFETY: the extension was enabled above; the user-data pointer
            // stays valid until the messenger is destroyed in Drop.
            match unsafe { loader.create_debug_utils_messenger(&messenger_info, None) } {
                Ok(m) => Some((loader, m)),
                Err(r) => {
                    // SAFETY: nothing was created from `raw` yet.
                    unsafe { raw.destroy_instance(None) };
                    return Err(
                        VkResultExt::<()>::call(Err(r), "vkCreateDebugUtilsMessengerEXT")
                            .unwrap_err()
                            .into(),
                    );
                }
            }
        } else {
            None
        };

        Ok(Instance {
            entry,
            raw,
            debug,
            log,
            validation_on,
            api_version,
        })
    }

    /// The ash entry (loader functions).
    pub fn entry(&self) -> &ash::Entry {
        &self.entry
    }

    /// The ash instance.
    pub fn raw(&self) -> &ash::Instance {
        &self.raw
    }

    /// The instance's API version.
    pub fn api_version(&self) -> u32 {
        self.api_version
    }

    /// Whether the validation layer is on.
    pub fn validation_enabled(&self) -> bool {
        self.validation_on
    }

    /// What the validation layer reported so far.
    pub fn validation_log(&self) -> &ValidationLog {
        &self.log
    }

    /// Every physical device coexec can use (Vulkan 1.1 or newer with a
    /// compute queue; see `unusable_reason`). Each
    /// keeps its [`index`](super::PhysicalDeviceInfo::index) in Vulkan's
    /// enumeration order, the one numbering of devices coexec uses.
    pub fn physical_devices(&self) -> Result<Vec<super::PhysicalDeviceInfo>> {
        let mut devs = self.all_physical_devices()?;
        devs.retain(|d| d.unusable_reason().is_none());
        Ok(devs)
    }

    /// Every physical device, usable or not
    /// ([`unusable_reason`](super::PhysicalDeviceInfo::unusable_reason)),
    /// in Vulkan's enumeration order.
    pub fn all_physical_devices(&self) -> Result<Vec<super::PhysicalDeviceInfo>> {
        // SAFETY: plain query on a live instance.
        let raw =
            unsafe { self.raw.enumerate_physical_devices() }.call("vkEnumeratePhysicalDevices")?;
        Ok(raw
            .into_iter()
            .enumerate()
            .map(|(i, pd)| super::PhysicalDeviceInfo::query(self, pd, i))
            .collect())
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some((loader, messenger)) = self.debug.take() {
            // SAFETY: the messenger was created from this instance and is
            // destroyed exactly once, before the instance.
            unsafe { loader.destroy_debug_utils_messenger(messenger, None) };
        }
        // SAFETY: every child object (devices) holds an Arc to this instance,
        // so none is alive when the last reference drops.
        unsafe { self.raw.destroy_instance(None) };
    }
}

#[cfg(test)]
mod tests {
    use super::{instance_version, validation_wanted, Validation, ValidationLog, KEPT_MESSAGES};
    use crate::error::Error;
    use ash::vk;

    /// An old loader and a missing required layer are errors of their own,
    /// not "no Vulkan device".
    #[test]
    fn old_loaders_and_missing_layers_have_their_own_errors() {
        let top = vk::API_VERSION_1_3;
        match instance_version(vk::API_VERSION_1_0, top) {
            Err(Error::LoaderTooOld { version }) => assert_eq!(version, "1.0.0"),
            other => panic!("expected LoaderTooOld, got {other:?}"),
        }
        assert_eq!(
            instance_version(vk::make_api_version(0, 1, 4, 300), top).unwrap(),
            vk::API_VERSION_1_3
        );
        assert_eq!(
            instance_version(vk::API_VERSION_1_2, top).unwrap(),
            vk::API_VERSION_1_2
        );
        assert_eq!(
            instance_version(vk::API_VERSION_1_1, top).unwrap(),
            vk::API_VERSION_1_1
        );
        // A cap (driver emulation) lowers it, never below 1.1.
        assert_eq!(
            instance_version(vk::API_VERSION_1_3, vk::API_VERSION_1_1).unwrap(),
            vk::API_VERSION_1_1
        );
        assert_eq!(
            instance_version(vk::API_VERSION_1_3, vk::API_VERSION_1_0).unwrap(),
            vk::API_VERSION_1_1
        );
        assert!(matches!(
            validation_wanted(Validation::Required, false, false),
            Err(Error::ValidationLayerMissing)
        ));
        assert!(validation_wanted(Validation::Required, true, false).unwrap());
        // Asked for by the environment but missing: off, with a warning.
        assert!(!validation_wanted(Validation::FromEnv, false, true).unwrap());
        assert!(validation_wanted(Validation::FromEnv, true, true).unwrap());
        assert!(!validation_wanted(Validation::FromEnv, true, false).unwrap());
        assert!(!validation_wanted(Validation::IfAvailable, false, true).unwrap());
        assert!(!validation_wanted(Validation::Off, true, true).unwrap());
    }

    /// With the layer search path pointing nowhere, requiring validation
    /// fails with its own error (in a child process, whose environment
    /// says so).
    #[test]
    fn required_validation_without_the_layer_is_its_own_error() {
        const NAME: &str =
            "vk::instance::tests::required_validation_without_the_layer_is_its_own_error";
        if std::env::var_os("COEXEC_TEST_NO_LAYERS").is_none() {
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", NAME, "--nocapture"])
                .env("COEXEC_TEST_NO_LAYERS", "1")
                .env("VK_LAYER_PATH", "/nonexistent/coexec-no-layers")
                .env_remove("VK_ADD_LAYER_PATH")
                .status()
                .unwrap();
            assert!(status.success(), "child: {status}");
            return;
        }
        match super::Instance::new(Validation::Required) {
            Err(Error::ValidationLayerMissing) => {}
            Err(Error::NoLoader(e)) => eprintln!("skipping: no loader ({e})"),
            Ok(_) => eprintln!("skipping: the layer is found without VK_LAYER_PATH"),
            Err(e) => panic!("expected ValidationLayerMissing, got {e}"),
        }
    }

    /// A call gets its own messages however many the instance logged
    /// before, and at most the first KEPT_MESSAGES of them; the count is
    /// exact.
    #[test]
    fn captures_keep_the_messages_of_their_call() {
        let log = ValidationLog::default();
        for i in 0..100 {
            log.record_error(format!("earlier {i}"));
        }
        let call = log.capture();
        log.record_error("this call's".into());
        assert_eq!(call.finish(), vec!["this call's".to_string()]);
        let big = log.capture();
        let nested = log.capture();
        for i in 0..(KEPT_MESSAGES + 10) {
            log.record_error(format!("big {i}"));
        }
        let m = big.finish();
        assert_eq!(m.len(), KEPT_MESSAGES);
        assert_eq!(m[0], "big 0");
        assert_eq!(nested.finish().len(), KEPT_MESSAGES);
        assert_eq!(log.errors(), 101 + KEPT_MESSAGES as u64 + 10);
        let recent = log.error_messages();
        assert_eq!(recent.len(), KEPT_MESSAGES);
        assert_eq!(
            recent.last().unwrap(),
            &format!("big {}", KEPT_MESSAGES + 9)
        );
        // A capture dropped without finishing (a panic) is closed.
        drop(log.capture());
        assert!(super::lock(&log.captures).is_empty());
    }
}
