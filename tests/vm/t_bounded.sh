#!/bin/bash
# Bounded power (issue 6): however many starving tasks an unprivileged user
# starts on one CPU, the server never gives them more than its runtime per
# period there. 50 CPU-bound tasks of user nobody pinned to CPU 1 under a
# SCHED_FIFO 50 hog, server 50 ms / 1 s: over 10 s their total run time is at
# most 10 x 50 ms (+15%: the emulator's overruns, and a window whose ends
# fall at different phases of the period may hold the start of one more
# period's service: 45.8 and 54.9 ms/s over 5 s), and the RT task keeps
# >= 900 ms/s.
source "$(dirname "$0")/lib.sh"
as_controller
start_floor
pids=()
for i in $(seq 50); do
	chrt -o 0 setpriv --reuid=65534 --regid=65534 --clear-groups taskset -c 1 sh -c 'while :; do :; done' >/dev/null 2>&1 &
	pids+=($!)
done
wait_spinning 60 "${pids[@]}" || fail "the 50 tasks did not all start spinning within 60 s"
h=$(rt_hog 1 fifo 50 30) || fail "no RT hog"
note "RT hog $h: policy $(policy_of "$h"), on CPU $(awk '{print $39}' /proc/$h/stat)"
sleep 2
# One read of all 50 schedstats (one process, milliseconds): the window's
# two ends fall at nearly the same phase of the server's 1 s period. (Read one task at a time the reads
# took ~0.5 s under TCG, the window's ends fell at different phases, and a
# window that caught the start of 6 periods' service counted 58.0 ms/s.
# %.0f: mawk's %d stops at 2^31.)
sum() { awk '{ s += $1 } END { printf "%.0f\n", s }' $(printf '/proc/%s/schedstat ' "${pids[@]}"); }
a=$(sum); t0=$(date +%s%N); h0=$(run_ns "$h")
sleep 10
b=$(sum); t1=$(date +%s%N); h1=$(run_ns "$h")
kill -KILL "$h" "${pids[@]}" 2>/dev/null; wait "${pids[@]}" "$h" 2>/dev/null
stop_floor || fail "scx_floor exited non-zero"
got=$(awk -v d=$((b - a)) -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", d / t * 1000 }')
hog=$(awk -v d=$((h1 - h0)) -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", d / t * 1000 }')
note "50 starving tasks of user nobody on CPU 1: together $got ms/s (budget 50 ms/s), RT hog $hog ms/s"
figure fifty_tasks_ms_per_s "$got" "20 .. 57.5"
figure hog_ms_per_s "$hog" ">= 900"
le "$got" 57.5 || fail "the 50 tasks got $got ms/s: more than the budget"
ge "$got" 20 || fail "the 50 tasks got only $got ms/s: the server did not serve them"
ge "$hog" 900 || fail "the RT task kept only $hog ms/s"
