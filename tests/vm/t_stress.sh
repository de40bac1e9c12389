#!/bin/bash
# Stress (issue 6): 60 s of stress-ng (cpu, fork, exec, yield, sem, pipe),
# hackbench in a loop and a fork storm, with a SCHED_FIFO 50 hog on CPU 1 and
# the server serving: scx_floor is never ejected, the kernel logs no
# sched_ext error or stall, every workload finishes with success, and
# scx_floor exits cleanly.
source "$(dirname "$0")/lib.sh"
as_controller
dmesg -C
start_floor --stats 20
seq0=$(enable_seq)
h=$(rt_hog 1 fifo 50 75) || fail "no RT hog"
chrt -o 0 stress-ng --cpu 2 --fork 2 --exec 2 --yield 2 --sem 2 --pipe 2 --timeout 60s \
	--metrics-brief >"$LOGDIR/stress.log" 2>&1 & S=$!
chrt -o 0 bash -c 'end=$((SECONDS + 60)); n=0; while [ $SECONDS -lt $end ]; do
	hackbench -g 4 -l 50 >/dev/null || exit 1; n=$((n + 1)); done; echo "$n"' >"$LOGDIR/hb.out" & HB=$!
chrt -o 0 bash -c 'end=$((SECONDS + 60)); n=0; while [ $SECONDS -lt $end ]; do
	for j in $(seq 50); do /bin/true & done; wait; n=$((n + 50)); done; echo "$n"' >"$LOGDIR/forks.out" & F=$!
sleep 30
kill -0 "$FLOOR_PID" && [ "$(scx_state)" = enabled ] || fail "scx_floor gone halfway (state $(scx_state))"
rc=0
wait "$S" || rc=$?; [ $rc = 0 ] || { tail -5 "$LOGDIR/stress.log"; fail "stress-ng exit $rc"; }
wait "$HB" || fail "hackbench failed: $(cat "$LOGDIR/hb.out")"
wait "$F" || fail "fork storm failed"
kill -KILL "$h" 2>/dev/null; wait "$h" 2>/dev/null
note "stress-ng: $(grep -c 'passed\|successful' "$LOGDIR/stress.log") summary line(s), hackbench runs $(cat "$LOGDIR/hb.out"), forks $(cat "$LOGDIR/forks.out")"
assert_not_ejected "$seq0"
e=$(dmesg_errors)
[ -z "$e" ] || fail "kernel errors: $e"
stop_floor || fail "scx_floor exited non-zero"
grep -E "^ +1 " "$FLOOR_LOG" | tail -1 | sed 's/^/  last stats, CPU 1: /'
