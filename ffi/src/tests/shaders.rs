//! The test kernels' shaders: GLSL, and the SPIR-V compiled from it that is
//! checked in under `spv/` for the lean library (no feature `glsl`), which
//! has no runtime GLSL. A test of the default build keeps the two equal;
//! regenerate the SPIR-V with
//! `COEXEC_UPDATE_SPIRV=1 cargo test --release -p coexec-ffi spirv`.

use super::api::ok;
use crate::*;
use std::ffi::{c_void, CStr};

/// One test kernel's shader.
pub(super) struct TestShader {
    /// The kernel's name.
    pub(super) name: &'static CStr,
    /// GLSL source, NUL-terminated for the C ABI.
    pub(super) glsl: &'static str,
    /// The same, compiled ahead of time (`spv/<name>.spv`).
    pub(super) spirv: &'static [u8],
}

/// z = a * x + y over three bindings.
pub(super) const SAXPY: TestShader = TestShader {
    name: c"saxpy",
    glsl: "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Y { float y[]; };
layout(std430, binding = 2) buffer Z { float z[]; };
layout(push_constant) uniform P { float a; uint n; } p;
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) z[i] = p.a * x[i] + y[i]; }\0",
    spirv: include_bytes!("spv/saxpy.spv"),
};

/// y = a * x over two bindings.
pub(super) const SCALE: TestShader = TestShader {
    name: c"scale",
    glsl: "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform P { float a; uint n; } p;
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) y[i] = p.a * x[i]; }\0",
    spirv: include_bytes!("spv/scale.spv"),
};

/// Builds `shader`'s kernel on `e` as C would: from GLSL where the library
/// has it, else from the precompiled SPIR-V. Fails the test on an error.
///
/// # Safety
/// As `coexec_kernel_from_glsl` for `cpu` and `user_data`.
pub(super) unsafe fn kernel(
    e: coexec_engine,
    shader: &TestShader,
    cpu: coexec_cpu_fn,
    user_data: *mut c_void,
) -> coexec_kernel {
    let mut k = coexec_kernel::default();
    #[cfg(feature = "glsl")]
    // SAFETY: NUL-terminated strings; the rest is the caller's contract.
    let status = unsafe {
        coexec_kernel_from_glsl(
            e,
            shader.name.as_ptr(),
            shader.glsl.as_ptr().cast(),
            cpu,
            user_data,
            &mut k,
        )
    };
    #[cfg(not(feature = "glsl"))]
    // SAFETY: the SPIR-V is readable for its length; the rest is the
    // caller's contract.
    let status = unsafe {
        coexec_kernel_from_spirv(
            e,
            shader.name.as_ptr(),
            shader.spirv.as_ptr().cast(),
            shader.spirv.len(),
            cpu,
            user_data,
            &mut k,
        )
    };
    ok(status);
    k
}

#[cfg(feature = "glsl")]
#[test]
fn checked_in_spirv_is_what_the_glsl_compiles_to() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tests/spv");
    let update = std::env::var_os("COEXEC_UPDATE_SPIRV").is_some_and(|v| v == "1");
    for shader in [&SAXPY, &SCALE] {
        let name = shader.name.to_str().unwrap();
        let source = shader.glsl.trim_end_matches('\0');
        let words = ::coexec_engine::shader::compile_glsl(source, name).unwrap();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let path = dir.join(format!("{name}.spv"));
        if update {
            std::fs::write(&path, &bytes).unwrap();
        } else {
            assert!(
                shader.spirv == bytes.as_slice(),
                "{} is stale: regenerate it with\n    \
                 COEXEC_UPDATE_SPIRV=1 cargo test --release -p coexec-ffi spirv\nand commit the result",
                path.display()
            );
        }
    }
}
