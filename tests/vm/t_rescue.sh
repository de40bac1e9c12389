#!/bin/bash
# A planner held behind a real-time task at its own priority is freed by the
# watchdog (src/rescue.rs). The test fault "stuck-planner" keeps CPU 0's
# planner on the last CPU only (CPU 1 of 2), where a SCHED_FIFO 99 hog runs with
# --rt-runtime-unlimited: SCHED_FIFO 99 never preempts it, so the planner
# runs only when the watchdog makes it SCHED_DEADLINE. CPU 0 holds a normal
# task and a SCHED_FIFO 50 hog: its floor needs that planner's boosts
# (3 s window 0.8 s after the hogs start).
# Asserted: the normal task still gets >= 30 ms/s (2 of 3 bursts), the
# watchdog logged its rescues, the planner is back at SCHED_FIFO 99 once the
# hog is gone, never ejected, knobs restored. Under "stuck-no-rescue" (the
# watchdog never frees it) the normal task gets nothing: scripts/broken.
source "$(dirname "$0")/lib.sh"
as_controller
dmesg -C
rt_orig=$(cat /proc/sys/kernel/sched_rt_runtime_us)
[ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] || fail "needs 2 CPUs"
fault=${SCX_FLOOR_TEST_FAULT-stuck-planner}
SCX_FLOOR_TEST_FAULT=$fault start_floor --rt-runtime-unlimited --stats 2
seq0=$(enable_seq)
last=$(($(getconf _NPROCESSORS_ONLN) - 1))
# the planner logs the fault through the main thread, at its next tick
# (src/rtlog.rs; up to MAIN_TICK_IDLE_MS, 1 s, after the start)
held() { grep -q "test fault: CPU 0's planner runs only on CPU $last" "$FLOOR_LOG"; }
[ -z "$fault" ] || wait_for 3 held >/dev/null || fail "the fault did not hold CPU 0's planner on CPU $last"
n=$(taskset -c 0 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
wait_spinning 10 "$n" || fail "the normal task did not spin"
h99=$(rt_hog "$last" fifo 99 8) || fail "no FIFO 99 hog"
h50=$(rt_hog 0 fifo 50 7) || fail "no FIFO 50 hog"
sleep 0.8
# the window is read with shell builtins: a FIFO 50 hog holds CPU 0, and
# the controller (FIFO 90) should not wait on the 9p root meanwhile. An
# exact 3 s window holds 3 of the server's 1 s bursts of 50 ms when they
# come 1 s apart; the rescue's delay can move one out of it (39.4 ms/s
# once in CI). The bound, 30 ms/s, wants 2 of the 3; the planner held
# without rescue gave at most one (15.2).
# Both CPUs are held by RT tasks for about 4 s in all: sched_ext's own
# watchdog work checks in every 5 s, and once in CI (the hogs then ran
# 12-14 s) it did not run for 10 s and the kernel ejected scx_floor after
# the rescue had come and CPU 0's floor held (46.8 ms/s): open, testing.md.
read -r a _ </proc/"$n"/schedstat
t0=$EPOCHREALTIME
sleep 3
read -r b _ </proc/"$n"/schedstat
t1=$EPOCHREALTIME
normal=$(awk -v a="$a" -v b="$b" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.1f\n", (b - a) / 1e6 / (t1 - t0) }')
kill -KILL "$h50" "$h99" "$n" 2>/dev/null
wait "$n" 2>/dev/null
sleep 1.5
rescues=$(grep -c "planner (task [0-9]*) was runnable and [0-9]* ms overdue" "$FLOOR_LOG")
note "stuck planner (${fault:-no fault}): normal task on CPU 0 got $normal ms/s, $rescues rescues"
grep -E "overdue|refused|ejected" "$FLOOR_LOG" | head -3 | cut -c1-200 | sed 's/^/    /'
figure normal_ms_per_s "$normal" ">= 30"
figure rescues "$rescues" ">= 1"
[ "$rescues" -ge 1 ] || fail "the watchdog logged no rescue"
ge "$normal" 30 || fail "normal task on CPU 0 got $normal ms/s < 30 with its planner stuck"
assert_not_ejected "$seq0" "stuck planner"
planner=
for t in /proc/"$FLOOR_PID"/task/*; do
	[ "$(cat "$t/comm" 2>/dev/null)" = "scx_floor/0" ] && planner=${t##*/}
done
[ -n "$planner" ] || fail "no thread scx_floor/0"
pol=$(chrt -p "$planner")
grep -q "SCHED_FIFO" <<<"$pol" && grep -q "priority: 99" <<<"$pol" ||
	fail "CPU 0's planner is not back at SCHED_FIFO 99 after the hog: $pol"
stop_floor || fail "scx_floor exit code $?"
# the planner freed by the fault allocates nothing: an allocator call
# waits on the arena lock, which a starved normal thread may hold
no_rt_allocations "stuck planner"
[ "$(cat /proc/sys/kernel/sched_rt_runtime_us)" = "$rt_orig" ] || fail "sched_rt_runtime_us not restored"
errs=$(dmesg_errors)
[ -z "$errs" ] || { echo "$errs"; fail "dmesg reports sched_ext trouble"; }
