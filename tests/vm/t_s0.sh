#!/bin/bash
# S0: the noise the server puts on an RT task. A SCHED_FIFO 1 clock-reading
# probe (scx_floor-ab helper probe, in the manner of osnoise) on CPU 1 with
# two normal hogs there, 10 s, server budget 20 us / 1 s:
#   floor:   the probe alone on CPU 1, stock kernel, no hogs: what the
#            emulator alone does to it (no knob written: on 7.3 a write to the
#            fair_server's debugfs knobs changes the kernel's dl_server
#            behaviour for the rest of the boot, docs/scenarios.md S1);
#   default: scx_floor --server-runtime-us 20;
#   dl:      the same with --rt-runtime-unlimited (kernel-cut mode).
# Goals (issue 3): no single gap > 1 ms; overrun p99 < 100 us, max < 500 us.
# The emulator alone shows single gaps of 1-4 ms in some boots and its timer
# latency is ~0.3 ms (1 ms and more in its tail), so the test prints the goals
# and asserts what can be told apart from the emulator: the server served the
# hogs (>= 1 boost on CPU 1), scx_floor was never ejected, every boost ended
# within 7 ms (in kernel-cut mode the kernel cuts it by the next tick at
# the latest at HZ=250; in FIFO mode the executor's local timer: 0.09-0.27
# ms usually; the emulator's tail took both to 4.1-4.2 ms once in 10 runs,
# and a 10 ms late end, the broken variant, is 10.8), no period held
# more than 7 ms of boosted run time for its 0.02 ms budget (the run until the
# restored policy took effect, as BPF counts it: the overrun is taken when
# the planner ends the boost, and a restore that takes effect late shows
# here), and sched_rt_runtime_us is back afterwards. Gaps are told apart by time:
# scx_floor runs with -v, which logs each boost with its CLOCK_MONOTONIC time
# (the probe's clock); a gap > 1 ms that overlaps [boost - 1 ms, boost +
# 10 ms] is the boost's. At most 2 per boost (a server thread waking on the
# served CPU, as before the thread placement fix, gave 15 from 2 boosts).
# The other gaps are the emulator's: their count moves between runs and
# within a boot (the probe alone: 0-8, 13 once; CI at 3f6e064: 42 in one
# 10 s run, at aa0c183: 10 against 2 alone), so they are only held against
# a gross regression: over the probe alone's count + 3 the probe alone is
# measured again with scx_floor stopped, the higher count kept, and more
# than 3 times that + 10, and more than OUT_FLOOR, fails. OUT_FLOOR (100 in
# 10 s) is what a noise source of 10 Hz or more on CPU 1, each stop over
# 1 ms, gives at least; the emulator alone, beside scx_floor, has reached
# 27 (the probe alone then 1), 42 and 52 (the probe alone 12 and 4 around
# it) in CI runs, its bursts not following the probe-alone count.
# (Traced with sched_switch/irq/hrtimer events: the kernel-cut gaps are the
# boosted task's run until the hrtick, which TCG delivers 0.3-1.8 ms late; a
# FIFO boost is the executor's two sched_setattr() calls, two switches and
# the run, 1.0-2.0 ms; the others are the emulator's own: disk IRQs, the
# tick, vCPU stalls.)
source "$(dirname "$0")/lib.sh"
AB=${AB:-$ROOT/target/release/scx_floor-ab}
OUT_FLOOR=100
as_controller
dmesg -C
rt_orig=$(cat /proc/sys/kernel/sched_rt_runtime_us)
[ "$rt_orig" != -1 ] || fail "kernel.sched_rt_runtime_us is -1 already: the default mode would be kernel-cut too"

# probe NAME: 10 s of the probe on CPU 1; sets MAXG (us), N1 (gaps > 1 ms)
# and J (its JSON report).
probe() {
	local j=$LOGDIR/s0.${1%% *}.json
	J=$j
	chrt -f 1 taskset -c 1 "$AB" helper probe --secs 10 --threshold-us 300 >"$j" ||
		fail "$1: the probe failed"
	MAXG=$(grep -o '"len_ns":[0-9]*' "$j" | cut -d: -f2 | sort -n | tail -1)
	MAXG=$(( ${MAXG:-0} / 1000 ))
	N1=$(grep -o '"len_ns":[0-9]*' "$j" | cut -d: -f2 | awk '$1 > 1000000' | wc -l)
	note "$1: longest gap $MAXG us, $N1 gaps > 1 ms in 10 s (top: $(grep -o '"len_ns":[0-9]*' "$j" | cut -d: -f2 | sort -n | tail -5 | awk '{printf "%d ", $1 / 1000}')us)"
}
hogs() { H1=$(hog 1); H2=$(hog 1); wait_spinning 20 "$H1" "$H2" || fail "the hogs did not start"; }
# boost_gaps JSON LOG: "IN OUT NB": gaps > 1 ms in the probe's report that
# overlap [b - 1 ms, b + 10 ms] for a boost b on CPU 1 in scx_floor's -v log
# ("cpu 1: t=MS boost PID"), the other gaps > 1 ms, and the boosts.
boost_gaps() {
	python3 - "$1" "$2" <<'PY'
import json, re, sys
gaps = [(g["start_ns"], g["start_ns"] + g["len_ns"]) for g in json.load(open(sys.argv[1]))["gaps"] if g["len_ns"] > 1_000_000]
boosts = [float(m.group(1)) * 1e6 for m in re.finditer(r"cpu 1: t=([0-9.]+) boost ", open(sys.argv[2], errors="replace").read())]
near = lambda s, e: any(s <= b + 10e6 and e >= b - 1e6 for b in boosts)
inside = sum(1 for s, e in gaps if near(s, e))
print(inside, len(gaps) - inside, len(boosts))
PY
}
# cpu1 COLUMN: that column of CPU 1's row in the last server table
cpu1() { awk -v c="$1" '/^server:/ {t = 1; next} t && $1 == 1 {v = $c; t = 0} END {print (v == "" ? 0 : v)}' "$FLOOR_LOG"; }

