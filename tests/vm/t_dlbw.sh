#!/bin/bash
# SCHED_DEADLINE bandwidth given back (boost::unboost). In kernel-cut mode
# (--rt-runtime-unlimited) every boost is SCHED_DEADLINE; the task served here
# runs 2 ms and sleeps 20 ms, pinned to CPU 1 under an RR 25 hog, so most of
# its boosts end while it sleeps. The kernel keeps a DL task's bandwidth in
# the root domain's admission total (dl_bw->total_bw) after a switch to
# another policy while it sleeps, for good once its 0-lag time has passed;
# scx_floor gives a sleeping boost a zero-bandwidth reservation first.
# Measured before that: total_bw reached 23.8 and 56.6 CPUs during such runs (no
# admission control while sched_rt_runtime_us is -1) and sched_rt_runtime_us
# could not be put back at once on exit (EBUSY, retried).
# Measured after (2026-12-03, 5 runs): 0-4 CPUs, back at exit at once.
# Asserts, sampling total_bw every 100 ms: it never goes below 0 (it did
# when every restore was shrunk, reverted) nor above 6 CPUs; the task is
# served; at exit sched_rt_runtime_us is restored within one server period
# (an EBUSY wait while a boost runnable at exit holds its bandwidth to its
# 0-lag time is allowed, and measured) and total_bw is back to its value
# before the start (+-64) within 3 s.
source "$(dirname "$0")/lib.sh"
as_controller
bw0=$(dl_total_bw)
rt0=$(cat /proc/sys/kernel/sched_rt_runtime_us)
start_floor --server-runtime-us 50000 --server-period-us 1000000 --rt-runtime-unlimited --boost deadline
seq=$(enable_seq)
n=$(sleeper 1)
sleep 2
h=$(rt_hog 1 rr 25 40) || fail "no hog"
max=0 min=0
a=$(run_ns "$n"); t0=$(date +%s%N)
for i in $(seq 80); do
	b=$(dl_total_bw); [ "$b" -gt "$max" ] && max=$b; [ "$b" -lt "$min" ] && min=$b
	sleep 0.1
done
# ms/s over the loop (80 samples of 0.1 s take longer under TCG)
got=$(awk -v d="$(( $(run_ns "$n") - a ))" -v t="$(( $(date +%s%N) - t0 ))" 'BEGIN { printf "%.1f", d * 1000 / t }')
assert_not_ejected "$seq"
stop_floor || fail "scx_floor exited $?"
kill -KILL "$h" "$n" 2>/dev/null; wait "$h" "$n" 2>/dev/null
bw_back() { local b; b=$(dl_total_bw); [ "$b" -le $((bw0 + 64)) ] && [ "$b" -ge $((bw0 - 64)) ]; }
ms=$(wait_for 3 bw_back) ||
	fail "DL admission total $(dl_total_bw) 3 s after exit (before the start: $bw0)"
note "sleeper served $got ms/s; DL admission total at most $max ($(awk -v m="$max" 'BEGIN { printf "%.2f", m / 1048576 }') CPUs) during the run, back to $bw0 $ms ms after exit"
figure sleeper_ms_per_s "$got" ">= 2"
figure dl_total_bw_max "$max" "<= 6291456"
figure dl_bw_back_ms "$ms" "<= 3000"
[ "$min" -ge 0 ] || fail "DL admission total went negative ($min) during the run: an accounting error"
# Each kernel-cut boost counts 1 CPU (runtime = deadline). Working runs:
# at most 4 (the boost, and earlier boosts of the same window whose task
# woke between the state check and the restore: not shrunk, counted to their
# 0-lag time at the window's end). A leak grows for good: 23.8 and 56.6.
le "$max" $((6 * 1048576)) || fail "DL admission total reached $max during the run (> 6 CPUs)"
# Kernel-cut mode defers the server in every period (server.rs, `running`):
# served only inside the last 50 ms of each, 109-118 ms in 8 s before this
# figure was per second. (Served at once after the first activation, as in
# FIFO mode: 54 ms/s, but once total_bw ended 3347 below its baseline.)
# It runs 2 ms and sleeps 20 ms: 2-3 runs fit in each 50 ms window, 4-6
# ms/s (5-6 measured). Not served at all is 0.
ge "$got" 2 || fail "the sleeping task got $got ms/s under the hog (2 asserted in kernel-cut mode)"
[ "$(cat /proc/sys/kernel/sched_rt_runtime_us)" = "$rt0" ] || fail "sched_rt_runtime_us $(cat /proc/sys/kernel/sched_rt_runtime_us), was $rt0"
# A boost runnable when scx_floor stops keeps its bandwidth until its 0-lag
# time (switched_from_dl(), task_non_contending()), at most its deadline (one
# kernel-cut boost, ~50 ms here) plus an overrun later: the sysctl may be
# refused (EBUSY) that long. A leak keeps it refused for good (10 s, then
# given up), as before the zero-bandwidth restore.
busy_ms=0
if grep -q "refuses .* knob" "$FLOOR_LOG"; then
	busy_ms=$(sed -n 's/.*took the refused knob(s) back after \([0-9]*\) ms.*/\1/p' "$FLOOR_LOG" | tail -1)
	grep -E "refuses|took the refused" "$FLOOR_LOG" | sed 's/^/    /'
	[ -n "$busy_ms" ] || fail "the kernel refused a knob (EBUSY) and never took it back"
fi
note "knobs refused (EBUSY) for $busy_ms ms at exit"
figure knob_busy_ms "$busy_ms" "<= 1000"
le "$busy_ms" 1000 || fail "the kernel refused a knob (EBUSY) for $busy_ms ms at exit (> one server period: DL bandwidth not given back)"
exit 0
