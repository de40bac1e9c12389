#!/bin/bash
# Quiet while nothing starves (issue 18): on a nohz_full CPU that no RT task
# holds, none of scx_floor's threads (nor its guardian) runs at all, and on
# the housekeeping CPU they run a few times a second. Counted with the
# sched_switch tracepoint (every switch to one of their threads, per CPU)
# over a 10 s window, nothing but the test itself running after a short
# SCHED_FIFO run on CPU 0 at the window's start. A normal task waits behind
# that run, which starts CPU 0's server: it must stop again after a period
# in which nothing starved, though CPU 0's normal tasks never use the
# server's runtime. (The runtime is 400 ms per 1 s period here, for that: the
# emulator's own normal work on an idle CPU 0, forks and the test's shell,
# comes to 50-80 ms/s, above the default 50 ms.)
# Then the same count while a pinned normal task starves under an RR 25 hog
# on the nohz_full CPU: scx_floor's threads do run there then (the SCHED_FIFO
# boosts), which shows that the count sees them when they run. Needs a boot
# with nohz_full=1 (scripts/test's nohz_full boot).
source "$(dirname "$0")/lib.sh"
grep -qE '(^| )nohz_full=([0-9,-]*,)?1([-, ]|$)' /proc/cmdline || fail "needs a boot with nohz_full=1 on CPU 1 (got: $(cat /proc/cmdline))"
# The test's own commands stay off the measured CPU, at their normal
# policy: as an RT controller (as_controller) they would themselves be a
# higher class preempting normal tasks on CPU 0, which the server there
# answers, and nothing must starve for this count.
taskset -pc 0 $$ >/dev/null || fail "cannot keep the test on CPU 0"
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs none $T || fail "no tracefs"
# (buffer_size_kb may read "7 (expanded: 1408)")
kb0=$(awk '{ print $1 }' $T/buffer_size_kb)
restore_trace() {
	echo 0 >$T/tracing_on
	echo 0 >$T/events/sched/sched_switch/enable
	echo "$kb0" >$T/buffer_size_kb
	: >$T/trace
}
trap restore_trace EXIT

# switches_in SECS [CMD]: traces SECS s of sched_switch on every CPU (CMD,
# if given, runs at the window's start, inside it) and prints,
# per CPU, how many switches were to a thread of scx_floor or its guardian,
# as "CPU COUNT" lines (CPUs 0 and 1 always), then the count per thread
# name and CPU on stderr.
switches_in() {
	echo 0 >$T/tracing_on
	: >$T/trace
	echo 4096 >$T/buffer_size_kb
	echo 1 >$T/events/sched/sched_switch/enable
	echo 1 >$T/tracing_on
	local t0=$SECONDS
	[ -z "${2:-}" ] || "$2"
	sleep $(($1 - (SECONDS - t0)))
	echo 0 >$T/tracing_on
	echo 0 >$T/events/sched/sched_switch/enable
	awk '/sched_switch:/ {
		c = $0; sub(/.* next_comm=/, "", c); sub(/ next_pid=.*/, "", c)
		if (c !~ /^scx_floor|^scx-floor-guard/ || !match($0, /\[[0-9]+\]/))
			next
		cpu = substr($0, RSTART + 1, RLENGTH - 2) + 0
		n[cpu]++; who[cpu " " c]++
	}
	END {
		print 0, n[0] + 0; print 1, n[1] + 0
		for (c in who) printf "    on CPU %s %d\n", c, who[c] > "/dev/stderr"
	}' $T/trace
	grep -q "LOST" $T/trace && echo "switches_in: events lost" >&2
	return 0
}

# brief_starvation: a SCHED_FIFO 10 task on CPU 0 counts to 3000 (about
# 0.4 s under TCG); a normal task there wakes from a 50 ms sleep meanwhile
# and waits for it. Little normal work follows on CPU 0.
brief_starvation() {
	taskset -c 0 sleep 0.05 &
	taskset -c 0 chrt -f 10 sh -c 'i=0; while [ $i -lt 3000 ]; do i=$((i + 1)); done'
	wait $!
}

start_floor --server-runtime-us 400000
sleep 3 # past the start's own work
idle=$(switches_in 10 brief_starvation)
cpu0=$(awk '$1 == 0 { print $2 }' <<<"$idle") cpu1=$(awk '$1 == 1 { print $2 }' <<<"$idle")
n=$(taskset -c 1 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
wait_spinning 10 "$n" || fail "the normal task did not start spinning"
h=$(rt_hog 1 rr 25 30) || fail "no hog"
sleep 2
busy1=$(switches_in 5 | awk '$1 == 1 { print $2 }')
kill -KILL "$h" "$n" 2>/dev/null
stop_floor || fail "scx_floor exit code $?"
w0=$(awk -v n="$cpu0" 'BEGIN { printf "%.1f", n / 10 }')
note "idle after a short RT run on CPU 0, 10 s: scx_floor's threads and its guardian switched in $cpu0 times on CPU 0 ($w0/s), $cpu1 on nohz_full CPU 1"
note "a normal task starving under an RR 25 hog on CPU 1, 5 s: $busy1 switches to them on CPU 1"
figure idle_switches_cpu1 "$cpu1" "== 0"
figure idle_switches_per_s_cpu0 "$w0" "<= 10"
figure starving_switches_cpu1 "$busy1" "> 0"
[ "$cpu1" = 0 ] || fail "scx_floor's threads ran $cpu1 times on the idle nohz_full CPU 1 in 10 s"
ge 10 "$w0" || fail "scx_floor's threads ran $w0 times/s on housekeeping CPU 0 while nothing starved (at most 10)"
[ "$busy1" -gt 0 ] || fail "no switch to scx_floor's threads on CPU 1 while a task starved there: the count misses them"
