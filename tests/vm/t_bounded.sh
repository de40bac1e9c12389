#!/bin/bash
# Bounded power (issue 6): however many starving tasks an unprivileged user
# starts on one CPU, the server never gives them more than its runtime per
# period there. 50 CPU-bound tasks of user nobody pinned to CPU 1 under a
# SCHED_FIFO 50 hog, server 50 ms / 1 s: over 5 s their total run time is at
# most 5 x 50 ms (+15% for the emulator), and the RT task keeps >= 900 ms/s.
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
sum() { local p s=0; for p in "${pids[@]}"; do s=$((s + $(run_ns "$p"))); done; echo $s; }
a=$(sum); t0=$(date +%s%N); h0=$(run_ns "$h")
sleep 5
b=$(sum); t1=$(date +%s%N); h1=$(run_ns "$h")
kill -KILL "$h" "${pids[@]}" 2>/dev/null; wait "${pids[@]}" "$h" 2>/dev/null
stop_floor || fail "scx_floor exited non-zero"
got=$(awk -v d=$((b - a)) -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", d / t * 1000 }')
hog=$(awk -v d=$((h1 - h0)) -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", d / t * 1000 }')
note "50 starving tasks of user nobody on CPU 1: together $got ms/s (budget 50 ms/s), RT hog $hog ms/s"
le "$got" 57.5 || fail "the 50 tasks got $got ms/s: more than the budget"
ge "$got" 20 || fail "the 50 tasks got only $got ms/s: the server did not serve them"
ge "$hog" 900 || fail "the RT task kept only $hog ms/s"
