#!/bin/bash
# Both processes killed (issue 16): a service manager killing the whole
# cgroup takes scx_floor and its guardian at once, and nothing runs to
# restore. docs/guarantees.md says so: not guaranteed at once, the next
# start replays the journals in /run/scx_floor first. Shown here: a normal task pinned to
# CPU 1 under an RR 25 hog, boosted, then SIGKILL of the guardian and
# scx_floor in one kill(1): the task is left boosted and the ext_server
# runtime at 0 (what is not guaranteed, seen). The next start of scx_floor
# logs that it restored at least a task and a knob, and after its exit the
# task is SCHED_OTHER and the ext_server runtime its own again.
# A kill that finds the boost over already (boosts end every period) is
# tried again, up to 5 times.
# Then a restart right after a SIGKILL of scx_floor alone, in kernel-cut
# mode (--rt-runtime-unlimited --boost deadline): its guardian may still be
# putting sched_rt_runtime_us back (the kernel refuses with EBUSY while a
# boost's DL bandwidth is counted, up to its 0-lag time). The guardian holds
# the state directory's lock until it is done, so the new start waits for it
# (logged when it did) instead of starting under a guardian that would then
# put the sysctl back beneath it: once the new scx_floor is enabled,
# sched_rt_runtime_us is -1 and stays -1 for 2 s; after its exit every knob
# is its own again.
# Last, the same restart with the guardian's restore refused for certain:
# two sleeping SCHED_DEADLINE tasks of 990 ms/s each, admitted while
# sched_rt_runtime_us is -1, hold the root domain's DL bandwidth above what
# 950000 allows, so the guardian's write gets EBUSY and it retries, holding
# the lock. The new start waits; 2 s after the kill the DL tasks exit, the
# guardian's next try succeeds and it lets go; the new scx_floor then sets
# -1 and keeps it 2 s.
source "$(dirname "$0")/lib.sh"
as_controller
orig=$(ext_server_runtime 1)
[ "$orig" != missing ] || fail "no ext_server in debugfs"
n=$(taskset -c 1 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
wait_spinning 10 "$n" || fail "the normal task did not start spinning"
h=
cleanup() { kill -KILL $h "$n" 2>/dev/null; }
trap cleanup EXIT
# what a kill that found the boost over left (the ext_server runtime at 0)
# the next start replays
kill_both_while_boosted "$n" "" --server-runtime-us 600000 --server-period-us 1000000
note "after the SIGKILL of both (try $TRY): task $n $(policy_of "$n"), ext_server runtime $(ext_server_runtime 1) (its own: $orig)"
[ "$(ext_server_runtime 1)" = 0 ] || fail "ext_server runtime $(ext_server_runtime 1) after the kill of both: who restored it?"

# The next start: the replay comes before anything else changes.
start_floor --server-runtime-us 600000 --server-period-us 1000000
grep -q "restored [1-9][0-9]* task(s) and [1-9][0-9]* knob(s) left boosted/changed by an earlier scx_floor" "$FLOOR_LOG" ||
	fail "the next start logged no replay: $(head -5 "$FLOOR_LOG")"
grep -h "left boosted/changed by an earlier" "$FLOOR_LOG" | head -1 | cut -c1-160 | sed 's/^/    /'
stop_floor || fail "scx_floor exited $? after the replay"
kill -KILL "$h" 2>/dev/null
wait_for 3 not_boosted "$n" >/dev/null || fail "task $n still $(policy_of "$n") after the next start's exit"
[ "$(ext_server_runtime 1)" = "$orig" ] || fail "ext_server runtime $(ext_server_runtime 1) after the next start's exit, want $orig"
note "the next start restored them; after its exit task $n is $(policy_of "$n"), ext_server runtime $(ext_server_runtime 1)"

# A restart right after a SIGKILL, in kernel-cut mode.
# unlimited_held WHO: sched_rt_runtime_us stays -1 for 2 s under WHO (the
# new scx_floor), and one guardian runs.
unlimited_held() {
	local i v
	for i in $(seq 20); do
		v=$(cat /proc/sys/kernel/sched_rt_runtime_us)
		[ "$v" = -1 ] || fail "sched_rt_runtime_us went to $v under $1"
		sleep 0.1
	done
	pgrep -x scx-floor-guard | wc -l | grep -qx 1 || fail "$(pgrep -x scx-floor-guard | wc -l) guardians run, want 1"
}
# knobs_back: after scx_floor's exit, the sysctl and the ext_server runtime
# are their own.
knobs_back() {
	[ "$(cat /proc/sys/kernel/sched_rt_runtime_us)" = "$rt0" ] || fail "sched_rt_runtime_us $(cat /proc/sys/kernel/sched_rt_runtime_us) after the exit, want $rt0"
	[ "$(ext_server_runtime 1)" = "$orig" ] || fail "ext_server runtime $(ext_server_runtime 1) after the exit, want $orig"
}
rt0=$(cat /proc/sys/kernel/sched_rt_runtime_us)
[ "$rt0" != -1 ] || fail "sched_rt_runtime_us is -1 already"
start_floor --server-runtime-us 600000 --server-period-us 1000000 --rt-runtime-unlimited --boost deadline
h=$(rt_hog 1 rr 25 60) || fail "no hog"
wait_fresh_boost "$n" 4 || fail "the task was never boosted in kernel-cut mode (policy $(policy_of "$n"))"
kill -KILL "$FLOOR_PID"
wait "$FLOOR_PID" 2>/dev/null
# as soon as the kernel has the BPF scheduler unloaded (a start refuses
# while one is loaded)
wait_state disabled 20 || fail "state is $(scx_state) after the SIGKILL"
guard_left=$(pgrep -x scx-floor-guard >/dev/null && echo "still running" || echo gone)
start_floor --server-runtime-us 600000 --server-period-us 1000000 --rt-runtime-unlimited --boost deadline
waited=$(grep -c "waiting for /run/scx_floor/lock" "$FLOOR_LOG")
note "restart after SIGKILL: the old guardian $guard_left at the start; the new start waited for the lock: $([ "$waited" -gt 0 ] && echo yes || echo no)"
wait_for 3 grep -qx -- -1 /proc/sys/kernel/sched_rt_runtime_us >/dev/null || fail "sched_rt_runtime_us $(cat /proc/sys/kernel/sched_rt_runtime_us) under the new scx_floor, want -1"
unlimited_held "the running scx_floor (the old guardian's restore?)"
stop_floor || fail "scx_floor exited $? after the restart"
kill -KILL "$h" 2>/dev/null
knobs_back
wait_for 3 not_boosted "$n" >/dev/null || fail "task $n still $(policy_of "$n") after the exit"
note "after the restart's exit: sched_rt_runtime_us $rt0, ext_server runtime $orig, task $(policy_of "$n")"

# A restart while the guardian's restore is refused with EBUSY.
start_floor --server-runtime-us 600000 --server-period-us 1000000 --rt-runtime-unlimited --boost deadline
dl=()
for i in 1 2; do
	chrt -d --sched-runtime 990000000 --sched-deadline 1000000000 --sched-period 1000000000 0 sleep 60 &
	dl+=($!)
done
sleep 0.3
for p in "${dl[@]}"; do
	[ "$(policy_of "$p")" = SCHED_DEADLINE ] || fail "DL task $p is $(policy_of "$p") (admission under -1?)"
done
cleanup() { kill -KILL $h "$n" "${dl[@]}" 2>/dev/null; }
kill -KILL "$FLOOR_PID"
wait "$FLOOR_PID" 2>/dev/null
wait_state disabled 20 || fail "state is $(scx_state) after the SIGKILL"
sleep 0.5
v=$(cat /proc/sys/kernel/sched_rt_runtime_us)
pgrep -x scx-floor-guard >/dev/null || fail "the guardian is gone with sched_rt_runtime_us $v under 1.98 of DL bandwidth"
[ "$v" = -1 ] || fail "sched_rt_runtime_us is $v under 1.98 of DL bandwidth: the kernel took it?"
( sleep 1.5; kill -KILL "${dl[@]}" ) 2>/dev/null &
t0=$(date +%s%N)
start_floor --server-runtime-us 600000 --server-period-us 1000000 --rt-runtime-unlimited --boost deadline
took=$((($(date +%s%N) - t0) / 1000000))
grep -q "waiting for /run/scx_floor/lock" "$FLOOR_LOG" || fail "the start during the guardian's EBUSY retries did not wait for the lock"
note "restart during EBUSY: the new start waited for the lock and was enabled after $took ms (the DL tasks exit at 1500 ms)"
[ "$took" -ge 1500 ] || fail "enabled after $took ms, before the guardian could restore (the DL tasks were still there)"
unlimited_held "the scx_floor started during EBUSY"
stop_floor || fail "scx_floor exited $? after the restart during EBUSY"
knobs_back
note "after its exit: sched_rt_runtime_us $rt0, ext_server runtime $orig"
