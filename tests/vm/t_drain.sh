#!/bin/bash
# Tasks that may run on any CPU and wait in the DSQ of a CPU that an RT task
# takes move to the shared DSQ and run on the others (docs/design.md, "The
# dispatcher", "Higher classes"). Six unpinned SCHED_OTHER hogs on 2 CPUs,
# then a SCHED_FIFO 50 hog pinned to CPU 1: some of the six waited in CPU 1's
# DSQ. CPU 0 always has hogs of its own, and steal() skips a CPU a higher
# class holds: only the drain moves them. The server serves no task there (every
# waiter may run on CPU 0).
# Asserted: over 3 s from 1 s after the RT hog started, every hog gets
# >= 80 ms/s (CPU 0 shared six ways: about 160 each), never ejected. Under
# the test fault "no-drain" the hogs left in CPU 1's DSQ get nothing, in
# some runs only: a server step that sees CPU 0 held too (by this script's
# SCHED_FIFO polls) boosts them out of that DSQ (docs/testing.md).
source "$(dirname "$0")/lib.sh"
as_controller
[ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] || fail "needs 2 CPUs"
start_floor
seq=$(enable_seq)
pids=()
for i in 1 2 3 4 5 6; do
	pids+=("$(taskset -c 0,1 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)")
done
wait_spinning 10 "${pids[@]}" || fail "the hogs did not spin"
sleep 1
h=$(rt_hog 1 fifo 50 12) || fail "no FIFO 50 hog"
sleep 1
read -r -a got < <(ms_per_s_of 3 "${pids[@]}" "$h")
hog=${got[6]:-}
got=("${got[@]:0:6}")
assert_not_ejected "$seq"
kill -KILL "$h" "${pids[@]}" 2>/dev/null
wait "${pids[@]}" 2>/dev/null
stop_floor || fail "scx_floor exited $?"
[ ${#got[@]} -eq 6 ] && [ -n "$hog" ] || fail "could not read the hogs' CPU time"
least=$(printf '%s\n' "${got[@]}" | sort -g | head -1)
note "six unpinned hogs, CPU 1 held by a FIFO 50 hog: ${got[*]} ms/s; the FIFO 50 hog $hog ms/s"
ge "$hog" 850 || fail "the FIFO 50 hog got $hog ms/s: CPU 1 was not held"
figure least_hog_ms_per_s "$least" ">= 80"
ge "$least" 80 || fail "a hog got $least ms/s with CPU 1 held (${got[*]}): left in CPU 1's DSQ"
exit 0
