#!/bin/bash
# CPU time shared by weight with no RT task anywhere: two CPU-bound
# SCHED_OTHER tasks pinned to CPU 1, nice -5 and nice 0 (CFS weights 3121
# and 1024: the nice -5 task's share is 0.753), each task's CPU time over an
# exact 5 s window (perf task-clock). First with CPU 0 idle, then with a
# nice-0 hog pinned to CPU 0.
#   - CPU 0 idle: ops.dispatch() runs before the kernel puts the task whose
#     slice ended back in a DSQ. Taking the DSQ's head there handed the CPU
#     to the other task at every slice end: 0.50 (before prev_runs_on()).
#   - hog on CPU 0: its vtime grows a ms per ms, CPU 1's tasks' a third as
#     fast. With one clock for all CPUs, CPU 1's tasks fell more than a
#     slice behind it and were placed at the clock minus a slice at every
#     requeue, so they took turns: 0.55 (per-CPU clocks, cpu_vnow).
# Asserted: the nice -5 task's share 0.753 +- 0.05 in both phases (measured
# 0.754-0.755), and the two together >= 900 ms/s of CPU 1.
source "$(dirname "$0")/lib.sh"
as_controller
[ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] || fail "needs 2 CPUs"
start_floor
seq=$(enable_seq)
a=$(hog 1 -5)
b=$(hog 1 0)
pids=("$a" "$b")
cleanup() { kill -KILL "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; }
wait_spinning 10 "$a" "$b" || { cleanup; fail "the tasks did not spin"; }

# phase NAME [PID...]: measures a and b (and PID...) over 5 s, asserts.
phase() {
	local name=$1 got share both
	shift
	read -r -a got < <(ms_per_s_of 5 "$a" "$b" "$@")
	[ "${#got[@]}" -ge 2 ] || { cleanup; fail "$name: no measurement"; }
	share=$(awk -v x="${got[0]}" -v y="${got[1]}" 'BEGIN { if (x + y > 0) printf "%.3f", x / (x + y) }')
	both=$(awk -v x="${got[0]}" -v y="${got[1]}" 'BEGIN { printf "%.1f", x + y }')
	note "$name: nice -5 ${got[0]} ms/s, nice 0 ${got[1]} ms/s${got[2]:+, the hog on CPU 0 ${got[2]} ms/s} (nice -5's share $share)"
	figure "${name}_share" "$share" "0.703 .. 0.803"
	figure "${name}_cpu1_ms_per_s" "$both" ">= 900"
	ge "$share" 0.703 && le "$share" 0.803 ||
		{ cleanup; fail "$name: the nice -5 task got $share of CPU 1 (weights give 0.753)"; }
	ge "$both" 900 || { cleanup; fail "$name: the two tasks got $both ms/s of CPU 1 (< 900)"; }
}

nap 1
phase idle_cpu0
h=$(hog 0)
pids+=("$h")
wait_spinning 10 "$h" || { cleanup; fail "CPU 0's hog did not spin"; }
nap 1
phase busy_cpu0 "$h"
cleanup
assert_not_ejected "$seq"
stop_floor || fail "scx_floor exited non-zero"
