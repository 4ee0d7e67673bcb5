//! Puts the package's memory.x and an empty device.x where the linker finds them
//! (cortex-m-rt's link.x includes both). Shared by the firmware images beside this one
//! (`build = "../firmware/build.rs"`): each package's own memory.x is used.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let package = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    fs::copy(package.join("memory.x"), out.join("memory.x")).expect("copy memory.x");
    // cortex-m-rt's `device` feature includes device.x: no named interrupt handlers here (the
    // vector table's interrupt part is each image's `__INTERRUPTS`).
    fs::write(out.join("device.x"), b"").expect("write device.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=build.rs");
}
