//! The checked-in `shaders/spv/*.spv`, the shaders of the lean build (no
//! feature `glsl`), must be exactly what the default build compiles from
//! `shaders/*.comp`, and none may be left over from a removed shader.
//!
//! Regenerate them (after changing a shader) with:
//! `COEXEC_UPDATE_SPIRV=1 cargo test --release --test precompiled_spirv`
#![cfg(feature = "glsl")]

use std::path::Path;

#[test]
fn checked_in_spirv_is_what_the_build_compiles() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders/spv");
    let update = std::env::var_os("COEXEC_UPDATE_SPIRV").is_some_and(|v| v == "1");
    if update {
        std::fs::create_dir_all(&dir).expect("create shaders/spv");
    }
    let mut stale = Vec::new();
    for (name, spirv) in coexec::workloads::spirv::ALL {
        let path = dir.join(format!("{name}.spv"));
        if update {
            std::fs::write(&path, spirv).expect("write a .spv");
        } else if std::fs::read(&path).ok().as_deref() != Some(*spirv) {
            stale.push(path.display().to_string());
        }
    }
    for entry in std::fs::read_dir(&dir).expect("shaders/spv") {
        let path = entry.expect("a directory entry").path();
        let name = path.file_stem().map(|s| s.to_string_lossy().to_string());
        let known = coexec::workloads::spirv::ALL
            .iter()
            .any(|(n, _)| Some(*n) == name.as_deref());
        if !known {
            stale.push(format!(
                "{} (no shaders/*.comp of that name)",
                path.display()
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "stale precompiled SPIR-V: {stale:?}; regenerate with\n    \
         COEXEC_UPDATE_SPIRV=1 cargo test --release --test precompiled_spirv\nand commit the result"
    );
}
