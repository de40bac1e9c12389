#!/bin/bash
# Executors leased from a pool (issue 21): with --executors 1, one executor
# thread serves both CPUs. A planner leases it for as long as it holds a
# boost of its CPU; one that finds it leased makes its boosts itself, from
# its own CPU (counted: boosts_remote). Server 600 ms / 1 s: each CPU's
# boosts fill 600 ms of its period, so the two CPUs' boosts overlap in every
# period whatever their phase.
# B: a normal task and an RR 25 hog on each CPU (3 s window): both floors
#    hold and neither CPU gets more than its budget (420-680 ms/s of the
#    600; 596-617 measured). A boost that a planner ends from another CPU
#    while its task runs must be counted in full: when the switch hook lost
#    it, the CPU got 619-971 ms/s in 9 of 11 rounds (docs/design.md,
#    Decisions: "A boost restored while its task runs"); a boost never
#    ended gives about 1000. At least one boost was made by a
#    planner (boosts_remote of the two CPUs > 0), and each CPU had boosts
#    the executor made (boosts_fifo > boosts_remote): the lease moved
#    between them. An unbound sleeper (both CPUs, 50 ms sleeps) is served in
#    the window: while a CPU ran a boost, its servers counted it as free and
#    left such a task to a dispatcher that could not run it (0 loops in 2 of
#    2 rounds; sched_ext's watchdog kworker starved and the kernel ejected
#    scx_floor in the clean-clone CI of 585e278). Both tasks are back at
#    SCHED_OTHER once the hogs are gone.
# D: a hog on CPU 0 alone: the executor is pinned to CPU 0, and CPU 0 makes
#    no boost from its planner (the executor was given back by CPU 1).
source "$(dirname "$0")/lib.sh"
as_controller

# window_ms_per_s SECS PID...: each task's ms/s over SECS from schedstat,
# with no fork while the hogs run (the controller should not wait on the
# 9p root while RT hogs hold both CPUs; t_rescue). This boot has no
# nohz_full CPU, so schedstat does not lag.
window_ms_per_s() {
	local secs=$1 a=() b=() p t0 t1 x
	shift
	for p in "$@"; do read -r x _ </proc/"$p"/schedstat; a+=("$x"); done
	t0=$EPOCHREALTIME
	nap "$secs"
	for p in "$@"; do read -r x _ </proc/"$p"/schedstat; b+=("$x"); done
	t1=$EPOCHREALTIME
	for p in "${!a[@]}"; do
		awk -v a="${a[$p]}" -v b="${b[$p]}" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.1f ", (b - a) / 1e6 / (t1 - t0) }'
	done
	echo
}

