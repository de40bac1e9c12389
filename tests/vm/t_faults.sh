#!/bin/bash
# Faults (issue 6), each while a normal task pinned to CPU 1 is boosted above
# an RR hog there (at SCHED_FIFO: DEADLINE is refused for a pinned task):
# - SIGSTOP of scx_floor (until the kernel ejects it: 10 to 20 s): within 1 s
#   the guardian puts the task back to SCHED_OTHER and the kernel's
#   ext_server runtime back to its saved value (it logs it) so that no boost
#   outlives the stop; the starving task waits until the sched_ext watchdog
#   ejects scx_floor (runnable task stall, 10 s), then the kernel's fair class
#   serves it (>= 20 ms/s asserted); after SIGCONT scx_floor reports the
#   ejection and exits. (A shorter stop: scx_floor resumes and sets the
#   ext_server to 0 again, see policy.rs.)
# - SysRq-S (the kernel ejects every BPF scheduler): scx_floor logs the
#   ejection, restores the task and the knobs, and exits.
# SIGKILL and SIGTERM are t_restore.
source "$(dirname "$0")/lib.sh"
as_controller
orig=$(ext_server_runtime 1)
[ "$orig" != missing ] || fail "no ext_server in debugfs"
other() { [ "$(policy_of "$1")" = SCHED_OTHER ]; }
ext_is() { [ "$(ext_server_runtime 1)" = "$1" ]; }

# --- SIGSTOP
start_floor --server-runtime-us 600000 --server-period-us 1000000
n=$(taskset -c 1 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
wait_spinning 10 "$n" || fail "the normal task did not start spinning"
h=$(rt_hog 1 rr 25 60) || fail "no hog"
wait_fresh_boost "$n" 4 || fail "the normal task was never boosted"
kill -STOP "$FLOOR_PID"
t0=$(date +%s%N)
ms=$(wait_for 1 other "$n") || fail "task still $(policy_of "$n") 1 s after SIGSTOP"
wait_for 1 ext_is "$orig" >/dev/null || fail "ext_server runtime $(ext_server_runtime 1) (saved $orig) while stopped"
note "SIGSTOP during a boost: task SCHED_OTHER within $ms ms, ext_server runtime back to $orig"
# The BPF dispatcher runs on without user space; the pinned task under the
# RT hog waits (7.3's ext_server does not start serving a task that is
# already queued when its runtime is restored) until the sched_ext watchdog
# (10 s) ejects scx_floor and the kernel's fair class and fair_server take over.
wait_for 22 sh -c "[ \"\$(cat $SCX/state)\" = disabled ]" >/dev/null || fail "sched_ext still $(scx_state) 22 s into the stop"
ej=$((($(date +%s%N) - t0) / 1000000))
got=$(ms_per_s "$n" 2)
note "ejected by the watchdog $ej ms into the stop; then the fair class gives the task $got ms/s"
ge "$ej" 9000 || fail "ejected after only $ej ms"
ge "$got" 20 || fail "normal task got $got ms/s after the ejection"
kill -CONT "$FLOOR_PID"
wait "$FLOOR_PID"; rc=$?
other "$n" || fail "task $(policy_of "$n") after exit"
ext_is "$orig" || fail "ext_server $(ext_server_runtime 1) after exit"
grep -hE "stopped|ejected|stall" "$FLOOR_LOG" | head -5 | sed 's/^/    /'
grep -q "scx_floor-guard: scx_floor is stopped: restored [1-9][0-9]* boosted task(s) and 2 kernel knob(s)" "$FLOOR_LOG" ||
	fail "no guardian log line for the stop"
grep -q "the kernel ejected scx_floor" "$FLOOR_LOG" || fail "no log line for the ejection after SIGCONT"
[ "$rc" != 0 ] || fail "scx_floor exited 0 after it was ejected"
note "after SIGCONT: scx_floor reported the ejection and exited ($rc)"
kill -KILL "$h" "$n" 2>/dev/null; wait "$h" "$n" 2>/dev/null

# --- SysRq-S
start_floor --server-runtime-us 600000 --server-period-us 1000000
n=$(taskset -c 1 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
wait_spinning 10 "$n" || fail "the normal task did not start spinning"
h=$(rt_hog 1 rr 25 60) || fail "no hog"
wait_fresh_boost "$n" 4 || fail "the normal task was never boosted"
echo S >/proc/sysrq-trigger
wait "$FLOOR_PID"; rc=$?
ms=$(wait_for 2 other "$n") || fail "task still $(policy_of "$n") after the ejection"
ext_is "$orig" || fail "ext_server $(ext_server_runtime 1) after the ejection (saved $orig)"
[ "$(scx_state)" = disabled ] || fail "sched_ext $(scx_state) after SysRq-S"
grep -E "ejected|SysRq|sysrq" "$FLOOR_LOG" | head -3 | sed 's/^/    /'
grep -q "the kernel ejected scx_floor: restoring" "$FLOOR_LOG" || fail "no log line for the ejection"
[ "$rc" != 0 ] || fail "scx_floor exited 0 after SysRq-S ejected it"
grep -q "sysrq" "$FLOOR_LOG" || fail "the kernel's reason (sysrq) is not in scx_floor's log"
note "SysRq-S during a boost: scx_floor exit $rc, task SCHED_OTHER, ext_server $orig, sched_ext disabled"
kill -KILL "$h" "$n" 2>/dev/null; wait "$h" "$n" 2>/dev/null
exit 0
