#!/bin/bash
# The A/B harness (scx_floor-ab): bad input gets a clear message and changes
# nothing; a --quick run of every scenario under stock and scx-floor writes a
# JSON row for each pair, the table and both PNGs, and puts every knob back;
# SIGINT and SIGTERM mid-run stop the hogs and scx_floor and restore the
# knobs; after a SIGKILL the next run restores them from its journal; the harness's S1 and S2 figures agree with measurements by hand
# (docs/scenarios.md: schedstat of a normal task under an RR hog, 6 s, within
# one fair_server burst per window; of two hogs sharing a CPU, 5 s).
source "$(dirname "$0")/lib.sh"
AB=${AB:-$ROOT/target/release/scx_floor-ab}
OUT=$LOGDIR/ab.$$
CPU=1
as_controller
dmesg -C

knobs() { # the knobs the harness may change, as one line
	echo "fair=$(cat /sys/kernel/debug/sched/fair_server/cpu$CPU/runtime)" \
		"ext=$(cat /sys/kernel/debug/sched/ext_server/cpu$CPU/runtime)" \
		"slice=$(cat /sys/kernel/debug/sched/base_slice_ns)"
}
leftovers() { pgrep -f 'scx_floor-ab helper' || true; pgrep -x scx_floor || true; }
none_left() { [ -z "$(leftovers)" ]; }
knobs_back() { [ "$(knobs)" = "$orig" ]; }
orig=$(knobs)

expect_err() { # what regex CMD...: fails, says it, changes nothing
	local what=$1 re=$2 out rc
	shift 2
	out=$("$@" 2>&1); rc=$?
	out=$(tr '\n' ' ' <<<"$out")
	[ $rc -ne 0 ] || fail "$what: exit code 0"
	grep -Eq -e "$re" <<<"$out" || fail "$what: message does not match /$re/: $out"
	if [ "$what" != "scheduler loaded" ]; then # (a loaded scx_floor has the ext_server off)
		[ "$(knobs)" = "$orig" ] || fail "$what: knobs changed: $(knobs), were $orig"
		[ "$(scx_state)" = disabled ] || fail "$what: sched_ext $(scx_state)"
	fi
	note "$what: exit $rc, \"$(grep -Eo -e "$re" <<<"$out")\""
}
expect_err "unknown scenario" "invalid value 's7'.*possible values: s0, s1, s2, throughput, latency" "$AB" --scenarios s1,s7
expect_err "unknown config" "invalid value 'cfs'.*stock-noserver" "$AB" --configs cfs
expect_err "not root" "must run as root" setpriv --reuid=65534 --regid=65534 --clear-groups "$AB" --quick
expect_err "no sched_ext" "no sched_ext" unshare -m sh -c "mount -t tmpfs none /sys/kernel && exec $AB --quick"
expect_err "bad cpu" "--cpu 7 is not an online CPU" "$AB" --cpu 7 --quick
start_floor
expect_err "scheduler loaded" "already loaded.*floor" "$AB" --quick
kill -0 "$FLOOR_PID" || fail "the loaded scx_floor died"
stop_floor || fail "scx_floor exit code $?"
[ "$(knobs)" = "$orig" ] || fail "knobs after scx_floor: $(knobs), were $orig"

# A quick run of every scenario under stock and scx-floor.
start=$SECONDS
"$AB" --quick --configs stock,scx-floor --cpu $CPU --out "$OUT" >"$OUT.table" 2>"$OUT.err" \
	|| { tail -20 "$OUT.err"; fail "quick run exit code $?"; }
note "quick run: $((SECONDS - start)) s"
sed 's/^/    /' "$OUT.table"
J=$OUT/ab.json
for s in s0 s1 s2 throughput latency latency-rt; do
	for c in stock scx-floor; do
		n=$(jq --arg s $s --arg c $c '[.rows[] | select(.scenario == $s and .config == $c)] | length' "$J")
		[ "$n" = 1 ] || fail "$n rows for $s / $c in ab.json"
		v=$(jq -r --arg s $s --arg c $c '.rows[] | select(.scenario == $s and .config == $c) | "\(.value) \(.error)"' "$J")
		[[ "$v" =~ ^[0-9.e+-]+\ null$ ]] || fail "$s / $c: value, error = $v"
		grep -q "^| $s | $c | " "$OUT.table" || fail "no table row for $s / $c"
	done
