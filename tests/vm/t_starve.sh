#!/bin/bash
# Starvation guard (issue 6 found it, t_stress): weighted vtime alone lets a
# nice-19 task wait for the charge of one slice (x100 at nice 19) times the
# number of nice-0 tasks per CPU; behind enough of them that passes the 10 s
# watchdog and the kernel ejects scx_floor. A nice-19 clock probe shares the
# 2 CPUs with 80 nice-0 hogs for 18 s (pure vtime: ~300 ms of vtime per 3 ms
# slice, vtime advancing 2/80 ms per ms: a wait of ~12 s): scx_floor stays
# loaded, the probe's longest gap stays under 1.9 s (1 s guard + 100 ms scan
# + a slice + emulator; a rescued run lost to a preemption makes it a second
# wait, >= 2 s), the guard's rescues are counted, and a task that sleeps and
# wakes among the hogs keeps a max wake-up latency <= 400 ms: observed
# 62-190 ms, while the bug it catches (vtime_now dragged ahead: every
# wake-up queued behind all 80 hogs) waits for the guard's rescue, about
# 1 s (reasoned, not measured).
source "$(dirname "$0")/lib.sh"
as_controller
AB=${AB:-$ROOT/target/release/scx_floor-ab}
j=$LOGDIR/starve.json
rm -f "$j"
start_floor --stats-json "$j"
# The probe first (spinning before the load comes; its exec alone would take
# minutes as a nice-19 task behind 80 hogs), then 80 nice-0 hogs forked by one
# shell (no exec: quick to start), all unpinned (this shell is on CPU 0).
taskset -c 0,1 chrt -o 0 nice -n 19 "$AB" helper probe --secs 20 --threshold-us 20000 >"$LOGDIR/starve.probe" & P=$!
sleep 2
taskset -c 0,1 chrt -o 0 sh -c 'for i in $(seq 80); do while :; do :; done & done; wait' >/dev/null 2>&1 & G=$!
# A task that sleeps and wakes (every 10 ms) among them: a rescued task's run
# must not move vtime_now (where waking tasks are placed) far ahead, or every
# wake-up would wait behind all 80 hogs until the guard rescues it (~1 s).
# no -p: with a priority (even 0) cyclictest runs its thread at SCHED_FIFO
taskset -c 0,1 chrt -o 0 cyclictest -m -t 1 --policy=other -i 10000 -D 15 -q >"$LOGDIR/starve.cyc" 2>&1 & C=$!
wait "$C" || fail "cyclictest failed: $(tail -2 "$LOGDIR/starve.cyc")"
wait "$P" || fail "the probe failed"
kill -KILL $(pgrep -P "$G") "$G" 2>/dev/null; wait "$G" 2>/dev/null
[ "$(scx_state)" = enabled ] || fail "scx_floor was ejected (state $(scx_state))"
stop_floor || fail "scx_floor exited non-zero"
max=$(grep -o '"len_ns":[0-9]*' "$LOGDIR/starve.probe" | cut -d: -f2 | sort -n | tail -1)
[ -n "$max" ] || fail "the probe recorded no gap over 20 ms: it never waited (were the hogs running?)"
resc=$(jq '[.cpus[].counters.nr_starve_rescue] | add' "$j")
max_ms=$((max / 1000000))
read -r cavg cmax < <(cyclictest_avg_max <"$LOGDIR/starve.cyc")
[ -n "$cmax" ] || fail "no cyclictest result: $(cat "$LOGDIR/starve.cyc")"
note "nice-19 probe behind 80 nice-0 hogs on 2 CPUs: longest wait $max_ms ms, $resc starvation rescues"
note "a task waking every 10 ms among them: wake-up latency avg $cavg us, max $cmax us"
figure nice19_longest_wait_ms "$max_ms" "<= 1900"
figure wakeup_latency_max_us "$cmax" "<= 400000"
figure rescues "$resc" "> 0"
[ "$cmax" -le 400000 ] || fail "a waking task waited $cmax us: vtime_now was dragged ahead?"
[ "$max_ms" -le 1900 ] || fail "the nice-19 task waited $max_ms ms: a rescued run cut short?"
[ "$resc" -gt 0 ] || fail "no starvation rescue counted"
