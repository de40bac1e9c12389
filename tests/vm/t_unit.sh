#!/bin/bash
# packaging/scx_floor.service as systemd runs it (systemd is not the VM's
# init, so the test runs the unit's own command lines): ExecStart, with the
# flags packaging/scx_floor.default sets (an operator's server flags in their
# place), loads scx_floor. Then a normal task pinned to CPU 1 under an RR 25
# hog is boosted, and scx_floor and its guardian are SIGKILLed at once (a
# cgroup kill; a kill that finds the boost over is tried again, 5 tries):
# the unit's ExecStopPost (scx_floor --restore) puts the task and the
# ext_server runtime back, and says so. --restore again: exit 0, "nothing
# to restore". --restore as user nobody, or with another flag: refused.
# The unit file itself is checked on the host by scripts/test
# (systemd-analyze verify).
source "$(dirname "$0")/lib.sh"
as_controller
UNIT=$ROOT/packaging/scx_floor.service
DEFAULTS=$ROOT/packaging/scx_floor.default
# exec_line KEY: the unit's KEY= command line, the installed path replaced
# by the build's
exec_line() { sed -n "s|^$1=/usr/local/sbin/scx_floor|$FLOOR|p" "$UNIT"; }
start=$(exec_line ExecStart)
post=$(exec_line ExecStopPost)
[ -n "$start" ] && [ -n "$post" ] || fail "no ExecStart= or ExecStopPost= of /usr/local/sbin/scx_floor in $UNIT"
# EnvironmentFile= takes plain assignments, which bash reads the same way
unset SCX_FLOOR_FLAGS
source "$DEFAULTS"
[ "${SCX_FLOOR_FLAGS+set}" = set ] || fail "$DEFAULTS does not set SCX_FLOOR_FLAGS"
# systemd splits an unquoted, unbraced $VAR at white space, as bash does
# ("$VAR" and ${VAR} pass one argument): the line must say exactly that
args=${start#"$FLOOR"}
# shellcheck disable=SC2016 # the literal text of the unit
[ "$args" = ' $SCX_FLOOR_FLAGS' ] || fail "ExecStart passes '$args', not \$SCX_FLOOR_FLAGS split into words"
SCX_FLOOR_FLAGS="--server-runtime-us 600000 --server-period-us 1000000"

orig=$(ext_server_runtime 1)
[ "$orig" != missing ] || fail "no ext_server in debugfs"
n=$(taskset -c 1 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
wait_spinning 10 "$n" || fail "the normal task did not start spinning"
h=
cleanup() { kill -KILL $h "$n" 2>/dev/null; }
trap cleanup EXIT
# shellcheck disable=SC2086 # split as systemd splits $SCX_FLOOR_FLAGS
kill_both_while_boosted "$n" "$post" $SCX_FLOOR_FLAGS
[ "$(ext_server_runtime 1)" = 0 ] || fail "ext_server runtime $(ext_server_runtime 1) after the kill of both: who restored it?"

out=$($post 2>&1) || fail "ExecStopPost ($post) exited $?: $out"
grep -q "restored [1-9][0-9]* task(s) and [1-9][0-9]* knob(s)" <<<"$out" || fail "ExecStopPost did not say what it restored: $out"
not_boosted "$n" || fail "task $n still $(policy_of "$n") after ExecStopPost"
[ "$(ext_server_runtime 1)" = "$orig" ] || fail "ext_server runtime $(ext_server_runtime 1) after ExecStopPost, want $orig"
note "after the SIGKILL of both (try $TRY), ExecStopPost: $(grep -o 'restored.*' <<<"$out" | head -1 | cut -c1-100)"

out=$($post 2>&1) || fail "a second --restore exited $?: $out"
grep -q "nothing to restore" <<<"$out" || fail "a second --restore: $out"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups $post 2>&1) && fail "--restore as nobody exited 0"
grep -q "must run as root" <<<"$out" || fail "--restore as nobody: $out"
out=$($post --slice-us 1000 2>&1) && fail "--restore with another flag exited 0"
grep -q "cannot be used with" <<<"$out" || fail "--restore with another flag: $out"
note "--restore: nothing left the second time; refused to user nobody and beside another flag"
