// SPDX-License-Identifier: GPL-2.0-only
//! Builds bpf/main.bpf.c into a libbpf-rs skeleton (OUT_DIR/bpf_skel.rs) and
//! runs bindgen on bpf/intf.h (OUT_DIR/bpf_intf.rs), both with scx_cargo.
//!
//! The BPF compiler is `$BPF_CLANG` when set; otherwise the first of clang-21
//! .. clang-18 and clang found on PATH (BPF needs clang >= 18).

use std::process::Command;

fn clang_works(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn main() {
    println!("cargo:rerun-if-changed=bpf/main.bpf.c");
    println!("cargo:rerun-if-changed=bpf/intf.h");
    if std::env::var_os("BPF_CLANG").is_none() {
        let found = ["clang-21", "clang-20", "clang-19", "clang-18", "clang"]
            .into_iter()
            .find(|c| clang_works(c));
        if let Some(clang) = found {
            // SAFETY: build scripts are single-threaded at this point.
            unsafe { std::env::set_var("BPF_CLANG", clang) };
        }
    }
    scx_cargo::BpfBuilder::new()
        .expect("scx_cargo: BpfBuilder::new")
        .enable_intf("bpf/intf.h", "bpf_intf.rs")
        .enable_skel("bpf/main.bpf.c", "bpf")
        .build()
        .expect("building the BPF skeleton failed (is clang >= 18 installed? run scripts/setup)");
}
