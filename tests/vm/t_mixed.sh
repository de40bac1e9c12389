#!/bin/bash
# 30 s of mixed load under scx_floor: stress-ng cpu, fork, yield and hackbench.
# The scheduler is never ejected, every workload finishes with success, and
# dmesg has no sched_ext error or stall.
source "$(dirname "$0")/lib.sh"
SECS=${MIXED_SECS:-30}

dmesg -C
start_floor --stats 5
seq0=$(enable_seq)
chrt -o 0 stress-ng --cpu 2 --fork 2 --yield 2 --timeout "${SECS}s" --quiet >"$LOGDIR/stress.log" 2>&1 &
S=$!
ok_hb=0 n_hb=0
end=$((SECONDS + SECS))
while [ $SECONDS -lt $end ]; do
	n_hb=$((n_hb + 1))
	chrt -o 0 hackbench -g 4 -l 200 >"$LOGDIR/hackbench.log" 2>&1 && ok_hb=$((ok_hb + 1))
	[ "$(scx_state)" = enabled ] || fail "state became $(scx_state) under load"
done
wait $S || { cat "$LOGDIR/stress.log"; fail "stress-ng failed"; }
[ "$ok_hb" = "$n_hb" ] || fail "hackbench failed $((n_hb - ok_hb)) of $n_hb runs"
kill -0 $FLOOR_PID 2>/dev/null || fail "scx_floor died under load"
assert_not_ejected "$seq0"
errs=$(dmesg_errors)
[ -z "$errs" ] || { echo "$errs"; fail "dmesg reports sched_ext trouble"; }
stop_floor || fail "scx_floor exited non-zero"
note "${SECS}s mixed load: stress-ng ok, hackbench $ok_hb/$n_hb ok, never ejected, dmesg clean"
