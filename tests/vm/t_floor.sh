#!/bin/bash
# S1: the bandwidth floor under an RT hog. A normal task and an RT hog pinned
# to CPU 1, measured over 6 s from /proc/PID/schedstat, for a SCHED_RR 25 hog
# with 50 ms / 1 s and 20 ms / 1 s, and a SCHED_FIFO 50 hog with 50 ms / 1 s;
# then RR 25 with 50 ms / 1 s in kernel-cut mode (--rt-runtime-unlimited:
# SCHED_DEADLINE boosts ended by the kernel, the server threads placed by
# the kernel off CPU 1),
# where kernel.sched_rt_runtime_us must be -1 while it runs and back after.
#
# Goals (issue 3): normal >= 95% of the budget, hog >= 940 ms/s, first service
# within one period. The emulator (TCG) charges 1-3% of the CPU to interrupts
# and makes each system call of the server cost ~50-100 us, and these figures
# move by a few ms/s between runs, so the test asserts emulator tolerances
# (normal >= 80% of the budget, hog >= 915 ms/s, first service within 2
# periods) and prints whether each goal was met. Always asserted exactly:
# scx_floor is never ejected; the kernel's ext_server runtime is 0 while
# scx_floor serves and back to its value afterwards.
source "$(dirname "$0")/lib.sh"
as_controller
dmesg -C
orig=$(ext_server_runtime 1)
[ "$orig" != missing ] || fail "no ext_server in debugfs"

rt_orig=$(cat /proc/sys/kernel/sched_rt_runtime_us)
case_() { # runtime_us policy prio [scx_floor flags]
	local rt=$1 pol=$2 prio=$3 first normal hog
	local goal_n min_n
	shift 3
	goal_n=$(awk -v r="$rt" 'BEGIN { print r / 1000 * 0.95 }')
	min_n=$(awk -v r="$rt" 'BEGIN { print r / 1000 * 0.80 }')
	start_floor --server-runtime-us "$rt" --server-period-us 1000000 --stats 2 "$@"
	wait_ext_server 1 0 5 || fail "ext_server runtime is $(ext_server_runtime 1) while scx_floor serves"
	local rtr
	rtr=$(cat /proc/sys/kernel/sched_rt_runtime_us)
	read -r normal hog first < <(s1_measure "$pol" "$prio") || fail "S1 measurement failed"
	[ -n "$hog" ] || fail "could not read the tasks' schedstat"
	[ "$(scx_state)" = enabled ] || fail "scx_floor was ejected: $(scx_state)"
	stop_floor || fail "scx_floor exit code $?"
	no_rt_allocations "$pol $prio $*"
	note "$pol $prio hog, server $((rt / 1000)) ms/1 s $*: normal $normal ms/s, hog $hog ms/s, first service after $first ms"
	grep -A4 '^server:' "$FLOOR_LOG" | tail -3 | sed 's/^/    /'
	local tag="${pol}${prio}_$((rt / 1000))ms${*:+_dl}"
	figure "${tag}_normal_ms_per_s" "$normal" ">= $min_n"
	figure "${tag}_hog_ms_per_s" "$hog" ">= 915"
	figure "${tag}_first_service_ms" "${first/inf/99999}" "<= 2000"
	goal "normal >= $goal_n ms/s:" "$normal" ge "$normal" "$goal_n"
	goal "hog >= 940 ms/s:" "$hog" ge "$hog" 940
	goal "first service <= 1000 ms:" "$first" le "${first/inf/99999}" 1000
	ge "$normal" "$min_n" || fail "normal task got $normal ms/s < $min_n (80% of the budget)"
	ge "$hog" 915 || fail "RT hog got $hog ms/s < 915"
	[ "$first" != inf ] && le "$first" 2000 || fail "first service after $first ms (> 2 periods)"
	[ "$(ext_server_runtime 1)" = "$orig" ] || fail "ext_server runtime $(ext_server_runtime 1) after exit, was $orig"
	[ "$(cat /proc/sys/kernel/sched_rt_runtime_us)" = "$rt_orig" ] ||
		fail "sched_rt_runtime_us $(cat /proc/sys/kernel/sched_rt_runtime_us) after exit, was $rt_orig"
	if [[ " $* " == *" --rt-runtime-unlimited "* ]]; then
		[ "$rtr" = -1 ] || fail "sched_rt_runtime_us $rtr while scx_floor ran with --rt-runtime-unlimited"
		grep -q "kernel-cut mode" "$FLOOR_LOG" || fail "no kernel-cut mode with --rt-runtime-unlimited"
		# the server table's cpu 1 row: boosts_dl (column 5) > 0, boosts_fifo (6) = 0
		awk '/^server:/ {t = 1; next} t && $1 == 1 {dl = $5; fifo = $6; t = 0} END {exit !(dl > 0 && fifo == 0)}' "$FLOOR_LOG" ||
			fail "kernel-cut mode did not boost with SCHED_DEADLINE only"
	else
		[ "$rtr" = "$rt_orig" ] || fail "sched_rt_runtime_us changed to $rtr without --rt-runtime-unlimited"
	fi
}

case_ 50000 rr 25
case_ 20000 rr 25
case_ 50000 fifo 50
case_ 50000 rr 25 --rt-runtime-unlimited --boost deadline
errs=$(dmesg_errors)
[ -z "$errs" ] || { echo "$errs"; fail "dmesg reports sched_ext trouble"; }
