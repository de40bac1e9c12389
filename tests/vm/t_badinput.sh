#!/bin/bash
# Bad input gets a clear message, a non-zero exit code, and changes nothing:
# flags out of range, not root, a kernel without sched_ext, a kernel booted
# with isolcpus=, another BPF scheduler already loaded.
source "$(dirname "$0")/lib.sh"

# expect_err "what" "message regex" CMD...: CMD fails, says the message, and
# the sched_ext state is unchanged.
expect_err() {
	local what=$1 re=$2 out rc before after
	shift 2
	before=$(scx_state)
	out=$("$@" 2>&1); rc=$?
	after=$(scx_state)
	[ $rc -ne 0 ] || fail "$what: exit code 0"
	grep -Eq "$re" <<<"$out" || fail "$what: message does not match /$re/: $out"
	[ "$before" = "$after" ] || fail "$what: sched_ext state changed $before -> $after"
	note "$what: exit $rc, \"$(grep -Em1 "$re" <<<"$out")\""
}

expect_err "--slice-us 0" "slice-us.*not in 20..=100000" "$FLOOR" --slice-us 0
expect_err "--slice-us -5" "slice-us|unexpected argument" "$FLOOR" --slice-us -5
expect_err "--slice-us 100000000" "slice-us.*not in 20..=100000" "$FLOOR" --slice-us 100000000
expect_err "--stats 0" "stats.*out of range" "$FLOOR" --stats 0
expect_err "--timer-lead-us x" "timer-lead-us" "$FLOOR" --timer-lead-us x
expect_err "unknown flag" "unexpected argument '--bogus'" "$FLOOR" --bogus
expect_err "runtime > period" "server-runtime-us 2000 must be between 1 and --server-period-us \(1000\)" \
	"$FLOOR" --server-runtime-us 2000 --server-period-us 1000
expect_err "runtime 0" "must be between 1 and" "$FLOOR" --server-runtime-us 0
expect_err "period under 100 us" "server-period-us.*not in 100..=1000000" "$FLOOR" --server-period-us 99
expect_err "period over 1 s" "server-period-us.*not in 100..=1000000" "$FLOOR" --server-period-us 1000001
expect_err "a CPU that does not exist" "CPU 64 does not exist or is offline" "$FLOOR" --server-cpus 64
expect_err "a malformed CPU list" "server-cpus.*not a CPU list" "$FLOOR" --server-cpus 1-x
expect_err "a huge CPU range" "CPU 4000000000 does not exist or is offline" "$FLOOR" --server-cpus 0-4000000000
expect_err "a range backwards" "range 3-1 runs backwards" "$FLOOR" --server-cpus 3-1
expect_err "--latency-us with --slice-us" "cannot be used with" "$FLOOR" --latency-us 1000 --slice-us 500
expect_err "--min-slice-us alone" "required arguments were not provided|--latency-us" "$FLOOR" --min-slice-us 400
expect_err "min slice above latency" "min-slice-us 2000 must be at most --latency-us \(1000\)" \
	"$FLOOR" --latency-us 1000 --min-slice-us 2000
expect_err "--boost rr" "invalid value 'rr'" "$FLOOR" --boost rr
expect_err "--latency-us 99" "latency-us.*not in 100..=1000000" "$FLOOR" --latency-us 99
expect_err "--latency-us 1000001" "latency-us.*not in 100..=1000000" "$FLOOR" --latency-us 1000001
expect_err "--min-slice-us 19" "min-slice-us.*not in 20..=100000" "$FLOOR" --latency-us 1000 --min-slice-us 19
expect_err "--stats 3601" "stats.*out of range" "$FLOOR" --stats 3601
expect_err "--timer-lead-us 10001" "timer-lead-us.*0 to 10000" "$FLOOR" --timer-lead-us 10001
expect_err "--exit-dump-len -1" "exit-dump-len|unexpected argument" "$FLOOR" --exit-dump-len -1
expect_err "--server-runtime-us x" "invalid value 'x' for '--server-runtime-us" "$FLOOR" --server-runtime-us x
expect_err "--kernel-server maybe" "invalid value 'maybe'" "$FLOOR" --kernel-server maybe
rt0=$(cat /proc/sys/kernel/sched_rt_runtime_us)
expect_err "--rt-runtime-unlimited --no-server" "cannot be used with" "$FLOOR" --rt-runtime-unlimited --no-server
expect_err "--rt-runtime-unlimited --boost fifo" "not with --boost fifo" "$FLOOR" --rt-runtime-unlimited --boost fifo
expect_err "--rt-runtime-unlimited, not root" "must run as root" setpriv --reuid=65534 --regid=65534 --clear-groups "$FLOOR" --rt-runtime-unlimited
[ "$(cat /proc/sys/kernel/sched_rt_runtime_us)" = "$rt0" ] || fail "a refused --rt-runtime-unlimited changed sched_rt_runtime_us"
expect_err "not root" "must run as root" setpriv --reuid=65534 --regid=65534 --clear-groups "$FLOOR"
# A kernel without sched_ext: hide /sys/kernel/sched_ext in a private mount namespace.
expect_err "no sched_ext" "no sched_ext" unshare -m sh -c "mount -t tmpfs none /sys/kernel && exec $FLOOR"
# A kernel booted with isolcpus= domain isolation, which sched_ext refuses:
# a /proc/cmdline of its own in a private mount namespace (scx_floor reads
# the flag there, before it changes anything). Bounded: an scx_floor that
# missed the flag would load and run on, and exit 0 on the SIGINT.
echo "$(cat /proc/cmdline) isolcpus=1" >"$LOGDIR/cmdline.isolcpus"
expect_err "isolcpus=1" "booted with 'isolcpus=1'.*use nohz_full=" \
	timeout -s INT 30 unshare -m sh -c "mount --bind $LOGDIR/cmdline.isolcpus /proc/cmdline && exec $FLOOR"

start_floor
first=$(cat $SCX/root/ops)
expect_err "another scheduler loaded" "another sched_ext scheduler is loaded: $first" "$FLOOR"
expect_err "another scheduler loaded (--rt-runtime-unlimited)" "another sched_ext scheduler is loaded" "$FLOOR" --rt-runtime-unlimited
[ "$(cat /proc/sys/kernel/sched_rt_runtime_us)" = "$rt0" ] || fail "a refused --rt-runtime-unlimited changed sched_rt_runtime_us"
[ "$(cat $SCX/root/ops)" = "$first" ] || fail "the loaded scheduler changed"
kill -0 "$FLOOR_PID" || fail "the first scx_floor died"
stop_floor || fail "first scx_floor exited non-zero"