done
[ "$(jq '.rows | length' "$J")" = 12 ] || fail "ab.json has $(jq '.rows | length' "$J") rows, want 12"
# the latency rows name the machine's own (stock's latency-rt) and how far beyond it they lie
grep -E "^\| latency \| scx-floor \| .*the machine's own \(latency-rt under stock\): [0-9]+, (within it|[0-9.]+ beyond it)" "$OUT.table" >/dev/null ||
	fail "the latency row does not name the machine's own latency"
[ "$(jq -r '.rows[] | select(.config == "stock") | .ratio' "$J" | sort -u)" = 1 ] || fail "stock rows' ratio is not 1"
for p in s1_bandwidth.png s2_runlen.png; do
	[ "$(head -c 4 "$OUT/$p" | tail -c 3)" = PNG ] || fail "$p is not a PNG"
done
[ "$(jq -r .environment.kernel "$J")" = "$(uname -r)" ] || fail "kernel missing from ab.json"
[ "$(knobs)" = "$orig" ] || fail "knobs after the run: $(knobs), were $orig"
[ "$(scx_state)" = disabled ] || fail "sched_ext $(scx_state) after the run"
[ -z "$(leftovers)" ] || fail "processes left: $(leftovers)"

# SIGINT in S1 with the fair_server off, SIGTERM while scx_floor serves (exit
# 130, knobs restored); SIGKILL while scx_floor serves (no cleanup can run: the
# children's parent-death signals stop the hogs and unload scx_floor).
# The runs below are signalled mid-scenario, so they are full runs (S0 10 s,
# S1 a 6.5 s window), not --quick ones: a --quick S1 ends about 4 s after
# its start, and with the binaries on a tmpfs one once ended before a
# signal sent 4 s after it (CI at 5fe44d6: "a second harness ran beside
# the first"). mid_run waits for the scenario itself, then 1 s more: the
# fair_server off (stock-noserver), or scx_floor serving CPU 1 (its
# ext_server runtime 0, set once the server takes over; the harness starts
# its hogs after that). The knobs are back before each case (knobs_back).
fair_off() { [ "$(read_file /sys/kernel/debug/sched/fair_server/cpu$CPU/runtime)" = 0 ]; }
floor_serving() { state_is enabled && ext_server_is $CPU 0; }
mid_run() { # CONFIG PID ERRFILE WHAT: the harness PID's run of CONFIG is under way
	local cond
	case $1 in
	stock-noserver) cond=fair_off ;;
	scx-floor) cond=floor_serving ;;
	*) fail "mid_run: no rule for $1" ;;
	esac
	if wait_for 30 holds_or_gone "$2" $cond >/dev/null && kill -0 "$2" 2>/dev/null; then
		sleep 1
		kill -0 "$2" 2>/dev/null && return 0
	fi
	# stopped as an operator would (its cleanup runs), its last words shown
	kill -INT "$2" 2>/dev/null; wait "$2"
	fail "$4: the harness ended, or its scenario never got under way ($cond), before the signal: $(tail -3 "$3" | tr '\n' ' ')"
}
interrupt() { # SIG CONFIG SCENARIO EXIT
	"$AB" --configs "$2" --scenarios "$3" --cpu $CPU --out "$OUT.sig" >/dev/null 2>"$OUT.sig.err" &
	local p=$! rc
	mid_run "$2" $p "$OUT.sig.err" "SIG$1 during $3 / $2"
	kill -"$1" $p
	wait $p; rc=$?
	[ $rc = "$4" ] || fail "SIG$1 during $3 / $2: exit $rc, want $4"
	wait_state disabled 20 || fail "SIG$1 during $3 / $2: sched_ext $(scx_state)"
	# after SIGKILL the children go on their parent-death signals: scx_floor
	# unloads once its last thread exits, and its guardian then restores (CI
	# at 219b297 found one still there after 0.5 s and gone when listed)
	wait_for 5 none_left >/dev/null || fail "SIG$1 during $3 / $2: processes left after 5 s: $(leftovers)"
	wait_for 5 knobs_back >/dev/null || fail "SIG$1 during $3 / $2: knobs $(knobs), were $orig"
	note "SIG$1 during $3 / $2: exit $rc, knobs as they were, nothing left running"
}
interrupt INT stock-noserver s1 130
interrupt TERM scx-floor s0 130
interrupt KILL scx-floor s1 137

