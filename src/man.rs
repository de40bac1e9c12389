// SPDX-License-Identifier: GPL-2.0-only
//! The manual page, scx_floor(8), generated from the command-line
//! definitions (clap_mangen) with the sections clap does not know: EXIT
//! STATUS, FILES, ENVIRONMENT and SEE ALSO. `scx_floor --man` prints it.

use roff::{bold, italic, roman, Roff};

/// The page in roff: NAME, SYNOPSIS, DESCRIPTION and OPTIONS from `cmd`,
/// then the sections below. Errors: none but those of writing to memory.
pub fn render(cmd: clap::Command) -> std::io::Result<Vec<u8>> {
    let man = clap_mangen::Man::new(cmd).section("8");
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    out.extend_from_slice(sections().as_bytes());
    man.render_version_section(&mut out)?;
    Ok(out)
}

/// One paragraph per (term, text) under a section heading.
fn section(r: &mut Roff, title: &str, items: &[(&str, &str)]) {
    r.control("SH", [title]);
    for (term, text) in items {
        r.control("TP", []).text([bold(*term)]).text([roman(*text)]);
    }
}

fn sections() -> String {
    let mut r = Roff::new();
    section(
        &mut r,
        "EXIT STATUS",
        &[
            (
                "0",
                "Unloaded on SIGINT or SIGTERM, with every task and knob restored; \
                 or --restore found nothing left, or put everything back.",
            ),
            (
                "1",
                "A pre-flight check failed (flags that contradict each other, such as \
                 a runtime above the period; not root, no sched_ext, another scheduler \
                 loaded, isolcpus=, CPUs that are not online; /run/scx_floor/lock still \
                 held after 15 s), the kernel ejected the scheduler (its reason is \
                 printed), or --restore could not put a knob back (it stays journaled). \
                 Nothing is changed when a check fails.",
            ),
            (
                "2",
                "A flag is unknown, malformed or out of range; nothing is changed.",
            ),
        ],
    );
    section(
        &mut r,
        "FILES",
        &[
            (
                "/run/scx_floor/",
                "The state directory, root-only (0700) on tmpfs. lock: one scx_floor, or \
                 the guardian of one that exited, at a time. boosted.v2.journal: every \
                 task boosted and every kernel thread raised, written before the change. \
                 knobs/: the original value of every kernel knob changed. The guardian \
                 (scx-floor-guard), the next start and --restore replay both journals. \
                 Keep it across restarts: a service manager's RuntimeDirectory= would \
                 empty it.",
            ),
            (
                "/sys/kernel/debug/sched/ext_server/cpuN/runtime, period",
                "The kernel's sched_ext dl_server: runtime 0 on each served CPU while \
                 scx_floor serves it, or scx_floor's runtime and period where it hands \
                 the CPU to the kernel; restored on exit. Left alone with \
                 --kernel-server keep.",
            ),
            (
                "/proc/sys/kernel/sched_rt_runtime_us",
                "Set to -1 only with --rt-runtime-unlimited, restored on exit.",
            ),
            (
                "/sys/kernel/sched_ext/state, root/ops",
                "Read before loading: nothing else may be loaded.",
            ),
            (
                "/var/run/scx/root/stats",
                "The stats server's socket (scx_stats, as other sched_ext schedulers \
                 serve theirs), root-only (0600), removed on exit. --monitor reads it; \
                 --help-stats describes its fields.",
            ),
            (
                "/etc/default/scx_floor",
                "The flags scx_floor.service starts it with (SCX_FLOOR_FLAGS).",
            ),
        ],
    );
    section(
        &mut r,
        "ENVIRONMENT",
        &[(
            "SCX_FLOOR_TEST_FAULT",
            "For the project's tests only: breaks one mechanism on purpose (logged as \
             a warning). Leave it unset.",
        )],
    );
    r.control("SH", ["SEE ALSO"]).text([
        italic("chrt"),
        roman("(1), "),
        italic("sched"),
        roman("(7), "),
        italic("systemd.service"),
        roman("(5), "),
        italic("rtla-osnoise"),
        roman("(1), and the project's README.md and docs/."),
    ]);
    r.to_roff()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_page_has_options_exit_status_and_files() {
        use clap::CommandFactory;
        let page = String::from_utf8(super::render(crate::Opts::command()).unwrap()).unwrap();
        for s in [
            "SH NAME",
            "SH OPTIONS",
            "SH \"EXIT STATUS\"",
            "SH FILES",
            "SH ENVIRONMENT",
        ] {
            assert!(page.contains(s), "no {s} in the page");
        }
        assert!(
            page.contains("server\\-runtime\\-us"),
            "an option is missing"
        );
        assert!(page.contains("/run/scx_floor/"));
    }
}
