//! Gives the shared library a soname (`libcoexec.so.<major>`), so programs
//! linked against `libcoexec.so` record the versioned name.

fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcoexec.so.{major}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
