#!/bin/bash
# scx_floor loads (state enabled, root/ops names scx_floor), prints its stats,
# and unloads on SIGINT and on SIGTERM with exit code 0 (state disabled).
# A CPU named twice in --server-cpus gets one server (one executor thread).
# On PREEMPT_RT, irq_work/1 runs at SCHED_FIFO 99 while it is loaded and at
# its own priority again after.
source "$(dirname "$0")/lib.sh"

[ "$(scx_state)" = disabled ] || fail "sched_ext state is $(scx_state) before the test"
iw=$(irq_work_tid 1)
iw0=
[ -n "$iw" ] && iw0=$(sched_of "$iw")
iw_raised() { [ "$(sched_of "$iw")" = "SCHED_FIFO 99" ]; }
for sig in INT TERM; do
	start_floor --stats 1
	ops=$(cat $SCX/root/ops)
	case "$ops" in scx_floor*) ;; *) fail "root/ops is '$ops'";; esac
	note "loaded: state $(scx_state), ops $ops"
	if [ -n "$iw" ]; then
		# raised by the policy loop once the scheduler is attached
		wait_for 3 iw_raised >/dev/null || fail "irq_work/1 is $(sched_of "$iw") while scx_floor runs, want SCHED_FIFO 99"
		grep -q "irq_work/N thread(s) run at SCHED_FIFO 99" "$FLOOR_LOG" || fail "no log line for the irq_work raise"
	fi
	sleep 2.5
	grep -q 'normal_ms/s' "$FLOOR_LOG" || { cat "$FLOOR_LOG"; fail "--stats printed no table"; }
	stop_floor $sig || fail "exit code $? after SIG$sig"
	note "SIG$sig: unloaded, exit 0, state $(scx_state)"
	if [ -n "$iw" ]; then
		[ "$(sched_of "$iw")" = "$iw0" ] || fail "irq_work/1 is $(sched_of "$iw") after exit, was $iw0"
		note "irq_work/1: SCHED_FIFO 99 while loaded, $iw0 after"
	fi
done
start_floor --server-cpus 1,1,0-1
grep -q "on CPUs \[0, 1\]" "$FLOOR_LOG" || { cat "$FLOOR_LOG"; fail "--server-cpus 1,1,0-1 is not CPUs [0, 1]"; }
n=$(ls /proc/"$FLOOR_PID"/task | while read -r t; do cat /proc/"$FLOOR_PID"/task/"$t"/comm; done | grep -c '^scx_floor-x/1$')
[ "$n" = 1 ] || fail "$n executor threads for CPU 1 with --server-cpus 1,1,0-1"
stop_floor || fail "exit code $? (--server-cpus 1,1,0-1)"
note "--server-cpus 1,1,0-1: CPUs [0, 1], one executor for CPU 1"
