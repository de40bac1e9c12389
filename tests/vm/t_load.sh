#!/bin/bash
# scx_floor loads (state enabled, root/ops names scx_floor), prints its stats,
# and unloads on SIGINT and on SIGTERM with exit code 0 (state disabled).
# Its log, written to a file, has no colour codes and names the build as -V.
# A CPU named twice in --server-cpus gets one server (one planner thread).
# On PREEMPT_RT, irq_work/1, rcuc/1, ktimers/1 and rcub/N run at SCHED_FIFO 99
# while it is loaded and at their own priority again after.
source "$(dirname "$0")/lib.sh"

[ "$(scx_state)" = disabled ] || fail "sched_ext state is $(scx_state) before the test"
mapfile -t kt < <(raised_tids 1)
# PREEMPT_RT has all four (rcuc/N with its default rcutree.use_softirq=0,
# rcub/N with CONFIG_RCU_BOOST): a missing one would make the checks below
# pass untested
if uname -v | grep -qE "PREEMPT_RT|PREEMPT_\{RT"; then
	[ ${#kt[@]} = 4 ] || fail "PREEMPT_RT: want irq_work/1, rcuc/1, ktimers/1 and an rcub/N, found: ${kt[*]}"
fi
kt0=$(sched_of_all "${kt[@]}")
for sig in INT TERM; do
	start_floor --stats 1
	ops=$(cat $SCX/root/ops)
	case "$ops" in scx_floor*) ;; *) fail "root/ops is '$ops'";; esac
	note "loaded: state $(scx_state), ops $ops"
	if [ ${#kt[@]} -gt 0 ]; then
		# raised before the scheduler attaches
		wait_for 3 all_raised "${kt[@]}" >/dev/null ||
			fail "while scx_floor runs, want SCHED_FIFO 99: $(sched_of_all "${kt[@]}" | tr '\n' ' ')"
		grep -q "irq_work/N, rcuc/N, ktimers/N and rcub/N kernel thread(s) run at SCHED_FIFO 99" "$FLOOR_LOG" || fail "no log line for the kernel-thread raise"
	fi
	sleep 2.5
	grep -q 'normal_ms/s' "$FLOOR_LOG" || { cat "$FLOOR_LOG"; fail "--stats printed no table"; }
	# a log written to a file carries no terminal colour codes, and names
	# the build (version, commit, target)
	! grep -q $'\e' "$FLOOR_LOG" || fail "the log in a file carries escape codes"
	grep -q "scx_floor $("$FLOOR" -V | cut -d' ' -f2-) attached" "$FLOOR_LOG" ||
		fail "the log does not name the build as -V does: $("$FLOOR" -V)"
	stop_floor $sig || fail "exit code $? after SIG$sig"
	note "SIG$sig: unloaded, exit 0, state $(scx_state)"
	if [ ${#kt[@]} -gt 0 ]; then
		[ "$(sched_of_all "${kt[@]}")" = "$kt0" ] ||
			fail "after exit: $(sched_of_all "${kt[@]}" | tr '\n' ' '), were $(echo $kt0)"
		note "$(echo "${kt[@]%%=*}"): SCHED_FIFO 99 while loaded, $(echo $kt0) after"
	fi
done
start_floor --server-cpus 1,1,0-1
grep -q "on CPUs \[0, 1\]" "$FLOOR_LOG" || { cat "$FLOOR_LOG"; fail "--server-cpus 1,1,0-1 is not CPUs [0, 1]"; }
comms=$(cat /proc/"$FLOOR_PID"/task/*/comm 2>/dev/null)
# the executor pool (default 8) is cut to one thread per served CPU
n=$(grep -c '^scx_floor-x/' <<<"$comms")
[ "$n" = 2 ] || fail "$n executor threads for 2 served CPUs with --server-cpus 1,1,0-1"
n=$(grep -c '^scx_floor/1$' <<<"$comms")
[ "$n" = 1 ] || fail "$n planner threads for CPU 1 with --server-cpus 1,1,0-1"
stop_floor || fail "exit code $? (--server-cpus 1,1,0-1)"
note "--server-cpus 1,1,0-1: CPUs [0, 1], one planner for CPU 1, two executors"
