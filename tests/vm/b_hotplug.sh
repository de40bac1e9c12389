#!/bin/bash
# Run in a VM with 4 vCPUs (scripts/test): CPU hotplug while loaded and
# while a boost is active on the CPU that goes away. CPU 1 goes offline and
# comes back twice: scx_floor is not ejected, no task stays boosted, CPU 1's
# server parks while the CPU is offline and serves again after, its stats go
# on (--stats lines keep coming, CPU 1 included after it returns).
source "$(dirname "$0")/lib.sh"
[ "$(nproc)" -ge 3 ] || fail "this test needs 3 or more CPUs (scripts/test boots 4)"
as_controller
ON=/sys/devices/system/cpu/cpu1/online
dmesg -C
# Only CPU 1 is served. A server on CPU 0 as well, with this 60% budget, finds
# CPU 0's normal tasks short of it (this FIFO 90 shell and the RT hog's exec
# chain, ~0.4 s under TCG, run there) and boosts CPU 0's hog and scx_floor's
# main thread (pinned to CPU 0 with this shell), each for its share of up to
# 0.6 s, one after the other at the same FIFO priority: the main thread waited
# 0.5-0.8 s at a time, and the stats check failed in 2 of 4 runs. That is the
# server doing its job on CPU 0, not hotplug.
start_floor --stats 1 --server-cpus 1 --server-runtime-us 600000 --server-period-us 1000000
seq0=$(enable_seq)
hogs=()
for c in $(seq 0 $(($(nproc) - 1))); do hogs+=("$(hog "$c")"); done
n=$(taskset -c 1 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
wait_spinning 10 "$n" || fail "the normal task did not start spinning"
h=$(rt_hog 1 rr 25 60) || fail "no RT hog"
for round in 1 2; do
	wait_boosted "$n" 6 || fail "round $round: no boost on CPU 1"
	echo 0 >$ON || fail "cannot offline CPU 1"
	note "round $round: CPU 1 offline during a boost"
	sleep 2
	kill -0 "$FLOOR_PID" && [ "$(scx_state)" = enabled ] || fail "ejected after offlining CPU 1: $(tail -3 "$FLOOR_LOG")"
	echo 1 >$ON || fail "cannot online CPU 1"
	# the hog and the task lost their affinity with the CPU: pin them again
	taskset -p -c 1 "$h" >/dev/null; taskset -p -c 1 "$n" >/dev/null
	sleep 2
	kill -0 "$FLOOR_PID" && [ "$(scx_state)" = enabled ] || fail "ejected after onlining CPU 1: $(tail -3 "$FLOOR_LOG")"
	note "round $round: CPU 1 online again, scx_floor enabled"
done
wait_boosted "$n" 6 || fail "no boost on CPU 1 after it came back"
lines0=$(grep -c "per-CPU accounting" "$FLOOR_LOG"); sleep 2.5; lines1=$(grep -c "per-CPU accounting" "$FLOOR_LOG")
[ "$lines1" -gt "$lines0" ] || fail "the stats stopped"
assert_not_ejected "$seq0"
# The server of an offline CPU ends its boosts and parks until the CPU is back.
parks=$(grep -c "CPU 1 is offline: its server is parked" "$FLOOR_LOG")
backs=$(grep -c "CPU 1 is online again: serving" "$FLOOR_LOG")
[ "$parks" = 2 ] && [ "$backs" = 2 ] || fail "CPU 1's server parked $parks and came back $backs times, not 2 and 2"
kill -KILL "$h" 2>/dev/null; wait "$h" 2>/dev/null
stop_floor || fail "scx_floor exited non-zero"
# the planner and the slice-end thread re-read the online CPUs in place
no_rt_allocations "CPU hotplug"
pol=$(policy_of "$n")
[ "$pol" = SCHED_OTHER ] || fail "task $n left $pol"
kill -KILL "$n" "${hogs[@]}" 2>/dev/null; wait 2>/dev/null
e=$(dmesg_errors)
[ -z "$e" ] || fail "kernel errors: $e"
note "stats went on ($lines0 -> $lines1 reports), no task left boosted, no kernel error"
