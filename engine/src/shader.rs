//! GLSL to SPIR-V at run time, through shaderc (the same compiler the build
//! uses for `shaders/*.comp`). Without the cargo feature `glsl` (the lean
//! build) [`compile_glsl`] returns [`Error::GlslUnsupported`].

use crate::error::{Error, Result};

/// How hard shaderc's SPIR-V optimizer works on a runtime-compiled shader
/// (shaderc's `OptimizationLevel`). The driver compiles the SPIR-V again, so
/// the level mostly changes what the driver is handed, not the final code;
/// it is here to compare the two (see `examples/binomial_variants`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OptLevel {
    /// No SPIR-V optimization: glslang's output as it is.
    Zero,
    /// Optimize for SPIR-V size.
    Size,
    /// Optimize for performance: what [`compile_glsl`] and the build's
    /// `shaders/*.comp` use.
    #[default]
    Performance,
}

#[cfg(feature = "glsl")]
impl OptLevel {
    fn to_shaderc(self) -> shaderc::OptimizationLevel {
        match self {
            OptLevel::Zero => shaderc::OptimizationLevel::Zero,
            OptLevel::Size => shaderc::OptimizationLevel::Size,
            OptLevel::Performance => shaderc::OptimizationLevel::Performance,
        }
    }
}

/// Compiles a GLSL compute shader to SPIR-V words for Vulkan 1.1 (SPIR-V 1.3,
/// which every device coexec uses accepts), optimized
/// at [`OptLevel::Performance`]; see [`compile_glsl_with`].
pub fn compile_glsl(source: &str, name: &str) -> Result<Vec<u32>> {
    compile_glsl_with(source, name, OptLevel::Performance)
}

/// Compiles a GLSL compute shader to SPIR-V words for Vulkan 1.1 (SPIR-V 1.3,
/// which every device coexec uses accepts), with
/// shaderc's optimizer at `level`.
///
/// Vulkan 1.1 (SPIR-V 1.3) is targeted on purpose: every device coexec
/// uses takes it, and SPIR-V for Vulkan 1.3 expresses work-group sizes with
/// `LocalSizeId`, which needs maintenance4.
/// `name` appears in error messages. A compile error comes back as
/// [`Error::ShaderCompile`] with the compiler's text; a build without the
/// cargo feature `glsl` returns [`Error::GlslUnsupported`] for every source.
#[cfg(not(feature = "glsl"))]
pub fn compile_glsl_with(_source: &str, _name: &str, _level: OptLevel) -> Result<Vec<u32>> {
    Err(Error::GlslUnsupported)
}

/// Compiles a GLSL compute shader to SPIR-V words for Vulkan 1.1 (SPIR-V 1.3,
/// which every device coexec uses accepts), with
/// shaderc's optimizer at `level`.
///
/// Vulkan 1.1 (SPIR-V 1.3) is targeted on purpose: every device coexec
/// uses takes it, and SPIR-V for Vulkan 1.3 expresses work-group sizes with
/// `LocalSizeId`, which needs maintenance4.
/// `name` appears in error messages. A compile error comes back as
/// [`Error::ShaderCompile`] with the compiler's text; a build without the
/// cargo feature `glsl` returns [`Error::GlslUnsupported`] for every source.
#[cfg(feature = "glsl")]
pub fn compile_glsl_with(source: &str, name: &str, level: OptLevel) -> Result<Vec<u32>> {
    // shaderc hands both strings to C: an interior NUL would end them early
    // (and makes shaderc-rs panic), so refuse it with a clear error.
    if let Some(at) = source.find('\0') {
        return Err(Error::ShaderCompile(format!(
            "{name}: the GLSL source contains a NUL byte at offset {at}"
        )));
    }
    if name.contains('\0') {
        return Err(Error::ShaderCompile(
            "the shader name contains a NUL byte".into(),
        ));
    }
    check_version_directive(source, name)?;
    // shaderc aborts the process (a failed assertion in glslang's message
    // formatting) when a source with an empty name fails to compile.
    let name = if name.is_empty() { "shader.comp" } else { name };
    // Backstop: whatever else makes the compiler's Rust wrapper panic comes
    // back as a compile error, never as a panic in the caller.
    std::panic::catch_unwind(|| compile_unchecked(source, name, level)).unwrap_or_else(|p| {
        let why = crate::error::panic_message(&*p);
        Err(Error::ShaderCompile(format!(
            "{name}: the compiler failed: {why}"
        )))
    })
}

/// Refuses a source without a `#version` directive (or an empty one) before
/// shaderc sees it: glslang, given such a source, prints thousands of lines
/// (its built-in symbol tables) to the process's standard output, which a
/// library must never write to. The directive may follow comments and blank
/// lines, as GLSL allows.
#[cfg(feature = "glsl")]
fn check_version_directive(source: &str, name: &str) -> Result<()> {
    let directive = |line: &str| {
        line.trim_start()
            .strip_prefix('#')
            .is_some_and(|rest| rest.trim_start().starts_with("version"))
    };
    if source.trim().is_empty() {
        return Err(Error::ShaderCompile(format!(
            "{name}: the GLSL source is empty"
        )));
    }
    if !source.lines().any(directive) {
        return Err(Error::ShaderCompile(format!(
            "{name}: the GLSL source has no #version directive; start it with e.g. `#version 450`"
        )));
    }
    Ok(())
}

