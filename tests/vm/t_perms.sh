#!/bin/bash
# Permissions (issue 6): only root loads scx_floor (t_badinput); nothing it
# creates is world- or group-writable, its state (journals, lock) and its
# --stats-json file are root-only, and an unprivileged user can neither read
# the journals nor stop or signal it.
source "$(dirname "$0")/lib.sh"
J=$LOGDIR/perms.json
start_floor --stats 0.5 --stats-json "$J"
sleep 1.5
[ -f "$J" ] || fail "no --stats-json file"
note "state dir: $(stat -c '%A %U' /run/scx_floor), stats file: $(stat -c '%A %U' "$J")"
[ "$(stat -c %a /run/scx_floor)" = 700 ] || fail "/run/scx_floor is $(stat -c %a /run/scx_floor), not 700"
[ "$(stat -c %a "$J")" = 600 ] || fail "$J is $(stat -c %a "$J"), not 600"
w=$(find /run/scx_floor "$J" -perm /022 2>/dev/null)
[ -z "$w" ] || fail "group/world-writable: $w"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if nobody cat /run/scx_floor/boosted.v2.journal >/dev/null 2>&1; then fail "user nobody can read the journal"; fi
if nobody cat "$J" >/dev/null 2>&1; then fail "user nobody can read the stats file"; fi
if nobody kill -TERM "$FLOOR_PID" 2>/dev/null; then fail "user nobody could signal scx_floor"; fi
if nobody kill -TERM "$(pgrep -x scx-floor-guard)" 2>/dev/null; then fail "user nobody could signal the guardian"; fi
kill -0 "$FLOOR_PID" || fail "scx_floor died"
stop_floor || fail "scx_floor exited non-zero"
note "an unprivileged user cannot read the journals or the stats file, nor signal scx_floor or its guardian"
