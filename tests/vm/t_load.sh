#!/bin/bash
# scx_floor loads (state enabled, root/ops names scx_floor), prints its stats,
# and unloads on SIGINT and on SIGTERM with exit code 0 (state disabled).
source "$(dirname "$0")/lib.sh"

[ "$(scx_state)" = disabled ] || fail "sched_ext state is $(scx_state) before the test"
for sig in INT TERM; do
	start_floor --stats 1
	ops=$(cat $SCX/root/ops)
	case "$ops" in scx_floor*) ;; *) fail "root/ops is '$ops'";; esac
	note "loaded: state $(scx_state), ops $ops"
	sleep 2.5
	grep -q 'normal_ms/s' "$FLOOR_LOG" || { cat "$FLOOR_LOG"; fail "--stats printed no table"; }
	stop_floor $sig || fail "exit code $? after SIG$sig"
	note "SIG$sig: unloaded, exit 0, state $(scx_state)"
done
