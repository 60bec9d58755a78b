//! SPIR-V figures of a variant, and its files for inspection: the GLSL, the
//! SPIR-V and, where `spirv-dis` is installed, its disassembly.

use serde::Serialize;
use std::path::Path;
use std::process::Command;

/// Opcode counts of one module (SPIR-V specification, section 3.52).
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Stats {
    /// Module size, bytes.
    pub bytes: usize,
    /// Lines of `spirv-dis` output (`None`: not installed or failed).
    pub dis_lines: Option<usize>,
    /// `OpLoad`.
    pub loads: usize,
    /// `OpStore`.
    pub stores: usize,
    /// `OpLoopMerge`.
    pub loops: usize,
    /// `OpLoopMerge`s whose control asks for unrolling (bit 0x1).
    pub loops_unroll: usize,
    /// `OpLoopMerge`s whose control forbids it (bit 0x2).
    pub loops_dont_unroll: usize,
    /// `OpVariable`s in the Function storage class (7).
    pub function_vars: usize,
    /// `OpVariable`s in the Workgroup storage class (4).
    pub workgroup_vars: usize,
    /// `OpDecorate ... RelaxedPrecision` (decoration 0).
    pub relaxed: usize,
    /// `OpExtInst`s (GLSL.std.450 calls: exp, sqrt, fma, max...).
    pub ext_insts: usize,
}

/// Counts the opcodes of `words` (a module the engine already accepted).
pub(crate) fn stats(words: &[u32]) -> Stats {
    let mut s = Stats {
        bytes: words.len() * 4,
        ..Stats::default()
    };
    let mut at = 5; // after the header
    while at < words.len() {
        let (count, op) = ((words[at] >> 16) as usize, words[at] & 0xffff);
        let arg = |k: usize| words.get(at + k).copied().unwrap_or(u32::MAX);
        match op {
            61 => s.loads += 1,
            62 => s.stores += 1,
            12 => s.ext_insts += 1,
            246 => {
                s.loops += 1;
                s.loops_unroll += usize::from(arg(3) & 1 != 0);
                s.loops_dont_unroll += usize::from(arg(3) & 2 != 0);
            }
            59 if arg(3) == 7 => s.function_vars += 1,
            59 if arg(3) == 4 => s.workgroup_vars += 1,
            71 if arg(2) == 0 => s.relaxed += 1,
            _ => {}
        }
        at += count.max(1);
    }
    s
}

/// Writes `<dir>/<name>.comp` (when there is GLSL), `<name>.spv` and, with
/// `spirv-dis` on the PATH, `<name>.spvasm`; returns the disassembly's line
/// count. File errors are reported and skipped: the dump is a by-product.
pub(crate) fn write(dir: &Path, name: &str, glsl: Option<&str>, words: &[u32]) -> Option<usize> {
    let attempt = || -> std::io::Result<Option<usize>> {
        std::fs::create_dir_all(dir)?;
        if let Some(src) = glsl {
            std::fs::write(dir.join(format!("{name}.comp")), src)?;
        }
        let spv = dir.join(format!("{name}.spv"));
        std::fs::write(&spv, bytemuck::cast_slice::<u32, u8>(words))?;
        let out = match Command::new("spirv-dis").arg(&spv).output() {
            Ok(out) if out.status.success() => out.stdout,
            _ => return Ok(None),
        };
        std::fs::write(dir.join(format!("{name}.spvasm")), &out)?;
        Ok(Some(out.iter().filter(|&&b| b == b'\n').count()))
    };
    attempt().unwrap_or_else(|e| {
        eprintln!("dump of {name} in {}: {e}", dir.display());
        None
    })
}
