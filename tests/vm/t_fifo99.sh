#!/bin/bash
# RT hogs above every boost (issue 15): a normal task and a SCHED_FIFO 99 hog
# pinned to CPU 1.
# - Default sysctls: no SCHED_FIFO boost preempts it (boosts go to 98 at
#   most) and the kernel refuses SCHED_DEADLINE for the pinned task, so the
#   planner hands CPU 1's budget to the kernel's ext_server: scx_floor warns,
#   naming the task, its priority and the remedy, the server table says
#   "ext", the ext_server runs with scx_floor's budget and is back to its
#   saved runtime after exit.
# - --rt-runtime-unlimited: SCHED_DEADLINE boosts (kernel-cut mode) preempt
#   it; the server table says "dl".
# Goals as t_floor's (normal >= 47.5 ms/s, hog >= 940); asserted with its
# emulator tolerances (normal >= 40, hog >= 915). Never ejected.
# Then a SIGTERM while the hog runs: scx_floor exits 0 within 10 s and
# restores everything, though its threads pinned to CPU 1 cannot run there.
source "$(dirname "$0")/lib.sh"
as_controller
dmesg -C
orig=$(ext_server_runtime 1)
[ "$orig" != missing ] || fail "no ext_server in debugfs"
rt_orig=$(cat /proc/sys/kernel/sched_rt_runtime_us)
[ "$rt_orig" != -1 ] || fail "kernel.sched_rt_runtime_us is -1 already: the default case cannot be tested"

# while_hog: what must hold while the hog runs, read before s1_measure
# kills it: a period after the hog is gone the planner goes back to
# SCHED_FIFO boosts, takes the budget back from the ext_server (runtime 0)
# and a server table printed then says "fifo" (CI at 5714dac, RT boot).
while_hog() {
	ext_server_runtime 1 >"$LOGDIR/fifo99.ext"
	wc -l <"$FLOOR_LOG" >"$LOGDIR/fifo99.nlog"
}
S1_WHILE_HOG=while_hog

for mode in default unlimited; do
	extra=()
	[ $mode = unlimited ] && extra=(--rt-runtime-unlimited)
	start_floor --stats 2 "${extra[@]}"
	seq0=$(enable_seq)
	rm -f "$LOGDIR"/fifo99.*
	read -r normal hog first < <(s1_measure fifo 99) || fail "S1 measurement failed"
	nlog=$(cat "$LOGDIR/fifo99.nlog") ext_now=$(cat "$LOGDIR/fifo99.ext")
	# while the hog ran, the planner never went back to SCHED_FIFO boosts
	# (they cannot preempt it: each return would be a starvation of
	# HANDOFF_AFTER_NS more before the next hand-off)
	# (on CPU 1, the hog's. A hand-off and return on CPU 0 while the hog ran
	# failed this once, clean-clone CI at 61cfd04, RT boot; which task held
	# CPU 0 is not known yet. Any such lines are printed.)
	backs=$(head -n "$nlog" "$FLOOR_LOG" | grep -c "cpu 1: SCHED_FIFO boosts serve the CPU again")
	head -n "$nlog" "$FLOOR_LOG" | grep -E "cpu [02-9][0-9]*: " | grep -E "holds the CPU|serve the CPU again" | cut -c1-200 | sed 's/^/    elsewhere: /'
	figure "${mode}_returns_to_fifo" "$backs" "== 0"
	[ "$backs" = 0 ] || fail "FIFO 99, $mode: the planner went back to SCHED_FIFO boosts $backs time(s) while the hog ran"
	assert_not_ejected "$seq0" "FIFO 99, $mode"
	if [ $mode = default ]; then
		[ "$ext_now" = 50000000 ] || fail "ext_server runtime $ext_now while it serves CPU 1 (want scx_floor's 50000000)"
	fi
	stop_floor || fail "scx_floor exit code $?"
	no_rt_allocations "$*"
	note "FIFO 99 hog, $mode sysctls: normal $normal ms/s, hog $hog ms/s, first service after $first ms"
	by=$(head -n "$nlog" "$FLOOR_LOG" | awk '/^server:/ {for (i = 2; i <= NF; i++) if ($i == "by") c = i - 1; t = 1; next} t && $1 == 1 {print $c; t = 0}' | tail -1)
	figure "${mode}_normal_ms_per_s" "$normal" ">= 40"
	figure "${mode}_hog_ms_per_s" "$hog" ">= 915"
	goal "normal >= 47.5 ms/s:" "$normal" ge "$normal" 47.5
	goal "hog >= 940 ms/s:" "$hog" ge "$hog" 940
	ge "$normal" 40 || fail "FIFO 99, $mode: normal task got $normal ms/s < 40"
	ge "$hog" 915 || fail "FIFO 99, $mode: RT hog got $hog ms/s < 915"
	if [ $mode = default ]; then
		[ "$by" = ext ] || fail "the server table says CPU 1 is served by '$by', want ext"
		grep -q "cpu 1: task [0-9]* (sh) at SCHED_FIFO 99 holds the CPU above every SCHED_FIFO boost of scx_floor.*the kernel's ext_server serves the CPU instead.*--rt-runtime-unlimited" "$FLOOR_LOG" ||
			fail "no warning naming the FIFO 99 task and the remedy"
		grep -h "SCHED_FIFO 99 holds" "$FLOOR_LOG" | head -1 | cut -c1-160 | sed 's/^/    /'
		[ "$(ext_server_runtime 1)" = "$orig" ] || fail "ext_server runtime $(ext_server_runtime 1) after exit, was $orig"
	else
		[ "$by" = dl ] || fail "the server table says CPU 1 is served by '$by', want dl"
		[ "$(cat /proc/sys/kernel/sched_rt_runtime_us)" = "$rt_orig" ] || fail "sched_rt_runtime_us not restored"
	fi
