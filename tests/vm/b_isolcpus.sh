#!/bin/bash
# Run in a VM booted with isolcpus=1 (scripts/test): sched_ext refuses to
# load under isolcpus= domain isolation; scx_floor says so before it changes
# anything, and exits non-zero.
source "$(dirname "$0")/lib.sh"
grep -q "isolcpus=" /proc/cmdline || fail "this test needs a VM booted with isolcpus= (scripts/test does it)"
out=$("$FLOOR" 2>&1); rc=$?
note "scx_floor under $(grep -o 'isolcpus=[^ ]*' /proc/cmdline): exit $rc, \"$out\""
[ $rc -ne 0 ] || fail "scx_floor started under isolcpus="
grep -q "isolcpus" <<<"$out" || fail "the message does not name isolcpus: $out"
[ "$(scx_state)" = disabled ] || fail "sched_ext state $(scx_state)"
[ ! -e /run/scx_floor/knobs ] || [ -z "$(ls /run/scx_floor/knobs)" ] || fail "knobs journaled: something was changed"
