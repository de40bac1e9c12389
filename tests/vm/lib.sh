# tests/vm/lib.sh — helpers for the VM tests (sourced; runs inside the VM as root).
# Each test is a bash script that exits 0 on pass, non-zero on failure, and
# prints what it measured.

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FLOOR=${FLOOR:-$ROOT/target/release/scx_floor}
SCX=/sys/kernel/sched_ext
LOGDIR=${LOGDIR:-/tmp/scx_floor-tests}
mkdir -p "$LOGDIR"

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "  $*"; }

scx_state() { cat $SCX/state 2>/dev/null || echo missing; }

# wait_state STATE SECS: poll /sys/kernel/sched_ext/state until it is STATE.
wait_state() {
	local want=$1 secs=${2:-20} i
	for ((i = 0; i < secs * 10; i++)); do
		[ "$(scx_state)" = "$want" ] && return 0
		sleep 0.1
	done
	return 1
}

# start_floor ARGS...: start scx_floor in the background, wait until enabled.
# Sets FLOOR_PID and FLOOR_LOG.
start_floor() {
	FLOOR_LOG=$LOGDIR/floor.$$.$RANDOM.log
	chrt -o 0 "$FLOOR" "$@" >"$FLOOR_LOG" 2>&1 &
	FLOOR_PID=$!
	if ! wait_state enabled 30; then
		cat "$FLOOR_LOG" >&2
		fail "scx_floor did not reach state enabled (state: $(scx_state))"
	fi
}

# stop_floor [SIG]: signal scx_floor (default INT), wait, check it unloaded.
stop_floor() {
	local sig=${1:-INT} rc
	kill -"$sig" "$FLOOR_PID" 2>/dev/null
	wait "$FLOOR_PID"
	rc=$?
	wait_state disabled 20 || fail "state is $(scx_state) after SIG$sig"
	return $rc
}

# hog CPU: a CPU-bound SCHED_OTHER task pinned to CPU; prints its pid.
hog() {
	taskset -c "$1" chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 &
	echo $!
}

# schedstat PID: "run_ns timeslices" (fields 1 and 3 of /proc/PID/schedstat).
schedstat() { awk '{print $1, $3}' "/proc/$1/schedstat"; }

# mean_slice_ms SECS PID...: mean run length (ms) of the tasks over SECS:
# sum of delta field 1 / sum of delta field 3 of /proc/PID/schedstat.
mean_slice_ms() {
	local secs=$1 p
	shift
	local before=() after=()
	for p in "$@"; do before+=("$(schedstat "$p")"); done
	sleep "$secs"
	for p in "$@"; do after+=("$(schedstat "$p")"); done
	local i run=0 cnt=0
	for i in "${!before[@]}"; do
		set -- ${before[$i]} ${after[$i]}
		run=$((run + $3 - $1))
		cnt=$((cnt + $4 - $2))
	done
	[ "$cnt" -gt 0 ] || { echo "inf"; return; }
	awk -v r="$run" -v c="$cnt" 'BEGIN { printf "%.3f\n", r / c / 1e6 }'
}

# dmesg_errors: sched_ext errors or stalls the kernel logged.
dmesg_errors() {
	dmesg | grep -E 'sched_ext: .*(error|stall|disabled \((runnable|.*error))|runnable task stall|BUG:|WARNING:' || true
}

# float comparisons: le A B, ge A B
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