start_floor --executors 1 --server-runtime-us 600000 --stats 1
seq=$(enable_seq)
xtid=$(grep -l '^scx_floor-x/' /proc/"$FLOOR_PID"/task/*/comm 2>/dev/null | awk -F/ '{ print $5 }')
[ "$(wc -w <<<"$xtid")" = 1 ] || fail "executor threads with --executors 1: $(echo $xtid)"
grep -q "1 executor thread(s) for 2 served CPU(s) (--executors 1)" "$FLOOR_LOG" || fail "the start did not log the executors"

n0=$(hog 0) n1=$(hog 1)
# an unbound sleeper: may run on either CPU, wakes every 50 ms, counts its
# loops in a file
taskset -c 0,1 chrt -o 0 python3 -c '
import sys, time
n, f = 0, open(sys.argv[1], "w")
while True:
    time.sleep(0.05); n += 1
    f.seek(0); f.write("%d\n" % n); f.flush()' "$LOGDIR/unbound.cnt" >/dev/null 2>&1 &
ub=$!
wait_spinning 10 "$n0" "$n1" || fail "the normal tasks did not spin"
wait_for 10 test -s "$LOGDIR/unbound.cnt" >/dev/null || fail "the unbound sleeper did not start"
h1=$(rt_hog 1 rr 25 40) || fail "no hog on CPU 1"
h0=$(rt_hog 0 rr 25 40) || fail "no hog on CPU 0"
nap 1.2
read -r loops0 <"$LOGDIR/unbound.cnt"
read -r got0 got1 <<<"$(window_ms_per_s 3 "$n0" "$n1")"
read -r loops1 <"$LOGDIR/unbound.cnt"
# each rt_hog start took 2.6-5.3 s here under TCG: a hog that its 40 s
# safety timeout ended would make the window measure no hog
kill -0 "$h0" 2>/dev/null && kill -0 "$h1" 2>/dev/null || fail "B: a hog ended before the window did"
kill -KILL "$h0" "$h1" "$ub" 2>/dev/null
wait_for 3 not_boosted "$n0" >/dev/null || fail "B: CPU 0's task still $(sched_of "$n0") 3 s after the hogs"
wait_for 3 not_boosted "$n1" >/dev/null || fail "B: CPU 1's task still $(sched_of "$n1") 3 s after the hogs"
nap 1.5
r0=$(server_col 0 boosts_remote) r1=$(server_col 1 boosts_remote)
f0=$(server_col 0 boosts_fifo) f1=$(server_col 1 boosts_fifo)
note "B: hogs on both CPUs: CPU 0 $got0 ms/s ($r0 of $f0 boosts by its planner), CPU 1 $got1 ms/s ($r1 of $f1)"
figure b_cpu0_ms_per_s "$got0" "420 .. 680"
figure b_cpu1_ms_per_s "$got1" "420 .. 680"
figure b_remote "$((r0 + r1))" "> 0"
figure b_unbound_loops "$((loops1 - loops0))" "> 0"
note "B: the unbound sleeper looped $((loops1 - loops0)) times in the 3 s window (60 with a CPU free)"
[ $((loops1 - loops0)) -gt 0 ] ||
	fail "B: a task allowed on both held CPUs was not served in 3 s (its loops stood at $loops0)"
[ $((r0 + r1)) -gt 0 ] || fail "B: no boost made by a planner with one executor for two CPUs in need"
[ "$f0" -gt "$r0" ] && [ "$f1" -gt "$r1" ] ||
	fail "B: a CPU had no boost from the executor (CPU 0 $r0 of $f0 by its planner, CPU 1 $r1 of $f1)"
for c in 0 1; do
	g=$([ $c = 0 ] && echo "$got0" || echo "$got1")
	ge "$g" 420 && le "$g" 680 || fail "B: CPU $c's normal task got $g ms/s (600 ms budget; 420 .. 680)"
done

h0=$(rt_hog 0 rr 25 40) || fail "no hog on CPU 0"
nap 1.2
read -r got0 <<<"$(window_ms_per_s 3 "$n0")"
xcpus=$(taskset -pc "$xtid" 2>/dev/null | sed 's/.*: //')
kill -KILL "$h0" "$n0" "$n1" 2>/dev/null
wait "$n0" "$n1" 2>/dev/null
nap 1.5
r0b=$(server_col 0 boosts_remote)
note "D: hog on CPU 0 alone: $got0 ms/s, executor on CPUs $xcpus, boosts_remote $r0 -> $r0b"
ge "$got0" 420 && le "$got0" 800 || fail "D: CPU 0's normal task got $got0 ms/s (600 ms budget; 420 .. 800)"
[ "$xcpus" = 0 ] || fail "D: the executor is pinned to CPUs $xcpus while it serves CPU 0"
[ "$r0b" = "$r0" ] || fail "D: CPU 0 made $((r0b - r0)) boosts from its planner with the executor free"
assert_not_ejected "$seq"
stop_floor || fail "scx_floor exited $?"
no_rt_allocations
grep -q "every executor is serving another CPU" "$FLOOR_LOG" || fail "no warning that boosts came from a planner"
exit 0