#[cfg(feature = "glsl")]
fn compile_unchecked(source: &str, name: &str, level: OptLevel) -> Result<Vec<u32>> {
    let compiler = shaderc::Compiler::new()
        .map_err(|e| Error::ShaderCompile(format!("shaderc is unavailable: {e}")))?;
    let mut options = shaderc::CompileOptions::new()
        .map_err(|e| Error::ShaderCompile(format!("shaderc options: {e}")))?;
    options.set_target_env(
        shaderc::TargetEnv::Vulkan,
        shaderc::EnvVersion::Vulkan1_1 as u32,
    );
    options.set_optimization_level(level.to_shaderc());
    options.set_include_callback(|file, _, _, _| resolve_include(file));
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

/// The includes runtime-compiled GLSL may use: the engine's own helpers
/// (`coexec_reduce.glsl`, see [`crate::reduce`]); any other name is a
/// compile error.
#[cfg(feature = "glsl")]
fn resolve_include(file: &str) -> std::result::Result<shaderc::ResolvedInclude, String> {
    match file {
        "coexec_reduce.glsl" => Ok(shaderc::ResolvedInclude {
            resolved_name: file.to_string(),
            content: crate::exec::reduce::GLSL_INCLUDE.to_string(),
        }),
        other => Err(format!(
            "unknown include {other:?}: runtime GLSL may include \"coexec_reduce.glsl\" only"
        )),
    }
}

#[cfg(all(test, not(feature = "glsl")))]
mod lean_tests {
    use super::*;

    #[test]
    fn without_the_glsl_feature_every_source_is_unsupported() {
        for src in [
            "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}",
            "",
            "\0",
        ] {
            let err = compile_glsl(src, "k.comp").unwrap_err();
            assert!(matches!(err, Error::GlslUnsupported), "{err}");
            assert!(err.to_string().contains("feature `glsl`"), "{err}");
        }
    }
}

#[cfg(all(test, feature = "glsl"))]
mod tests {
    use super::*;

    const LOOP: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer B { float b[]; };
void main() {
    float v[16];
    float unused = 3.0;
    for (int j = 0; j < 16; j++) v[j] = float(j) * b[j];
    float s = 0.0;
    for (int j = 0; j < 16; j++) s += v[j];
    b[gl_GlobalInvocationID.x] = s;
}";

    #[test]
    fn optimization_levels_give_different_valid_spirv() {
        let zero = compile_glsl_with(LOOP, "l.comp", OptLevel::Zero).unwrap();
        let size = compile_glsl_with(LOOP, "l.comp", OptLevel::Size).unwrap();
        let perf = compile_glsl_with(LOOP, "l.comp", OptLevel::Performance).unwrap();
        // SPIR-V magic number, and every level reflects to the same interface.
        for w in [&zero, &size, &perf] {
            assert_eq!(w[0], 0x0723_0203);
            let r = crate::vk::spirv::reflect(w, "main").unwrap();
            assert_eq!(r.local_size, [64, 1, 1]);
        }
        // Unoptimized SPIR-V keeps glslang's loads, stores and names.
        assert!(zero.len() > size.len(), "{} vs {}", zero.len(), size.len());
        assert!(zero.len() > perf.len(), "{} vs {}", zero.len(), perf.len());
        // The default is what compile_glsl uses.
        assert_eq!(OptLevel::default(), OptLevel::Performance);
        assert_eq!(compile_glsl(LOOP, "l.comp").unwrap(), perf);
    }

    #[test]
    fn every_level_reports_compile_errors() {
        for level in [OptLevel::Zero, OptLevel::Size, OptLevel::Performance] {
            let err = compile_glsl_with("#version 450\nvoid main() { x = 1; }", "e.comp", level)
                .unwrap_err();
            assert!(matches!(err, Error::ShaderCompile(_)), "{err}");
        }
    }

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

    #[test]
    fn nul_bytes_are_an_error_not_a_panic() {
        // Found by the glsl_compile fuzz target (shaderc-rs panicked).
        let err = compile_glsl("#version 450\n// x\0\0\nvoid main() {}", "nul.comp").unwrap_err();
        assert!(
            matches!(&err, Error::ShaderCompile(m) if m.contains("NUL byte at offset 17")),
            "{err}"
        );
        assert!(compile_glsl("#version 450\nvoid main() {}", "a\0b").is_err());
    }

    #[test]
    fn a_source_without_version_is_refused_before_the_compiler() {
        for src in ["", "  \n", "layout(local_size_x = 1) in;\nvoid main() {}"] {
            let err = compile_glsl(src, "nov.comp").unwrap_err();
            assert!(
                matches!(&err, Error::ShaderCompile(m) if m.starts_with("nov.comp: the GLSL source")),
                "{err}"
            );
        }
        // After comments and blank lines, and with spaces after '#', it counts.
        let ok = "// a kernel\n\n#  version 450\nlayout(local_size_x = 1) in;\nvoid main() {}";
        assert!(compile_glsl(ok, "v.comp").is_ok());
    }

    #[test]
    fn empty_name_with_a_compile_error_is_an_error_not_an_abort() {
        // Found by the C ABI fuzz target: shaderc aborted the process.
        let err = compile_glsl("#version 450\nvoid main() { nope(); }", "").unwrap_err();
        assert!(
            matches!(&err, Error::ShaderCompile(m) if m.contains("shader.comp")),
            "{err}"
        );
    }
}
