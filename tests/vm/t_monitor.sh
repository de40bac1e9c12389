#!/bin/bash
# The stats server (issue 19): scx_floor serves its stats on
# /var/run/scx/root/stats (scx_stats), root-only. `scx_floor --monitor 1`
# from another shell prints per-CPU rates and the server rows of the running
# instance; user nobody's connection is refused; --help-stats describes
# every field with its unit; the socket is gone after exit. A normal task on
# CPU 1 under an RR 25 hog gives the server something to show. Then the
# socket's directory is made user nobody's: scx_floor serves no stats there,
# says why, and runs on.
source "$(dirname "$0")/lib.sh"
as_controller
S=/var/run/scx/root/stats
start_floor
# the server starts with the policy loop, after the scheduler attaches; the
# socket is bound under umask 077 and then made 0600
for _ in $(seq 50); do [ -S "$S" ] && [ "$(stat -c '%a %U' "$S")" = "600 root" ] && break; sleep 0.1; done
[ -S "$S" ] || fail "no stats socket at $S 5 s after scx_floor attached"
[ "$(stat -c '%a %U' "$S")" = "600 root" ] || fail "$S is $(stat -c '%a %U' "$S"), not 600 root"
n=$(taskset -c 1 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
h=$(rt_hog 1 rr 25 20) || fail "no RT hog"
out=$(timeout -s INT 4.5 "$FLOOR" --monitor 1 2>&1)
kill -KILL "$h" "$n" 2>/dev/null
wait "$n" 2>/dev/null
echo "$out" | head -12 | sed 's/^/    /'
grep -q "normal_ms/s" <<<"$out" || fail "--monitor printed no per-CPU table"
for c in 0 1; do
	grep -qE "^ +$c +[0-9.]+ " <<<"$out" || fail "--monitor printed no line for CPU $c"
done
# CPU 1's server row: served by SCHED_FIFO boosts, and it boosted
row=$(grep -E "^ +1 +fifo " <<<"$out" | tail -1)
[ -n "$row" ] || fail "--monitor printed no server row for CPU 1 served by fifo"
boosts=$(awk '{print $6}' <<<"$row")
[ "$boosts" -ge 1 ] || fail "CPU 1's server row shows $boosts SCHED_FIFO boosts"
# normal ms/s on CPU 1 in the last interval: the floor, not nothing
cpu1=$(grep -E "^ +1 +[0-9.]+ " <<<"$out" | head -n -1 | tail -1 | awk '{print $2}')
note "--monitor: CPU 1 normal $cpu1 ms/s under the RR 25 hog, $boosts SCHED_FIFO boosts"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
cp "$FLOOR" "$LOGDIR/scx_floor.mon" && chmod 755 "$LOGDIR/scx_floor.mon"
nout=$(timeout -s INT 5 setpriv --reuid=65534 --regid=65534 --clear-groups "$LOGDIR/scx_floor.mon" --monitor 1 2>&1)
rc=$?
note "as user nobody: exit $rc, $(head -1 <<<"$nout" | cut -c1-120)"
[ "$rc" != 0 ] || fail "user nobody's --monitor exited 0"
! grep -q "normal_ms/s" <<<"$nout" || fail "user nobody read the stats"
grep -qi "permission denied" <<<"$nout" || fail "user nobody's --monitor did not say permission denied: $nout"
help=$("$FLOOR" --help-stats 2>&1) || fail "--help-stats failed: $help"
for f in normal_runtime_ns boosted_runtime_ns starved_ns period_boosted_max_ms overrun_max_us unix_time; do
	grep -q "$f" <<<"$help" || fail "--help-stats does not describe $f"
done
stop_floor || fail "scx_floor exit code $?"
[ ! -e "$S" ] || fail "$S left after exit"

# A socket directory another user may write to: no server there (that user
# could swap in a socket of their own), a warning that names it, and the
# scheduler runs on.
D=$(dirname "$S")
rm -rf "$D" && mkdir -p "$D" && chown 65534:65534 "$D"
start_floor
seq0=$(enable_seq)
sleep 2
assert_not_ejected "$seq0" "with an unsafe stats directory"
[ ! -e "$S" ] || fail "scx_floor made $S in a directory owned by nobody"
grep -q "no stats server.*$D is owned by uid 65534" "$FLOOR_LOG" ||
	fail "no warning names the unsafe $D: $(grep -i stats "$FLOOR_LOG" | head -3)"
note "stats directory owned by nobody: $(grep -o "no stats server.*" "$FLOOR_LOG" | cut -c1-110)"
stop_floor || fail "scx_floor exit code $? with an unsafe stats directory"
rm -rf "$D"
