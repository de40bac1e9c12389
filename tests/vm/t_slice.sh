#!/bin/bash
# Slices end on time (issue 4, S2). Two (or four) CPU hogs pinned to CPU 1,
# 5 s each:
# - fixed slices 0.25, 0.5, 1 and 4 ms: the mean slice (schedstat field 1 /
#   field 3 of the hogs) is within +25% of the target at 0.25 ms and +15%
#   above; the p90 run length from scx_floor's own histogram (--stats-json)
#   is at most 1.5 times the target + 1 ms (the emulator's latency bulk; its
#   p99 timer latency reached 2.4 ms in one boot, so the p90 bound does not
#   use it: the tick's runs, 3.67-4.19 ms, stayed inside such an allowance
#   at 0.5 ms); slices do not end early: CPU 1's run
#   time per slice expiry is at least 85% of the target. The p99 run length
#   (goal: at most 1.5 times the target) is printed against its goal and
#   allowance and recorded, not asserted: in this emulator its tail reaches
#   the tick (CI at 023ccd2: 3.15-3.67 ms at 1 ms, 2.10-2.62 ms at 0.5 ms,
#   against 2.92 and 2.07 allowed, twice in a row), so it cannot tell a
#   working timer from the tick at a useful bound. The precise p99 goal is
#   scripts/bench-slice's and the A/B harness's (S2). The tick-only case
#   below shows the p90 check failing on the broken variant;
# - the slice-end threads (what ends slices on PREEMPT_RT kernels, where
#   the verifier refuses bpf_timer and --slice-end auto picks them): at
#   0.5 ms with --slice-end thread where bpf_timer runs, against the same
#   allowance (on PREEMPT_RT every case above uses them);
# - --no-slice-timer falls back to the tick (HZ=250: at least 2.5 ms);
# - with bpf_timer, pipe ping-pong on CPU 1 writes the slice timer about
#   once per slice of busy time, not once per run;
# - --latency-us 1000 --min-slice-us 400: 0.5 ms with 2 hogs, 0.4 ms with 4
#   (within 20%, plus the emulator's excess as below).
# Booted with nohz_full=1 the same holds (the PREEMPT_RT boot of scripts/test;
# scripts/bench-slice for bpf_timer on a nohz_full CPU).
#
# Tolerances that fit the emulator: no timer can end a slice sooner than the
# emulator delivers its interrupt, so the emulator's own timer latency is
# measured first in the same boot (an RT cyclictest, stock scheduler) and
# allowed on top of the goal: the p99 run length may exceed 1.5 x target by
# the emulator's p99 timer latency + 1 ms (the slice timer's path — timer
# softirq, kick, reschedule — has a longer tail in this emulator than the RT
# cyclictest's hard timer: the p99 run length was 1.06-1.3 ms above the target
# in quiet runs at every slice, with the RT p99 at 0.27-0.45 ms; not explained
# yet), and the mean may exceed its goal by the emulator's mean timer
# latency over the cyclictest histogram (each slice end is one timer expiry;
# in the slowest emulator on record, RT cyclictest avg 233-350 us, the means
# overshot by about that average). Whether the strict goal was met is
# printed too. Over the allowance, the emulator's latency and the slice are
# measured once more (the emulator's noise moves within a boot). On hardware
# the measured part is a few us; the fixed 1 ms is for this emulator only.
source "$(dirname "$0")/lib.sh"
taskset -p -c 0 $$ >/dev/null	# keep the controller off the measured CPU

# measure NHOGS ARGS...: prints "mean_ms p99_ms p99lo_ms expiry_ms p90lo_ms"
# for NHOGS hogs on CPU 1 (the p99 lies in (p99lo, p99]: 4 histogram buckets
# per power of two; expiry_ms: run time per slice expiry; p90lo: the lower
# bound of the p90's bucket; see hog_slices).
measure() {
	local out
	out=$(hog_slices "$@") || fail "scx_floor ${*:2} exited non-zero"
	set -- $out
	num "$3" || fail "no p99 in scx_floor's --stats-json (got: $out)"
	echo "$1 $3 $4 $5 $6"
}

# measure_emu WHAT: the emulator's timer latency on CPU 1 (3 s) into emu_avg,
# emu_p50, emu_p99, emu_max (us), printed after "emulator timer latency WHAT".
measure_emu() {
	read -r emu_avg emu_p50 emu_p99 emu_max < <(emu_timer_latency 1 3) || fail "cannot measure the emulator's timer latency"
	note "emulator timer latency $1: avg $emu_avg us, p50 $emu_p50, p99 $emu_p99, max $emu_max"
	figure emulator_timer_p99_us "$emu_p99"
}

grep -q nohz_full /proc/cmdline && note "booted with $(grep -o 'nohz_full=[^ ]*' /proc/cmdline)"
measure_emu "(RT cyclictest, stock scheduler)"
# p90_allowance T: the p90 run length allowed at a slice of T us, ms.
p90_allowance() { awk -v t="$1" 'BEGIN { printf "%.4f", t / 1000 * 1.5 + 1 }'; }