done
# A SCHED_FIFO 99 task that wakes from its own sleep and spins, with the
# sysctl at -1 (kernel-cut mode), while CPU 1's server is idle. The wake-up
# that starts the server is written on CPU 1 as the task switches in; on
# PREEMPT_RT it is irq_work for irq_work/1 (FIFO 99), which does not preempt
# the task, so the BPF side hands it to another CPU (server_kick(),
# bpf/main.bpf.c). Before that, the server started at its idle recheck:
# first service 3.4-4.5 s in 5 of 6 rounds (7.3.4-rt, 2 vCPUs). A hog
# started by exec (rt_hog) blocks on the 9p root first and lets irq_work/1
# run: it does not show this. Goal and bound as t_floor's.
start_floor --rt-runtime-unlimited
seq0=$(enable_seq)
n=$(taskset -c 1 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
wait_spinning 10 "$n" || fail "the normal task did not spin"
udev_idle
taskset -c 1 chrt -f 99 perl -e 'select(undef, undef, undef, 2); 1 while 1' >/dev/null 2>&1 &
h=$!
state_of() { [[ $(cat /proc/$h/stat 2>/dev/null) =~ ^[0-9]+\ \(perl\)\ $1 ]]; }
# perl is in its sleep 1.5 s after the start (its start took 0.1-0.2 s)
sleep 1.5
state_of S || { kill -KILL "$h" "$n"; fail "the FIFO 99 task is not asleep 1.5 s after its start"; }
wait_for 3 state_of R >/dev/null || { kill -KILL "$h" "$n"; fail "the sleeping FIFO 99 task did not wake"; }
first=$(first_service_ms "$n" 6)
kill -KILL "$h" "$n" 2>/dev/null
wait "$h" 2>/dev/null
note "FIFO 99 task woken from its own sleep, server idle: first service after $first ms"
figure woken_hog_first_service_ms "${first/inf/99999}" "<= 2000"
goal "first service <= 1000 ms:" "$first" le "${first/inf/99999}" 1000
[ "$first" != inf ] && le "$first" 2000 || fail "FIFO 99 task woken from its own sleep: first service after $first ms (> 2 periods)"
assert_not_ejected "$seq0" "FIFO 99 task woken from its own sleep"
stop_floor || fail "scx_floor exit code $?"
if pgrep -x 'irq_work/[0-9]+' >/dev/null; then
	grep -h "server wake-up(s) written where irq_work/N could not run" "$FLOOR_LOG" | cut -c1-160 | sed 's/^/    /'
	grep -q "[1-9][0-9]* server wake-up(s) written where irq_work/N could not run were handed to another CPU; [1-9][0-9]* written there" "$FLOOR_LOG" ||
		fail "PREEMPT_RT: no server wake-up was handed to another CPU"
fi

# SIGTERM while the FIFO 99 hog runs (issue 16): the CPU's own SCHED_FIFO 99
# threads (executor; slice-end thread on PREEMPT_RT) cannot run there, and
# scx_floor must still exit, with everything restored. Every FIFO 99 task
# here starts once udev's workers are gone (udev_idle): the unload, waiting
# for a grace period, once hung in CI on a systemd-udevd worker that RCU had
# boosted behind the hog.
start_floor
n=$(taskset -c 1 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
h=$(rt_hog 1 fifo 99 30) || fail "no hog"
sleep 3
t0=$(date +%s%N)
kill -TERM "$FLOOR_PID"
ok= ms=0
while [ "$ms" -le 10000 ]; do
	kill -0 "$FLOOR_PID" 2>/dev/null || { ok=1; break; }
	sleep 0.1
	ms=$((($(date +%s%N) - t0) / 1000000))
done
ms=$((($(date +%s%N) - t0) / 1000000))
[ -n "$ok" ] || kill -KILL "$FLOOR_PID"
wait "$FLOOR_PID"
rc=$?
pol=$(policy_of "$n")
kill -KILL "$h" "$n" 2>/dev/null
[ -n "$ok" ] || fail "SIGTERM under a FIFO 99 hog: scx_floor still running after 10 s"
[ "$rc" = 0 ] || fail "SIGTERM under a FIFO 99 hog: exit code $rc"
figure sigterm_under_hog_exit_ms "$ms" "<= 10000"
[ "$pol" = SCHED_OTHER ] || fail "SIGTERM under a FIFO 99 hog: the normal task is $pol after exit"
[ "$(ext_server_runtime 1)" = "$orig" ] || fail "SIGTERM under a FIFO 99 hog: ext_server runtime $(ext_server_runtime 1), was $orig"
wait_state disabled 20 || fail "state is $(scx_state) after SIGTERM under a FIFO 99 hog"
note "SIGTERM under a FIFO 99 hog: exited 0 in $ms ms, task $pol, ext_server runtime back"
grep -h "after the stop" "$FLOOR_LOG" | sed 's/^/    /'
errs=$(dmesg_errors)
[ -z "$errs" ] || { echo "$errs"; fail "dmesg reports sched_ext trouble"; }
