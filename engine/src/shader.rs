//! GLSL to SPIR-V at run time, through shaderc (the same compiler the build
//! uses for `shaders/*.comp`).

use crate::error::{Error, Result};

/// Compiles a GLSL compute shader to SPIR-V words for Vulkan 1.2.
///
/// Vulkan 1.2 (SPIR-V 1.5) is targeted on purpose: SPIR-V for Vulkan 1.3
/// expresses work-group sizes with `LocalSizeId`, which needs maintenance4.
/// `name` appears in error messages. A compile error comes back as
/// [`Error::ShaderCompile`] with the compiler's text.
pub fn compile_glsl(source: &str, name: &str) -> Result<Vec<u32>> {
    let compiler = shaderc::Compiler::new()
        .map_err(|e| Error::ShaderCompile(format!("shaderc is unavailable: {e}")))?;
    let mut options = shaderc::CompileOptions::new()
        .map_err(|e| Error::ShaderCompile(format!("shaderc options: {e}")))?;
    options.set_target_env(
        shaderc::TargetEnv::Vulkan,
        shaderc::EnvVersion::Vulkan1_2 as u32,
    );
    options.set_optimization_level(shaderc::OptimizationLevel::Performance);
    let artifact = compiler
        .compile_into_spirv(
            source,
            shaderc::ShaderKind::Compute,
            name,
            "main",
            Some(&options),
        )
        .map_err(|e| Error::ShaderCompile(e.to_string()))?;
    Ok(artifact.as_binary().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compile_error_is_readable_text() {
        let err =
            compile_glsl("#version 450\nvoid main() { undeclared = 1; }", "bad.comp").unwrap_err();
        let Error::ShaderCompile(msg) = err else {
            panic!("wrong error kind")
        };
        assert!(msg.contains("undeclared"), "{msg}");
        assert!(msg.contains("bad.comp"), "{msg}");
    }
}
