//! Puts memory.x and device.x where the linker finds them (cortex-m-rt's link.x includes
//! them).

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(out.join("memory.x"), include_bytes!("memory.x")).expect("write memory.x");
    // cortex-m-rt's `device` feature includes device.x: no named interrupt handlers here (the
    // vector table's interrupt part is `__INTERRUPTS` in main.rs).
    fs::write(out.join("device.x"), b"").expect("write device.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=build.rs");
}
