//! Arbitrary text as GLSL: compiling it must give SPIR-V or a readable
//! compile error, never a panic; what compiles must reflect cleanly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = String::from_utf8_lossy(data);
    if let Ok(words) = coexec_engine::shader::compile_glsl(&src, "fuzz.comp") {
        let _ = coexec_engine::vk::spirv::reflect(&words, "main");
    }
});