# check_slice T: one measurement at a fixed slice of T us against the goal
# and the emulator's allowance (from the last emu_timer_latency); prints
# the figures, sets MET (1 if the strict goal held) and WHY (empty if the
# allowance held).
check_slice() {
	local t=$1 m p99 p99lo per p90lo tol goal pgoal ex max pmax p90max lo
	shift
	read -r m p99 p99lo per p90lo < <(measure 2 --slice-us "$t" "$@") || fail "measurement at $t us failed"
	tol=$([ "$t" = 250 ] && echo 1.25 || echo 1.15)
	goal=$(awk -v t="$t" -v k=$tol 'BEGIN { printf "%.4f", t / 1000 * k }')
	pgoal=$(awk -v t="$t" 'BEGIN { printf "%.4f", t / 1000 * 1.5 }')
	lo=$(awk -v t="$t" 'BEGIN { printf "%.4f", t / 1000 * 0.85 }')
	# the whole latency counts: a slice end is one timer expiry, and in the
	# slowest emulator on record (CI at beeb2ef, avg 233-350 us) means
	# overshot by about its average latency, more than a lead absorbing up
	# to 7/8 of the slice (the former model) allowed
	ex=$(emu_excess_us 0) || fail "no emulator latency histogram"
	max=$(awk -v g="$goal" -v x="$ex" 'BEGIN { printf "%.4f", g + x / 1000 }')
	pmax=$(awk -v g="$pgoal" -v p="$emu_p99" 'BEGIN { printf "%.4f", g + p / 1000 + 1 }')
	p90max=$(p90_allowance "$t")
	le "$m" "$goal" && le "$p99" "$pgoal" && MET=1 || MET=0
	figure "slice${t}${1:+_thread}_mean_ms" "$m" "<= $max"
	figure "slice${t}${1:+_thread}_p99lo_ms" "$p99lo"
	figure "slice${t}${1:+_thread}_p90lo_ms" "$p90lo" "<= $p90max"
	figure "slice${t}${1:+_thread}_per_expiry_ms" "$per" ">= $lo"
	note "slice $t us, ${1:+$* (}$(slice_end_of)${1:+)}: mean $m ms (goal $goal, emulator allows $max), p99 run $p99 ms (goal $pgoal, emulator allowance $pmax$(le "$p99lo" "$pmax" || echo ": over")), p90 run over $p90lo ms (allowed $p90max), run time per expiry $per ms: $([ $MET = 1 ] && echo "goal met" || echo "goal missed")"
	WHY=
	le "$m" "$max" || WHY="mean slice $m ms > $max ms"
	# the goal is judged by a bucket's upper bound, the allowance by its
	# lower bound: a p90 reported as 2.097 ms (the bucket 1.835-2.097 ms)
	# against 2.093 ms allowed is not a measured excess
	num "$p90lo" || fail "no p90 in scx_floor's --stats-json"
	le "$p90lo" "$p90max" || WHY="$WHY${WHY:+; }p90 run length > $p90lo ms (its bucket's lower bound) > $p90max ms"
	# The timer must not end slices early either: the run time per slice
	# expiry at least 85% of the target. Not the schedstat mean: on
	# PREEMPT_RT at 4 ms it read 3.07-3.54 ms (77-88%) where the run time
	# per expiry was 4.13 ms: kthreads and the slice-end thread's early
	# wake-ups (a preemption that ends nothing) split runs.
	num "$per" || fail "no slice expiries on CPU 1 in scx_floor's --stats-json"
	ge "$per" "$lo" ||
		WHY="$WHY${WHY:+; }run time per slice expiry $per ms is more than 15% short of $t us"
}

# slice_end_of [LOG]: what ended the slices of the run that wrote LOG
# (default: the last measurement's)
slice_end_of() { grep -q "ended by a per-CPU SCHED_FIFO 99 thread" "${1:-$LOGDIR/hog_slices.log}" && echo "slice-end threads" || echo "bpf_timer"; }

bad=0 strict=0
for t in 250 500 1000 4000; do
	check_slice $t
	if [ -n "$WHY" ]; then
		# The emulator's latency moves within a boot (CI at fdf39c7: 0.359
		# ms at 0.25 ms against 0.324 allowed; a quiet run: 0.283-0.301):
		# over the allowance, the emulator is measured again and the slice
		# once more. A slice the timer does not end (the tick: 4 ms) fails
		# both.
		echo "  over the emulator's allowance ($WHY): measuring the emulator and the slice again"
		measure_emu again
		check_slice $t
		[ -z "$WHY" ] || { echo "  FAIL: $WHY"; bad=1; }
	fi
	[ "$MET" = 1 ] || strict=$((strict + 1))
done

# The slice-end threads (the mechanism where bpf_timer is refused) on any
# kernel, at 0.5 ms: the same allowance.
if [ "$(slice_end_of)" = bpf_timer ]; then
	check_slice 500 --slice-end thread
	if [ -n "$WHY" ]; then
		echo "  over the emulator's allowance ($WHY): measuring the emulator and the slice again"
		measure_emu again
		check_slice 500 --slice-end thread
		[ -z "$WHY" ] || { echo "  FAIL: --slice-end thread: $WHY"; bad=1; }
	fi
