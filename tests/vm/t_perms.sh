#!/bin/bash
# Permissions (issue 6): only root loads scx_floor (t_badinput); nothing it
# creates is world- or group-writable, its state (journals, lock) and its
# --stats-json file are root-only, and an unprivileged user can neither read
# the journals nor stop or signal it.
# A hostile path (issue 16): --stats-json in a world-writable sticky
# directory where user nobody planted symlinks at the file's name and at
# the temporary names scx_floor once used (<stem>.tmp, <name>.tmp), each to
# a root-owned file. The stats file names its schema, the build and the time. With fs.protected_symlinks 0 (the kernel's default;
# put back after), so that the kernel's own check does not hide a write
# through them: the files they point to are unchanged, and the stats file is
# a regular file of root's, mode 0600, where the symlink was.
source "$(dirname "$0")/lib.sh"
J=$LOGDIR/perms.json
start_floor --stats 0.5 --stats-json "$J"
sleep 1.5
[ -f "$J" ] || fail "no --stats-json file"
# the document names its schema, the build (as -V does) and its wall time
[ "$(jq -r .schema_version "$J")" = 3 ] || fail "schema_version is $(jq -r .schema_version "$J"), want 3"
# schema 3: the real-time threads' allocator calls while serving (0 by design)
[ "$(jq -r .rt_allocations "$J")" = 0 ] || fail "rt_allocations is $(jq -r .rt_allocations "$J") in the stats file, want 0"
[ "$(jq -r .scx_floor "$J")" = "$("$FLOOR" -V | cut -d' ' -f2-)" ] ||
	fail "the stats file names the build $(jq -r .scx_floor "$J"), -V says $("$FLOOR" -V)"
age=$(jq -r --arg now "$(date +%s.%N)" '($now | tonumber) - .unix_time' "$J")
le "${age#-}" 10 || fail "the stats file's unix_time is $age s off the clock"
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

D=$LOGDIR/hostile
rm -rf "$D"; mkdir -p "$D"; chmod 1777 "$D"
for v in a b c; do echo "victim $v" >"$LOGDIR/victim.$v"; chmod 644 "$LOGDIR/victim.$v"; done
nobody ln -s "$LOGDIR/victim.a" "$D/stats.json"
nobody ln -s "$LOGDIR/victim.b" "$D/stats.tmp"
nobody ln -s "$LOGDIR/victim.c" "$D/stats.json.tmp"
ps0=$(cat /proc/sys/fs/protected_symlinks)
echo 0 >/proc/sys/fs/protected_symlinks
start_floor --stats 0.5 --stats-json "$D/stats.json"
sleep 1.5
stop_floor
rc=$?
echo "$ps0" >/proc/sys/fs/protected_symlinks
[ "$rc" = 0 ] || fail "scx_floor exited $rc with a hostile --stats-json path"
for v in a b c; do
	[ "$(cat "$LOGDIR/victim.$v")" = "victim $v" ] || fail "victim.$v was written through a planted symlink: $(head -c 80 "$LOGDIR/victim.$v")"
done
[ -f "$D/stats.json" ] && [ ! -L "$D/stats.json" ] || fail "$D/stats.json is not a regular file: $(ls -l "$D/stats.json")"
[ "$(stat -c '%a %U' "$D/stats.json")" = "600 root" ] || fail "$D/stats.json is $(stat -c '%a %U' "$D/stats.json"), not 600 root"
grep -q '"cpus"' "$D/stats.json" || fail "$D/stats.json holds no stats"
note "planted symlinks at the stats file and its old temporary names: nothing written through them; the stats file is $(stat -c '%A %U' "$D/stats.json")"
rm -rf "$D" "$LOGDIR"/victim.?