# The probe binary comes over 9p: run the probe once before any measurement
# (traced: a cold probe blocked in D state on its own page faults, 1.4 ms).
chrt -f 1 taskset -c 1 "$AB" helper probe --secs 0.3 --threshold-us 300 >/dev/null 2>&1

probe floor
floor_n1=$N1
figure floor_gaps_over_1ms "$N1"
figure floor_longest_gap_us "$MAXG"

for mode in default dl; do
	args=(--server-runtime-us 20 --stats 5 -v)
	[ $mode = dl ] && args+=(--rt-runtime-unlimited --boost deadline)
	start_floor "${args[@]}"
	seq0=$(enable_seq)
	hogs
	probe "$mode"
	kill -KILL "$H1" "$H2"
	assert_not_ejected "$seq0" "$mode"
	stop_floor || fail "$mode: scx_floor exit code $?"
	boosts=$(( $(cpu1 5) + $(cpu1 6) ))
	p99=$(cpu1 9); omax=$(cpu1 10); pbmax=$(cpu1 22)
	note "$mode: $boosts boosts on CPU 1 in $(cpu1 2) periods, overrun p99 bucket $p99 us, max $omax us, debt $(cpu1 15) us"
	if [ "$MAXG" -le 1000 ]; then note "  goal met: no gap > 1 ms"; else note "  GOAL MISSED (emulator?): longest gap $MAXG us > 1 ms"; fi
	if [ "$p99" != - ] && le "$p99" 100 && le "$omax" 500; then note "  goal met: overrun p99 < 100 us, max < 500 us"
	else note "  GOAL MISSED (emulator timer latency): overrun p99 $p99 us, max $omax us"; fi
	[ "$boosts" -ge 1 ] || fail "$mode: the server never boosted on CPU 1 (or printed no server table)"
	if [ $mode = dl ]; then
		grep -q "kernel-cut mode" "$FLOOR_LOG" || fail "dl: not in kernel-cut mode"
		[ "$(cpu1 6)" = 0 ] || fail "dl: $(cpu1 6) SCHED_FIFO boosts in kernel-cut mode"
	else
		! grep -q "kernel-cut mode" "$FLOOR_LOG" || fail "default: in kernel-cut mode"
	fi
	read -r n_in n_out n_boosts < <(boost_gaps "$J" "$FLOOR_LOG") || fail "$mode: cannot read the probe's gaps"
	note "$mode: gaps > 1 ms: $n_in within 10 ms of the $n_boosts boosts in the log, $n_out elsewhere"
	figure "${mode}_longest_gap_us" "$MAXG"
	figure "${mode}_gaps_near_boosts_per_boost" "$(awk -v a="$n_in" -v b="$n_boosts" 'BEGIN { printf "%.2f", b ? a / b : 0 }')" "<= 2"
	figure "${mode}_gaps_elsewhere" "$n_out" "<= max(3 x floor + 10, $OUT_FLOOR)"
	figure "${mode}_overrun_max_us" "$omax" "<= 7000"
	figure "${mode}_period_boosted_max_ms" "$pbmax" "<= 7"
	[ "$n_boosts" -ge 1 ] || fail "$mode: no boost on CPU 1 in scx_floor's -v log"
	[ "$n_in" -le $((2 * n_boosts)) ] ||
		fail "$mode: $n_in gaps > 1 ms within 10 ms of $n_boosts boosts (2 per boost allowed)"
	if [ "$n_out" -gt $((floor_n1 + 3)) ]; then
		probe "$mode-recheck (the probe alone again)"
		[ "$N1" -le "$floor_n1" ] || floor_n1=$N1
	fi
	allowed=$((3 * floor_n1 + 10))
	[ "$allowed" -ge "$OUT_FLOOR" ] || allowed=$OUT_FLOOR
	[ "$n_out" -le "$allowed" ] ||
		fail "$mode: $n_out gaps > 1 ms away from boosts, the probe alone $floor_n1 ($allowed allowed: 3 x that + 10, at least $OUT_FLOOR)"
	le "$omax" 7000 || fail "$mode: overrun max $omax us > 7 ms (boosts not cut on time)"
	le "$pbmax" 7 || fail "$mode: $pbmax ms boosted in one period for a 0.02 ms budget (> 7 ms: boosts not ended on time)"
	[ "$(cat /proc/sys/kernel/sched_rt_runtime_us)" = "$rt_orig" ] || fail "sched_rt_runtime_us not restored after $mode"
done
errs=$(dmesg_errors)
[ -z "$errs" ] || { echo "$errs"; fail "dmesg reports sched_ext trouble"; }
exit 0
