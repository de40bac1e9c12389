#!/bin/bash
# An administrator's changes during a boost are theirs (issue 16, item 7): a
# normal task pinned to CPU 1 under an RR 25 hog there, boosted 600 ms of
# every second. While it is boosted, its nice value is set to 7: when the
# boost ends it is SCHED_OTHER at nice 7. While it is boosted again, it is
# moved to SCHED_BATCH: scx_floor leaves it so ("left as they are" in its
# log). Both hold after the hog left and after scx_floor's exit (which
# replays the journal). Before the identity check the end of a boost gave
# the task its old nice value, 0, and SCHED_OTHER again.
# The changes are made by one python process that watches the task's policy
# every 5 ms and acts at once (a `renice` or `chrt` command takes about half
# a second under TCG, longer than some boosts), and checks that the task was
# still boosted just after.
source "$(dirname "$0")/lib.sh"
as_controller
nice_of() { awk '{ print $19 }' "/proc/$1/stat"; }
# during_boost PID WHAT: at the next boost of PID, nice 7 (WHAT=nice) or
# SCHED_BATCH (WHAT=batch); prints "during" if the task was still boosted
# right after (with WHAT=nice, then its policy number and nice value just
# after the boost ended), "missed" if not, "none" if no boost came in 5 s.
during_boost() {
	python3 - "$1" "$2" <<'PY'
import os, sys, time
pid, what = int(sys.argv[1]), sys.argv[2]
boost = (os.SCHED_FIFO, os.SCHED_RR, 6)
def policy():  # without SCHED_RESET_ON_FORK, which boosts set
    return os.sched_getscheduler(pid) & ~0x40000000
end = time.monotonic() + 5
while time.monotonic() < end:
    if policy() in boost:
        if what == "nice":
            os.setpriority(os.PRIO_PROCESS, pid, 7)
            if policy() not in boost:
                print("missed")
                sys.exit(0)
            # at the boost's end (read at once: the next boost may follow
            # within 0.4 s), its policy and nice value
            while policy() in boost and time.monotonic() < end + 3:
                time.sleep(0.001)
            print("during", policy(), os.getpriority(os.PRIO_PROCESS, pid))
        else:
            before = policy()
            os.sched_setscheduler(pid, os.SCHED_BATCH, os.sched_param(0))
            print("during" if before in boost else "missed")
        sys.exit(0)
    time.sleep(0.005)
print("none")
PY
}
start_floor --server-runtime-us 600000 --server-period-us 1000000
seq=$(enable_seq)
a=$(taskset -c 1 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
wait_spinning 10 "$a" || fail "the normal task did not start spinning"
h=$(rt_hog 1 rr 25 60) || { kill -KILL "$a"; fail "no hog"; }
cleanup() { kill -KILL "$h" "$a" 2>/dev/null; }

for try in 1 2 3 4 5; do
	r=$(during_boost "$a" nice)
	[ "${r%% *}" = during ] && break
	[ "$r" = none ] && { cleanup; fail "task $a was never boosted"; }
	renice -n 0 -p "$a" >/dev/null
done
[ "${r%% *}" = during ] || { cleanup; fail "no nice change landed during a boost in 5 tries"; }
read -r _ p n <<<"$r"
note "nice 7 during a boost (try $try): after it, policy $p at nice $n"
[ "$p $n" = "0 7" ] || { cleanup; fail "task $a is at policy $p, nice $n after its boost, want SCHED_OTHER (0) at 7 (the renice)"; }

left() { grep -q "task $a was given other scheduling attributes during its boost (.*): left as they are" "$FLOOR_LOG"; }
for try in 1 2 3 4 5; do
	r=$(during_boost "$a" batch)
	[ "$r" = during ] && break
	[ "$r" = none ] && { cleanup; fail "task $a was never boosted again"; }
	chrt -o -p 0 "$a"
done
[ "$r" = during ] || { cleanup; fail "no SCHED_BATCH landed during a boost in 5 tries"; }
wait_for 3 left >/dev/null || { cleanup; fail "scx_floor did not log the task it left"; }
grep -h "left as they are" "$FLOOR_LOG" | head -1 | cut -c1-200 | sed 's/^/    /'
note "SCHED_BATCH during a boost (try $try): left by scx_floor"

# the hog gone, nothing starves and nothing is boosted again
kill -KILL "$h"
wait_for 3 not_boosted "$a" >/dev/null || { cleanup; fail "still $(policy_of "$a") 3 s after the hog left"; }
p=$(policy_of "$a") n=$(nice_of "$a")
[ "$p $n" = "SCHED_BATCH 7" ] || { cleanup; fail "task $a is $p at nice $n after the hog left, want SCHED_BATCH at 7"; }
assert_not_ejected "$seq"
stop_floor || { cleanup; fail "scx_floor exited $?"; }
p=$(policy_of "$a") n=$(nice_of "$a")
cleanup
[ "$p $n" = "SCHED_BATCH 7" ] || fail "task $a is $p at nice $n after scx_floor's exit, want SCHED_BATCH at 7"
note "after the hog and after exit: $p at nice $n"