fi

read -r tick _ _ _ tick90 < <(measure 2 --slice-us 500 --no-slice-timer) || fail "tick-only measurement failed"
# the broken variant against the checks above: its mean and its p90 must
# both be over what a working timer at 0.5 ms is allowed
tmax=$(p90_allowance 500)
note "slice 500 us, tick only: mean $tick ms, p90 run over $tick90 ms (a timer at 0.5 ms is allowed a p90 up to $tmax)"
figure tick500_mean_ms "$tick" ">= 2.5"
figure tick500_p90lo_ms "$tick90" "> $tmax"
ge "$tick" 2.5 || { echo "  FAIL: tick-only mean $tick ms < 2.5 ms: the comparison is not showing the tick"; bad=1; }
num "$tick90" || fail "no p90 in the tick-only case's --stats-json"
le "$tick90" "$tmax" && { echo "  FAIL: tick-only p90 over $tick90 ms is within the 0.5 ms allowance $tmax: the p90 check cannot fail"; bad=1; }

# Pipe ping-pong on CPU 1 (hackbench: 40 tasks, runs of about 0.2 ms, five
# to a 1 ms slice): a timer still pending from an earlier run covers later ones,
# and its callback re-arms it once for the run in progress. Timer writes
# then follow busy time, about one per slice, not runs. Arming it at every
# run start (the broken variant, and scx_floor up to 6744a53) writes it
# once per run: arms == runs, which the bound below refuses.
j=$LOGDIR/pingpong.json
rm -f "$j"
start_floor --stats-json "$j" --slice-us 1000
if [ "$(slice_end_of "$FLOOR_LOG")" != bpf_timer ]; then
	stop_floor || fail "scx_floor exited non-zero before the ping-pong"
	note "ping-pong: slices end by slice-end threads here (no bpf_timer): not measured"
else
	taskset -c 1 hackbench -p -g 1 -l 300 >/dev/null || fail "hackbench on CPU 1 failed"
	stop_floor || fail "scx_floor exited non-zero after the ping-pong"
	read -r runs arms busy_ms < <(jq -r '.cpus[] | select(.cpu == 1) | .counters
		| "\(.nr_runs) \(.nr_timer_arms) \(.normal_runtime_ns / 1e6 | floor)"' "$j") ||
		fail "no CPU 1 counters in $j"
	num "$arms" || fail "no nr_timer_arms in $j"
	[ "$arms" -gt 0 ] || fail "no slice timer write in the ping-pong: bpf_timer did not end slices"
	# one per ms of busy time at a 1 ms slice, twice over, and 100 for the
	# starts from idle. The runs (hackbench's writers fill a pipe per run:
	# about 0.2 ms each here) must outnumber that bound, or arming per run
	# would pass too.
	amax=$((2 * busy_ms + 100))
	figure pingpong_timer_arms_per_busy_ms "$(awk -v a="$arms" -v b="$busy_ms" 'BEGIN { printf "%.3f", b ? a / b : a }')" "<= 2 (+100 arms)"
	figure pingpong_runs_per_busy_ms "$(awk -v r="$runs" -v b="$busy_ms" 'BEGIN { printf "%.3f", b ? r / b : 0 }')"
	note "ping-pong on CPU 1 at a 1 ms slice: $runs runs, $busy_ms ms busy, $arms timer writes (at most $amax)"
	[ "$runs" -gt "$amax" ] || fail "the ping-pong made $runs runs in $busy_ms ms, not more than the $amax timer writes allowed: the check cannot fail"
	[ "$arms" -le "$amax" ] ||
		{ echo "  FAIL: $arms slice timer writes for $runs runs in $busy_ms ms (at most $amax): the timer is written per run, not per slice"; bad=1; }
fi

for n in 2 4; do
	want=$([ $n = 2 ] && echo 0.5 || echo 0.4)
	for try in 1 2; do
		read -r m _ < <(measure $n --latency-us 1000 --min-slice-us 400) || fail "latency mode, $n hogs"
		# +20%, plus the emulator's excess as for the fixed slices
		ex=$(emu_excess_us 0) || fail "no emulator latency histogram"
		hi=$(awk -v w=$want -v x="$ex" 'BEGIN { printf "%.4f", w * 1.2 + x / 1000 }')
		figure "latency_${n}hogs_mean_ms" "$m" "$(awk -v w=$want 'BEGIN { print w * 0.8 }') .. $hi"
		note "--latency-us 1000 --min-slice-us 400, $n hogs: mean $m ms (want $want +-20%, emulator allows up to $hi)"
		le "$m" "$hi" && ge "$m" "$(awk -v w=$want 'BEGIN { print w * 0.8 }')" && break
		# once more, the emulator measured again: its latency moves
		[ $try = 2 ] && { echo "  FAIL: latency mode with $n hogs: $m ms, want $want ms +-20% (up to $hi)"; bad=1; break; }
		measure_emu again
	done
done
note "strict goals missed at $strict of 4 fixed slices (emulator latency above)"
[ $bad = 0 ] || fail "slice goals missed (see above)"