# SIGKILL with the fair_server off (stock-noserver, S1): no cleanup runs, and
# the fair_server stays off. A second harness meanwhile is refused (one at a
# time); the next run puts the knob back from the harness's journal
# (/run/scx_floor-ab/knobs) before it changes anything, and says so.
"$AB" --configs stock-noserver --scenarios s1 --cpu $CPU --out "$OUT.kill" >/dev/null 2>"$OUT.kill.err" &
p=$!
mid_run stock-noserver $p "$OUT.kill.err" "SIGKILL in S1 / stock-noserver"
out=$("$AB" --quick --configs stock --scenarios s2 --cpu $CPU --out "$OUT.two" 2>&1) && fail "a second harness ran beside the first"
grep -q "scx_floor-ab/lock has been held" <<<"$out" || fail "a second harness: $out"
kill -0 $p 2>/dev/null || fail "SIGKILL in S1 / stock-noserver: the harness had ended before the signal"
kill -KILL $p
wait $p
grep -q "fair=0 " <<<"$(knobs) " || fail "SIGKILL in S1 / stock-noserver: the fair_server is $(knobs), not off: the case shows nothing"
wait_for 5 none_left >/dev/null || fail "SIGKILL in S1 / stock-noserver: processes left after 5 s: $(leftovers)"
"$AB" --quick --configs stock --scenarios s2 --cpu $CPU --out "$OUT.next" >/dev/null 2>"$OUT.next.err" \
	|| fail "the run after a SIGKILL failed: $(tail -3 "$OUT.next.err")"
grep -q "put /sys/kernel/debug/sched/fair_server/cpu$CPU/runtime back to" "$OUT.next.err" \
	|| fail "the run after a SIGKILL did not say it put the fair_server back: $(grep -v '^ ' "$OUT.next.err" | head -5)"
knobs_back || fail "after the run that followed a SIGKILL: knobs $(knobs), were $orig"
note "SIGKILL during s1 / stock-noserver: fair_server left off; a second harness refused; the next run put it back"

