// SPDX-License-Identifier: GPL-2.0-only
//! Builds bpf/main.bpf.c into a libbpf-rs skeleton (OUT_DIR/bpf_skel.rs) and
//! runs bindgen on bpf/intf.h (OUT_DIR/bpf_intf.rs), both with scx_cargo.
//!
//! The BPF compiler is `$BPF_CLANG` when set; otherwise the first of clang-21
//! .. clang-18 and clang found on PATH (BPF needs clang >= 18).
//!
//! It also sets `SCX_FLOOR_VERSION` for the crate: the package version, the
//! commit (`-g` and git's short hash, when built from a git checkout) and
//! the target triple, as sched-ext/scx's tools print theirs.

use std::process::Command;

fn clang_works(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// `-g<short hash>` of HEAD, or nothing outside a git checkout.
fn git_suffix() -> String {
    Command::new("git")
        .args(["rev-parse", "--short=8", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .map(|s| format!("-g{s}"))
        .unwrap_or_default()
}

fn main() {
    println!("cargo:rerun-if-changed=bpf/main.bpf.c");
    println!("cargo:rerun-if-changed=bpf/intf.h");
    // a new commit changes the version (HEAD, or the branch it points to)
    println!("cargo:rerun-if-changed=.git/HEAD");
    if let Ok(head) = std::fs::read_to_string(".git/HEAD") {
        if let Some(r) = head.trim().strip_prefix("ref: ") {
            println!("cargo:rerun-if-changed=.git/{r}");
        }
    }
    println!(
        "cargo:rustc-env=SCX_FLOOR_VERSION={}{} {}",
        std::env::var("CARGO_PKG_VERSION").unwrap_or_default(),
        git_suffix(),
        std::env::var("TARGET").unwrap_or_default()
    );
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
