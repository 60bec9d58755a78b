//! Arbitrary bytes as SPIR-V: reading the module's interface must return a
//! value or a typed error, never panic, hang or read out of bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(words) = coexec_engine::vk::spirv::words_from_bytes(data) {
        let _ = coexec_engine::vk::spirv::reflect(&words, "main");
    }
});