# S1 by hand (stock, fair_server 50 ms / 1 s) against the harness's figure.
# A burst of twice the runtime or more is not the kernel's: the host held
# the vCPU off in the middle of a burst, and the guest charged the time to
# the task that was running (300 ms of host FIFO load on the vCPU thread's
# core gave bursts of ~350 ms; CI at 134beec read 179.8 ms/s by hand over
# 6 s, ~780 ms above the fair_server's budget, with the harness's bursts of
# 51 - 54 ms in the same boot). Such a window is measured again, once.
for try in 1 2; do
	n=$(taskset -c $CPU chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
	sleep 0.3
	h=$(rt_hog $CPU rr 25 20) || fail "no hog"
	sleep 0.5
	read -r hand big nb longest <<<"$(bursts_of 6 "$n")"
	kill -KILL "$h" "$n" 2>/dev/null
	wait_for 5 sh -c "! kill -0 $h 2>/dev/null && ! kill -0 $n 2>/dev/null" >/dev/null # (not our children)
	note "S1 stock by hand: $hand ms/s over 6 s in $nb bursts, the largest $big ms (runtime 50); the sampler's longest interval $longest ms"
	figure s1_stock_hand_largest_burst_ms "$big" "<100"
	ge "$big" 100 || break
	[ $try = 2 ] && fail "S1 by hand: a burst of $big ms, twice the fair_server's runtime or more, in both windows: the host held the vCPU off"
	note "a burst of $big ms: the host held the vCPU off; measured again"
done
s1row='.rows[] | select(.scenario == "s1" and .config == "stock")'
ab=$(jq -r "$s1row | .value" "$J")
abw=$(jq -r "$s1row | .raw.window_s | .[1] - .[0]" "$J")
# The fair_server serves in one 50 ms burst per 1 s period, and a window can
# hold one burst more or less than its length in periods (the quick run's
# 3 s window read 37.2 ms/s once in CI, two bursts and a part, against 52.7
# by hand over 6 s). So the two may differ by one burst in each window, plus
# 2 ms/s. A harness that misreads the task's CPU time (0 ms/s from a lagging
# schedstat on a nohz_full CPU, before it used perf task-clock counters) is
# still ~50 ms/s off.
tol=$(awk -v w="$abw" 'BEGIN { printf "%.1f", 50 / w + 50 / 6 + 2 }')
abbig=$(jq -r "$s1row | .raw.largest_burst_ms" "$J")
note "S1 stock: by hand $hand ms/s (6 s), harness $ab ms/s ($abw s window, the largest burst $abbig ms); allowed difference $tol"
num "$abbig" || fail "the harness's S1 row has no largest burst: $abbig"
# the harness's own window can hold such a stall too: it says so in its
# row, and the quick run is not repeated for it
if ge "$abbig" 100; then
	note "the harness's S1 window held an emulator stall (a burst of $abbig ms): not compared"
else
	figure s1_stock_hand_minus_harness_ms_per_s "$(awk -v a="$hand" -v b="$ab" 'BEGIN { printf "%.1f", a - b }')" "+-$tol"
	if ! awk -v a="$hand" -v b="$ab" -v t="$tol" 'BEGIN { d = a - b; exit !(d < t && d > -t) }'; then
		# the harness's samples (s, the normal task's ms since its
		# start): where its bursts fell
		jq -r "$s1row"' | .raw.samples_t_s_normal_ms_rt_ms
			| map("\(.[0] * 10 | round / 10) \(.[1] | round)") | join(", ")' "$J" | fold -w 100 | sed 's/^/    /'
		fail "S1 by hand ($hand ms/s) and the harness ($ab ms/s) differ by $tol ms/s or more"
	fi
fi
# S2 by hand (stock: two hogs, schedstat field 1 / field 3 over 5 s) against the
# harness's figure: the mean slice of stock EEVDF moves by ~20% between runs
# here, and more while the emulator stalls (5.7 ms by hand against 1.76 in the
# harness once, in a run whose emulator timer p99 was 1.5 ms): measured by
# hand once more before the figures are called different. Stock's run length
# itself moves between boot moments: by hand 1.79, 1.97, 3.27 and 3.21 ms
# against the harness's 1.85, 2.57, 1.91 and 1.91 minutes before (CI runs of
# 2026-12-03), a ratio of up to 1.71 with both tries alike. A factor of 2
# still fails a harness that misreads the probes (a figure 0, or in us).
ab2=$(jq -r '.rows[] | select(.scenario == "s2" and .config == "stock") | .value' "$J")
for try in 1 2; do
	a=$(hog $CPU); b=$(hog $CPU)
	sleep 0.5
	hand2=$(mean_slice_ms 5 "$a" "$b")
	kill -KILL "$a" "$b" 2>/dev/null; wait "$a" "$b" 2>/dev/null
	note "S2 stock: by hand $hand2 ms, harness $ab2 ms"
	awk -v a="$hand2" -v b="$ab2" 'BEGIN { exit !(b > 0 && a / b < 2 && a / b > 0.5) }' && break
	[ $try = 2 ] && fail "S2 by hand ($hand2 ms) and the harness ($ab2 ms) differ by a factor of 2 or more (twice)"
done
errs=$(dmesg_errors)
[ -z "$errs" ] || { echo "$errs"; fail "dmesg reports sched_ext trouble"; }
