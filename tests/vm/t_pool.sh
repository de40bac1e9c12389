#!/bin/bash
# Executors leased from a pool (issue 21): with --executors 1, one executor
# thread serves both CPUs. A planner leases it for as long as it holds a
# boost of its CPU; one that finds it leased makes its boosts itself, from
# its own CPU (counted: boosts_remote). Server 500 ms / 1 s, so that the two
# CPUs' boosts overlap in every period whatever their phase.
# B: a normal task and an RR 25 hog on each CPU (3 s window): both floors
#    hold (>= 350 ms/s of the 500), and at least one boost was made by a
#    planner (boosts_remote of the two CPUs > 0).
# D: a hog on CPU 0 alone: the executor was given back, and CPU 0 makes no
#    boost from its planner.
source "$(dirname "$0")/lib.sh"
as_controller

# remote_of CPU: boosts_remote of CPU in the last server table of --stats
remote_of() {
	awk -v c="$1" '/^server:/ { for (i = 2; i <= NF; i++) if ($i == "boosts_remote") k = i - 1; next }
		k && $1 == c && NF >= k { v = $k } END { print v + 0 }' "$FLOOR_LOG"
}
# window_ms_per_s SECS PID...: each task's ms/s over SECS from schedstat,
# read with shell builtins (the controller should not wait on the 9p root
# while RT hogs hold both CPUs; t_rescue)
window_ms_per_s() {
	local secs=$1 a=() b=() p t0 t1 x
	shift
	for p in "$@"; do read -r x _ </proc/"$p"/schedstat; a+=("$x"); done
	t0=$EPOCHREALTIME
	sleep "$secs"
	for p in "$@"; do read -r x _ </proc/"$p"/schedstat; b+=("$x"); done
	t1=$EPOCHREALTIME
	for p in "${!a[@]}"; do
		awk -v a="${a[$p]}" -v b="${b[$p]}" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.1f ", (b - a) / 1e6 / (t1 - t0) }'
	done
	echo
}

start_floor --executors 1 --server-runtime-us 500000 --stats 1
seq=$(enable_seq)
n=$(grep -c '^scx_floor-x/' /proc/"$FLOOR_PID"/task/*/comm 2>/dev/null | awk -F: '{ s += $2 } END { print s }')
[ "$n" = 1 ] || fail "$n executor threads with --executors 1"

n0=$(hog 0) n1=$(hog 1)
wait_spinning 10 "$n0" "$n1" || fail "the normal tasks did not spin"
h1=$(rt_hog 1 rr 25 15) || fail "no hog on CPU 1"
h0=$(rt_hog 0 rr 25 15) || fail "no hog on CPU 0"
sleep 1.2
read -r got0 got1 <<<"$(window_ms_per_s 3 "$n0" "$n1")"
kill -KILL "$h0" "$h1" 2>/dev/null
sleep 2
r0=$(remote_of 0) r1=$(remote_of 1)
note "B: hogs on both CPUs: CPU 0 $got0 ms/s ($r0 boosts by its planner), CPU 1 $got1 ms/s ($r1)"
figure b_cpu0_ms_per_s "$got0" ">= 350"
figure b_cpu1_ms_per_s "$got1" ">= 350"
figure b_remote "$((r0 + r1))" "> 0"
[ $((r0 + r1)) -gt 0 ] || fail "B: no boost made by a planner with one executor for two CPUs in need"
ge "$got0" 350 || fail "B: CPU 0's normal task got $got0 ms/s (< 350 of 500)"
ge "$got1" 350 || fail "B: CPU 1's normal task got $got1 ms/s (< 350 of 500)"

h0=$(rt_hog 0 rr 25 15) || fail "no hog on CPU 0"
sleep 1.2
read -r got0 <<<"$(window_ms_per_s 2.5 "$n0")"
kill -KILL "$h0" "$n0" "$n1" 2>/dev/null
wait "$n0" "$n1" 2>/dev/null
sleep 2
r0b=$(remote_of 0)
note "D: hog on CPU 0 alone: $got0 ms/s, boosts_remote $r0 -> $r0b"
ge "$got0" 350 || fail "D: CPU 0's normal task got $got0 ms/s (< 350 of 500)"
[ "$r0b" = "$r0" ] || fail "D: CPU 0 made $((r0b - r0)) boosts from its planner with the executor free"
assert_not_ejected "$seq"
stop_floor || fail "scx_floor exited $?"
no_rt_allocations
if [ "$r0" -gt 0 ] || [ "$r1" -gt 0 ]; then
	grep -q "every executor is serving another CPU" "$FLOOR_LOG" || fail "no warning that boosts came from a planner"
fi
exit 0
