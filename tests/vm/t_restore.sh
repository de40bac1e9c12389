#!/bin/bash
# Restore guarantee: SIGKILL of scx_floor while it has a task boosted. The
# guardian process puts the task back to SCHED_OTHER and the kernel's
# ext_server runtime back to its saved value; the kernel unloads the BPF
# scheduler with the process. Then the same with SIGTERM (a clean exit).
source "$(dirname "$0")/lib.sh"
as_controller
orig=$(ext_server_runtime 1)
[ "$orig" != missing ] || fail "no ext_server in debugfs"

for sig in KILL TERM; do
	start_floor --server-runtime-us 600000 --server-period-us 1000000
	n=$(taskset -c 1 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
	wait_spinning 10 "$n" || fail "the normal task did not start spinning"
	h=$(rt_hog 1 rr 25 30) || fail "no hog"
	[ "$(ext_server_runtime 1)" = 0 ] || fail "ext_server runtime not 0 while serving"
	wait_boosted "$n" 4 || fail "the normal task was never boosted (policy $(policy_of "$n"))"
	kill -$sig "$FLOOR_PID"
	note "boosted when killed: task $n"
	wait "$FLOOR_PID" 2>/dev/null
	rc=$?
	[ $sig = TERM ] && [ $rc -ne 0 ] && fail "exit code $rc after SIGTERM"
	ok=
	for i in $(seq 100); do
		if [ "$(policy_of "$n")" = SCHED_OTHER ] && [ "$(ext_server_runtime 1)" = "$orig" ] && [ "$(scx_state)" = disabled ]; then
			ok=1; break
		fi
		sleep 0.05
	done
	pol=$(policy_of "$n"); rt=$(ext_server_runtime 1)
	kill -KILL "$h" "$n" 2>/dev/null
	[ -n "$ok" ] || fail "after SIG$sig: task $n is $pol, ext_server runtime $rt (saved $orig), sched_ext $(scx_state)"
	note "SIG$sig: task back to $pol within $((i * 50)) ms, ext_server runtime $rt, sched_ext $(scx_state)"
	grep -h "scx_floor-guard" "$FLOOR_LOG" | sed 's/^/    /'
	if [ $sig = KILL ]; then
		grep -q "scx_floor-guard: scx_floor is gone; restored [1-9][0-9]* boosted task(s) and 2 kernel knob(s)" "$FLOOR_LOG" ||
			fail "the guardian did not restore the boosted task and both knobs"
	fi
	sleep 0.5
	if pgrep -x scx_floor-guard >/dev/null; then fail "the guardian outlived scx_floor"; fi
done
exit 0
