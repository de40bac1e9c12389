// SPDX-License-Identifier: GPL-2.0-only
//! What the scheduler (`scx_floor`) and its A/B harness (`scx_floor-ab`)
//! share: the system helpers, the pre-flight checks, and the `--stats-json`
//! document the scheduler writes and the harness reads. The scheduler's
//! own modules are in the binary (`main.rs`).

pub mod bpf_intf;
pub mod checks;
pub mod hist;
pub mod slice;
pub mod stats;
pub mod sys;
