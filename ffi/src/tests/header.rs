//! `include/coexec.h` must be what cbindgen generates from the current
//! sources: this test fails (in CI too) when the checked-in header is stale.
//!
//! Regenerate with:
//! `COEXEC_UPDATE_HEADER=1 cargo test -p coexec-ffi header`

use std::path::Path;

#[test]
fn checked_in_header_is_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen failed");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let path = dir.join("include/coexec.h");
    if std::env::var_os("COEXEC_UPDATE_HEADER").is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).expect("write include/coexec.h");
        return;
    }
    let current = std::fs::read(&path).unwrap_or_default();
    assert!(
        current == generated,
        "ffi/include/coexec.h is stale (or missing): regenerate it with\n    \
         COEXEC_UPDATE_HEADER=1 cargo test -p coexec-ffi header\nand commit the result"
    );
}
