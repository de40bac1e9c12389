#!/bin/bash
# Slices end on time: --slice-us 500, two CPU hogs pinned to CPU 1 for 5 s.
# The mean slice (schedstat field 1 / field 3, both tasks) is at most 0.7 ms
# with the per-CPU hrtimer; with --no-slice-timer it falls back to the tick
# (HZ=250: ~3.6 ms expected, at least 2.5 ms asserted).
source "$(dirname "$0")/lib.sh"

measure() {
	start_floor "$@"
	local a b m
	a=$(hog 1); b=$(hog 1)
	sleep 0.5
	m=$(mean_slice_ms 5 "$a" "$b")
	kill "$a" "$b"; wait "$a" "$b" 2>/dev/null
	stop_floor || fail "scx_floor exited non-zero"
	echo "$m"
}

timer=$(measure --slice-us 500) || fail "measurement with the hrtimer failed"
note "slice 0.5 ms, hrtimer: mean $timer ms"
tick=$(measure --slice-us 500 --no-slice-timer) || fail "measurement at the tick failed"
note "slice 0.5 ms, tick only: mean $tick ms"
le "$timer" 0.7 || fail "mean slice $timer ms > 0.7 ms with the hrtimer"
ge "$tick" 2.5 || fail "tick-only mean slice $tick ms < 2.5 ms: the comparison is not showing the tick"
