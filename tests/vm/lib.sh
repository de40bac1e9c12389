# tests/vm/lib.sh — helpers for the VM tests (sourced; runs inside the VM as root).
# Each test is a bash script that exits 0 on pass, non-zero on failure, and
# prints what it measured.

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FLOOR=${FLOOR:-$ROOT/target/release/scx_floor}
SCX=/sys/kernel/sched_ext
LOGDIR=${LOGDIR:-/tmp/scx_floor-tests}
mkdir -p "$LOGDIR"

# fail MSG: print MSG (and, when scx_floor was started, the end of its log
# and what the kernel said about sched_ext), exit 1.
fail() {
	echo "FAIL: $*" >&2
	if [ -n "${FLOOR_LOG:-}" ] && [ -s "$FLOOR_LOG" ]; then
		echo "  end of scx_floor's log:" >&2
		grep -v '^ *[0-9]\+ \|^cpu \|^server:\|per-CPU accounting' "$FLOOR_LOG" | tail -6 | sed 's/^/    /' >&2
		# the last server table (--stats): what each CPU's server
		# delivered, boosted and failed in its last period
		if grep -q '^server:' "$FLOOR_LOG"; then
			echo "  its last server table:" >&2
			awk '/^server:/ { n = 0; t[n++] = $0; in_t = 1; next }
			     in_t && /^ +[0-9]+ / { t[n++] = $0; next } { in_t = 0 }
			     END { for (i = 0; i < n && i < 9; i++) print t[i] }' "$FLOOR_LOG" |
				cut -c1-320 | sed 's/^/    /' >&2
		fi
		# the kernel's dump at an ejection: each CPU, what ran there, and
		# its queued tasks with how long they had been runnable
		if grep -q 'Debug dump' "$FLOOR_LOG"; then
			echo "  the kernel's dump, CPUs and tasks:" >&2
			sed -n '/Debug dump/,$p' "$FLOOR_LOG" | grep -E 'CPU|curr=|\[[0-9]+\]' |
				head -40 | cut -c1-160 | sed 's/^/    /' >&2
		fi
	fi
	dmesg | grep -E 'sched_ext|BUG:|WARNING:' | tail -4 | sed 's/^/    dmesg: /' >&2
	# an RCU stall report names the CPUs or tasks that held the grace period
	dmesg | grep -iE -A8 'rcu.*(stall|starved|detected)' | tail -24 | sed 's/^/    dmesg: /' >&2
	exit 1
}
note() { echo "  $*"; }

# figure NAME VALUE [BOUND]: record a figure this test asserts (or reports)
# as a tab-separated line in $FIGURES (default target/figures.tsv in the
# checkout): test, figure, value, the bound it is held to, kernel, boot
# arguments that matter (nohz_full, irqaffinity). scripts/figures summarises
# them over many runs (min, median, max): docs/testing.md's distributions.
FIGURES=${FIGURES:-$ROOT/target/figures.tsv}
figure() {
	local boot
	boot=$(grep -oE '(nohz_full|irqaffinity|isolcpus)=[^ ]*' /proc/cmdline | tr '\n' ' ')
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(basename "$0" .sh)" "$1" "$2" "${3:-}" "$(uname -r)" "${boot% }" >>"$FIGURES"
}

# read_file FILE: FILE's first line, read by the shell itself (no cat: under
# TCG each fork and exec of a polling loop's helper costs 0.1 s or more);
# fails if FILE cannot be read.
read_file() {
	local v=
	{ read -r v <"$1" || [ -n "$v" ]; } 2>/dev/null || return 1
	printf '%s\n' "$v"
}

# nap SECS: sleep without a fork, on a pipe nobody writes to (/bin/sleep
# costs 0.1-0.2 s of fork and exec under TCG: a 0.05 s poll took 0.12 s).
# For polling loops; the measurements keep their own sleeps. Without the
# pipe (no /dev/fd), /bin/sleep. The braces scope the 2>/dev/null to the
# attempt: on exec itself it would redirect the test's stderr for good.
NAP_FD=
{ exec {NAP_FD}<> <(:); } 2>/dev/null || NAP_FD=
nap() {
	if [ -n "$NAP_FD" ]; then read -rt "$1" -u "$NAP_FD" _ || true; else sleep "$1"; fi
}

scx_state() { read_file $SCX/state || echo missing; }

# enable_seq: how many times a BPF scheduler has been enabled since boot
# ("none" where the kernel lacks the file). A test that must see no
# ejection compares it before and after: scx_floor reloads by itself when
# the kernel asks for a restart, which "state enabled" alone would not show.
enable_seq() { read_file $SCX/enable_seq || echo none; }

# assert_not_ejected SEQ0 [WHAT]: scx_floor ($FLOOR_PID) still runs, sched_ext
# is enabled, and enable_seq is still SEQ0 (read after start_floor): never
# ejected, nor ejected and reloaded.
assert_not_ejected() {
	local what=${2:+$2: }
	kill -0 "$FLOOR_PID" 2>/dev/null || fail "${what}scx_floor is gone"
	[ "$(scx_state)" = enabled ] || fail "${what}scx_floor was ejected (state $(scx_state))"
	[ "$(enable_seq)" = "$1" ] || fail "${what}scx_floor was ejected and reloaded (enable_seq $1 -> $(enable_seq))"
}

# cyclictest_avg_max: "avg_us max_us" of the first thread in the cyclictest
# -q output on stdin (nothing if there is none).
cyclictest_avg_max() { sed -n 's/.*Avg: *\([0-9]*\).*Max: *\([0-9]*\).*/\1 \2/p' | head -1; }

# wait_state STATE SECS: poll /sys/kernel/sched_ext/state until it is
# STATE, for at most SECS (default 20) of wall-clock time (wait_for).
state_is() { [ "$(scx_state)" = "$1" ]; }
wait_state() { wait_for "${2:-20}" state_is "$1" >/dev/null; }

# holds_or_gone PID CMD [ARGS...]: CMD ARGS succeeds, or process PID has
# ended (for wait_for: wait for a state, but not for a process that died).
holds_or_gone() { "${@:2}" || ! kill -0 "$1" 2>/dev/null; }

# start_floor ARGS...: start scx_floor in the background, wait until enabled.
# Sets FLOOR_PID and FLOOR_LOG. FLOOR_WRAP=setsid starts it in a process
# group (and session) of its own, as a shell with job control would.
# Waits up to 60 s, and no longer than scx_floor lives: by design a start
# may wait up to about 30 s (the state directory's lock 15 s, a journal
# replay's EBUSY retries 10 s, SCHED_DEADLINE room 2 s, then the load).
start_floor() {
	FLOOR_LOG=$LOGDIR/floor.$$.$RANDOM.log
	${FLOOR_WRAP:-} chrt -o 0 "$FLOOR" "$@" >"$FLOOR_LOG" 2>&1 &
	FLOOR_PID=$!
	wait_for 60 holds_or_gone "$FLOOR_PID" state_is enabled >/dev/null
	if [ "$(scx_state)" != enabled ] || ! kill -0 "$FLOOR_PID" 2>/dev/null; then
		cat "$FLOOR_LOG" >&2
		fail "scx_floor did not reach state enabled (state: $(scx_state))"
	fi
	case "$(cat $SCX/root/ops 2>/dev/null)" in scx_floor*) ;; *) fail "the loaded scheduler is not scx_floor";; esac
	settle_uevents
}

# settle_uevents: wait (at most 5 s) until udev has handled the uevents
# queued so far. Enabling and disabling a sched_ext scheduler each send one
# (the scheduler's kobject is added and removed), and systemd-udevd wakes to
# handle it. A test hog started at that moment may preempt udevd inside an
# RCU read-side section (every sleeping spinlock is one on PREEMPT_RT); RCU
# boosting then lends it rcub/N's priority and takes it out of sched_ext,
# and behind a pinned SCHED_FIFO 99 hog with default sysctls nothing can run
# it (docs/realtime.md, "rcub/N"): RCU stalled and the kernel ejected
# scx_floor in t_fifo99, clean-clone CI at 95423d1, RT boot. The workers
# udevd forked for them are still there, and exit 3 s later: udev_idle.
settle_uevents() {
	udevadm settle -t 5 2>/dev/null || true
}

# udev_idle: settle_uevents, then wait (at most 8 s) until systemd-udevd has
# no worker process left. Call before starting a SCHED_FIFO 99 hog. udevd
# stops its idle workers 3 s after its queue empties (on_post() and
# on_kill_workers_event() in systemd's udevd.c), and a worker's exit frees
# its memory inside RCU read-side sections (memcg statistics): a FIFO 99 hog
# started then may preempt the worker in one, and nothing can run it behind
# the hog at equal priority once RCU boosting has lent it rcub/N's
# (docs/realtime.md, "rcub/N"). In the VM the worker of scx_floor's load
# exits 3.0-4.0 s after the load (7.3.4-rt); t_fifo99's hog started 3-4 s
# after the load and stalled RCU so that the kernel ejected scx_floor (the
# blocked reader a (udev-worker) in __mod_memcg_lruvec_state(), clean-clone
# CI at 0771aac). Fails if a worker is left.
udev_idle() {
	settle_uevents
	wait_for 8 no_udev_worker >/dev/null ||
		fail "udev workers still running 8 s after udev settled: $(pgrep -x '\(udev-worker\)' | tr '\n' ' ')"
}

# no_udev_worker: no systemd-udevd worker process exists (systemd 252 and
# later name them "(udev-worker)"; earlier ones keep "systemd-udevd", so
# any udevd process beside the oldest counts).
no_udev_worker() {
	! pgrep -x '\(udev-worker\)' >/dev/null && [ "$(pgrep -x systemd-udevd | wc -l)" -le 1 ]
}

# no_rt_allocations [WHAT]: fails unless scx_floor's exit line in $FLOOR_LOG
# reads "rt_allocations: 0": its real-time threads made no allocator call
# while serving (docs/design.md, "One malloc arena"). Call after stop_floor.
no_rt_allocations() {
	local n
	n=$(sed -n 's/.*\] rt_allocations: \([0-9]*\) .*/\1/p' "$FLOOR_LOG" | tail -1)
	[ -n "$n" ] || fail "no rt_allocations line in scx_floor's log${1:+ ($1)}"
	[ "$n" = 0 ] || fail "scx_floor's real-time threads made $n allocator calls while serving${1:+ ($1)}"
}

# stop_floor [SIG]: signal scx_floor (default INT), wait, check it unloaded.
stop_floor() {
	local sig=${1:-INT} rc
	kill -"$sig" "$FLOOR_PID" 2>/dev/null
	wait "$FLOOR_PID"
	rc=$?
	wait_state disabled 20 || fail "state is $(scx_state) after SIG$sig"
	settle_uevents
	return $rc
}

# sleeper CPU: a SCHED_OTHER task pinned to CPU that runs 2 ms and sleeps
# 20 ms, over and over (t_sleeper, t_dlbw); prints its pid.
sleeper() {
	taskset -c "$1" chrt -o 0 python3 -c '
import time
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.002: pass
    time.sleep(0.02)' >/dev/null 2>&1 &
	echo $!
}

# hog CPU [NICE]: a CPU-bound SCHED_OTHER task pinned to CPU, at nice NICE
# relative to the caller's (without NICE, no nice(1) exec); prints its pid.
hog() {
	taskset -c "$1" chrt -o 0 ${2:+nice -n "$2"} sh -c 'while :; do :; done' >/dev/null 2>&1 &
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

# float comparisons: le A B, ge A B (false unless both are numbers)
num() { [[ "$1" =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; }
le() { num "$1" && num "$2" && awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
ge() { num "$1" && num "$2" && awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }

# rt_hog CPU fifo|rr PRIO [SECS]: a CPU-bound RT task pinned to CPU, killed
# after SECS (default 60) by a watchdog at FIFO 95 (an equal-priority one could
# never preempt it). Prints the task's pid once it spins at its RT policy.
# At priority 99 it first waits for udev's workers to exit (udev_idle).
rt_hog() {
	local cpu=$1 pol=$2 prio=$3 secs=${4:-60} w p i ok=0
	[ "$prio" != 99 ] || udev_idle || return 1
	chrt -f 95 timeout -s KILL "$secs" chrt --"$pol" "$prio" taskset -c "$cpu" sh -c 'while :; do :; done' >/dev/null 2>&1 &
	w=$!
	# spinning at three polls in a row (once was not enough: the shell still
	# blocked on the 9p root a few hundred ms later, and a server period that
	# restarted there moved the first service past the test's reference)
	for i in $(seq 200); do
		p=$(pgrep -P "$w" 2>/dev/null | head -1)
		if [ -n "$p" ] && [ "$(awk '{print $41}' /proc/$p/stat 2>/dev/null)" = "$([ $pol = fifo ] && echo 1 || echo 2)" ] &&
			spinning "$p"; then
			ok=$((ok + 1)); [ $ok -ge 3 ] && { echo "$p"; return; }
		else
			ok=0
		fi
		sleep 0.05
	done
	echo "rt_hog: could not start" >&2
	return 1
}

# spinning PID...: every PID is a shell spinning in user space (comm "sh",
# state R): done with its exec chain (chrt, setpriv, taskset) and with
# loading its libraries, which block on the guest's 9p root file system.
# Starved before that, a "CPU-bound" task spends its share sleeping on I/O.
spinning() {
	local p s
	for p in "$@"; do
		s=$(cat /proc/$p/stat 2>/dev/null) || return 1
		[[ $s =~ ^[0-9]+\ \(sh\)\ R ]] || return 1
	done
}

# wait_spinning SECS PID...: until `spinning PID...` holds at 3 polls in a
# row, 100 ms apart; fails after SECS.
wait_spinning() {
	local secs=$1 i ok=0
	shift
	for ((i = 0; i < secs * 10; i++)); do
		if spinning "$@"; then ok=$((ok + 1)); [ $ok -ge 3 ] && return 0; else ok=0; fi
		sleep 0.1
	done
	return 1
}

# run_ns PID: field 1 of /proc/PID/schedstat.
run_ns() { awk '{print $1}' "/proc/$1/schedstat"; }

# ms_per_s_of SECS PID...: CPU time each task got over the same SECS of
# wall time, ms per s, one figure per PID on one line. One process reads
# all the tasks' clocks at the window's start and again SECS later on
# CLOCK_MONOTONIC, so the window is SECS long to within a few ms. A server
# with a 1 s period serves in one burst per period: a window a tenth of a
# period longer than SECS (an awk and a date forked per read, under TCG)
# can hold one burst more, 7 of 50 ms in 6.11 s read 57 ms/s in t_floor,
# where an exact 6 s window holds 6 bursts whatever its phase.
# The clock is a perf task-clock counter on each task (perf_event_open,
# PERF_COUNT_SW_TASK_CLOCK, ns): reading it updates a task running on
# another CPU through an IPI to that CPU (perf_event_read(),
# kernel/events/core.c). /proc/PID/schedstat does not: with a SCHED_FIFO
# or a lone SCHED_RR task the tick stops on a nohz_full CPU
# (sched_can_stop_tick()) and the running task's sum_exec_runtime lags
# until its next switch (a hog read 996 ms/s beside a normal task's 54);
# nor do CPU clocks (the kernel reads thread clocks only for the caller's
# own threads, and a process clock does not update a running thread).
ms_per_s_of() {
	python3 - "$@" <<'PY'
import ctypes, os, struct, sys, time
secs, pids = float(sys.argv[1]), [int(p) for p in sys.argv[2:]]
libc = ctypes.CDLL(None, use_errno=True)
def task_clock(pid):
    attr = bytearray(128)  # struct perf_event_attr, PERF_ATTR_SIZE_VER8
    struct.pack_into("IIQ", attr, 0, 1, len(attr), 1)  # PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK
    buf = ctypes.create_string_buffer(bytes(attr), len(attr))
    fd = libc.syscall(298, buf, pid, -1, -1, 8)  # __NR_perf_event_open (x86_64), PERF_FLAG_FD_CLOEXEC
    if fd < 0:
        sys.exit(f"perf_event_open({pid}): {os.strerror(ctypes.get_errno())}")
    return fd
fds = [task_clock(p) for p in pids]
def rd():
    return [struct.unpack("Q", os.read(fd, 8))[0] for fd in fds]
t0 = time.monotonic(); a = rd()
time.sleep(max(0.0, secs - (time.monotonic() - t0)))
t1 = time.monotonic(); b = rd()
print(" ".join(f"{(y - x) / 1e6 / (t1 - t0):.1f}" for x, y in zip(a, b)))
PY
}

# bursts_of SECS PID: the task's CPU time over SECS of wall time, sampled
# every 50 ms on its perf task-clock counter (as ms_per_s_of), as one line:
# "MS_PER_S LARGEST_BURST_MS BURSTS LONGEST_SAMPLE_MS". A burst is a run of
# samples in which the task's clock grew by more than 0.5 ms; the longest
# sample is the sampler's own longest interval (a stall of its vCPU shows
# there). A dl_server's burst is at most its runtime plus the lateness of the
# hrtimer that throttles it (dl_task_timer's runtime enforcement,
# kernel/sched/deadline.c): a burst far above the runtime is time the host
# held the task's vCPU off, which the guest charged to the task.
bursts_of() {
	python3 - "$@" <<'PY'
import ctypes, os, struct, sys, time
secs, pid = float(sys.argv[1]), int(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
attr = bytearray(128)
struct.pack_into("IIQ", attr, 0, 1, len(attr), 1)  # PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK
buf = ctypes.create_string_buffer(bytes(attr), len(attr))
fd = libc.syscall(298, buf, pid, -1, -1, 8)
if fd < 0:
    sys.exit(f"perf_event_open({pid}): {os.strerror(ctypes.get_errno())}")
rd = lambda: struct.unpack("Q", os.read(fd, 8))[0]
t0 = time.monotonic(); c0 = rd(); t, c = t0, c0
burst = big = longest = 0.0; n = 0
while t - t0 < secs:
    time.sleep(min(0.05, max(0.0, secs - (t - t0))))
    t1, c1 = time.monotonic(), rd()
    longest = max(longest, t1 - t)
    d = (c1 - c) / 1e6
    if d > 0.5:
        n += burst == 0; burst += d; big = max(big, burst)
    else:
        burst = 0.0
    t, c = t1, c1
print(f"{(c - c0) / 1e6 / (t - t0):.1f} {big:.1f} {n} {longest * 1e3:.0f}")
PY
}

# ms_per_s PID SECS: CPU time the task got, ms per s of wall time, over SECS.
ms_per_s() { ms_per_s_of "$2" "$1"; }

# server_col CPU NAME: column NAME of CPU's row in the last server table that
# --stats wrote to $FLOOR_LOG (0 when there is none).
server_col() {
	awk -v c="$1" -v n="$2" '/^server:/ { for (i = 2; i <= NF; i++) if ($i == n) k = i - 1; t = 1; next }
		t && $1 == c { v = $k; t = 0 } END { print v + 0 }' "$FLOOR_LOG"
}

# first_service_ms PID MAXSECS: ms until the task's run time grows (polls every 5 ms).
first_service_ms() {
	local a t0 now
	a=$(run_ns "$1"); t0=$(date +%s%N)
	while :; do
		now=$(date +%s%N)
		[ "$(run_ns "$1")" != "$a" ] && { echo $(((now - t0) / 1000000)); return; }
		[ $((now - t0)) -gt $(($2 * 1000000000)) ] && { echo inf; return; }
		sleep 0.005
	done
}

# ext_server_runtime CPU: the kernel's ext_server runtime (ns) on CPU.
ext_server_runtime() { read_file /sys/kernel/debug/sched/ext_server/cpu$1/runtime || echo missing; }

# The root domain's SCHED_DEADLINE admission total (dl_bw->total_bw, 1<<20 =
# one CPU), the largest over the CPUs' lines in sched/debug: the bandwidth of
# attached dl_servers and DL tasks, and of tasks that left SCHED_DEADLINE but
# are still counted (until their 0-lag time, or for good: see boost::unboost).
# The kernel prints it signed: a value below 0 is an accounting error.
dl_total_bw() { awk '/dl_bw->total_bw/ { v = $NF + 0; if (!s || v > m) { m = v; s = 1 } } END { print m + 0 }' /sys/kernel/debug/sched/debug; }

# wait_ext_server CPU VALUE SECS: until the ext_server runtime is VALUE.
ext_server_is() { [ "$(ext_server_runtime "$1")" = "$2" ]; }
wait_ext_server() { wait_for "$3" ext_server_is "$1" "$2" >/dev/null; }

# as_controller: make this shell FIFO 90 on CPU 0 so that it keeps running
# while RT hogs own CPU 1 (its children must set their own policy).
as_controller() { chrt -f -p 90 $$ >/dev/null; taskset -p -c 0 $$ >/dev/null; }

# emu_timer_latency CPU SECS: the emulator's own timer-to-task latency on CPU,
# in this boot: a SCHED_FIFO 90 cyclictest thread (250 us interval) next to a
# CPU hog, under the kernel's own scheduler (call it while scx_floor is not
# loaded). Prints "avg_us p50_us p99_us max_us". On hardware these are a few
# us; under TCG they are hundreds (p99 around 1.4 ms measured), and they bound
# how precisely any timer can end a slice.
emu_timer_latency() {
	local cpu=$1 secs=$2 h out
	h=$(hog "$cpu")
	out=$(cyclictest -m -p 90 -a "$cpu" -t 1 -i 250 -D "$secs" -q -h 20000 2>&1)
	kill "$h"; wait "$h" 2>/dev/null
	awk '/^[0-9]/ && $2 > 0 { print $1 + 0, $2 }' <<<"$out" >"$LOGDIR/emu_hist.txt"
	awk '/^[0-9]/ { n += $2; c[$1 + 0] = $2 }
	     /^# Avg Latencies/ { avg = $4 + 0 } /^# Max Latencies/ { max = $4 + 0 }
	     END { s = 0; for (i = 0; i < 20000; i++) { s += c[i]
	             if (p50 == "" && s >= n * 0.5) p50 = i; if (p99 == "" && s >= n * 0.99) p99 = i }
	           if (n == 0) exit 1; print avg, p50, p99, max }' <<<"$out"
}

# emu_excess_us C: from the last emu_timer_latency histogram, the mean over
# all samples of max(0, latency - C) in us: how much of the emulator's
# latency a timer armed C us early cannot absorb (tail included; the mean
# latency minus C understates it).
emu_excess_us() {
	awk -v c="$1" '{ n += $2; if ($1 > c) s += ($1 - c) * $2 } END { if (n == 0) exit 1; printf "%.1f\n", s / n }' "$LOGDIR/emu_hist.txt"
}

# policy_of PID: its policy as chrt names it (SCHED_OTHER, SCHED_FIFO, ...).
policy_of() { chrt -p "$1" | awk -F': ' '/policy/ {print $2; exit}'; }

# sched_of PID: its policy and RT priority, "SCHED_FIFO 99".
sched_of() { chrt -p "$1" | awk -F': ' '/policy/ {p = $2} /priority/ {print p, $2; exit}'; }

# raised_tids CPU: "name=tid" of CPU's kernel threads that scx_floor raises
# to SCHED_FIFO 99 while it runs (irq_work/N, rcuc/N, ktimers/N; PREEMPT_RT
# only), and of the first RCU boost thread, rcub/N (one per rcu_node, N its
# index: rcub/0 up to 16 CPUs, CONFIG_RCU_FANOUT_LEAF; CONFIG_RCU_BOOST only).
raised_tids() {
	local k t
	for k in "irq_work/$1" "rcuc/$1" "ktimers/$1" "rcub/[0-9]+"; do
		t=$(pgrep -x "$k" | head -1)
		[ -z "$t" ] || echo "$(cat /proc/$t/comm)=$t"
	done
}

# sched_of_all "name=tid"...: "name=policy prio" of each.
sched_of_all() {
	local e
	for e in "$@"; do echo "${e%%=*}=$(sched_of "${e#*=}")"; done
}

# all_raised "name=tid"...: every one at SCHED_FIFO 99.
all_raised() {
	local e
	for e in "$@"; do [ "$(sched_of "${e#*=}")" = "SCHED_FIFO 99" ] || return 1; done
}

# wait_boosted PID SECS: until PID runs at SCHED_FIFO or SCHED_DEADLINE
# (looks every 20 ms).
is_boosted() { case "$(policy_of "$1")" in SCHED_FIFO*|SCHED_DEADLINE*) return 0;; esac; return 1; }
not_boosted() { ! is_boosted "$1"; }
wait_boosted() { WAIT_POLL=0.02 wait_for "$2" is_boosted "$1" >/dev/null; }

# wait_fresh_boost PID SECS: until a boost of PID *begins*: a boost seen at
# the first look may be near its end (a period whose budget was partly used
# before the hog came leaves a short boost), and a signal sent after it finds
# nothing to restore. So: a boost, its end (or SECS), then the next one, which
# starts with the whole budget of a period. Even a fresh boost can end before
# a signal sent after it lands; a test that needs the boost at the signal
# checks the policy just after sending it.
wait_fresh_boost() {
	wait_boosted "$1" "$2" || return 1
	WAIT_POLL=0.02 wait_for "$2" not_boosted "$1" >/dev/null
	wait_boosted "$1" "$2"
}

# kill_both_while_boosted TASK HOOK FLAGS...: start scx_floor with FLAGS,
# an RR 25 hog on CPU 1 (started once, its pid in $h), a fresh boost of
# TASK, then SIGKILL of scx_floor and its guardian in one kill(1), as a
# service manager's cgroup kill does. A kill that finds the boost over
# already (boosts end every period) is tried again, up to 5 times; HOOK (a
# command, or empty) runs after such a try. Sets TRY to the try that found
# TASK boosted; fails after 5.
kill_both_while_boosted() {
	local task=$1 hook=$2 g
	shift 2
	for TRY in 1 2 3 4 5; do
		start_floor "$@"
		[ -n "$h" ] || h=$(rt_hog 1 rr 25 120) || fail "no hog"
		g=$(pgrep -x scx-floor-guard) || fail "no guardian"
		wait_fresh_boost "$task" 4 || fail "the task was never boosted (policy $(policy_of "$task"))"
		kill -KILL "$g" "$FLOOR_PID"
		wait "$FLOOR_PID" 2>/dev/null
		wait_state disabled 20 || fail "state is $(scx_state) after the SIGKILL of both"
		pgrep -x scx-floor-guard >/dev/null && fail "the guardian outlived its SIGKILL"
		is_boosted "$task" && return 0
		note "try $TRY: the boost had ended before the kill; once more"
		[ -z "$hook" ] || $hook >/dev/null 2>&1 || fail "$hook after try $TRY failed"
	done
	fail "no kill in 5 tries found the task boosted"
}

# wait_for SECS CMD...: until CMD succeeds, polling every WAIT_POLL s
# (default 0.05), for at most SECS of wall-clock time (bash's EPOCHREALTIME:
# under load a look takes longer than its sleep, so counting turns would
# wait far longer); prints the ms waited.
wait_for() {
	local secs=$1 t0=${EPOCHREALTIME/./} ms
	shift
	while :; do
		ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
		"$@" && { echo "$ms"; return 0; }
		[ "$ms" -lt $((secs * 1000)) ] || return 1
		nap "${WAIT_POLL:-0.05}"
	done
}

# hog_slices NHOGS [ARGS...]: NHOGS CPU hogs pinned to CPU 1 for 5 s, under
# scx_floor ARGS (--stats-json added), or under the stock scheduler without
# ARGS. Prints "mean_ms p50_ms p99_ms p99lo_ms expiry_ms p90lo_ms": the mean slice
# from schedstat, the run-length quantiles of CPU 1 from scx_floor's
# histogram (each the upper bound of its bucket), the lower bound of the
# p99's bucket: the histogram only knows the p99 lies in (p99lo, p99], and
# CPU 1's normal-task run time per slice expiry since scx_floor loaded,
# and the lower bound of the p90's bucket ("null" for stock). The schedstat mean counts every switch: a run that
# a kthread or a slice-end thread's early wake-up interrupted, and that then
# went on with the rest of its slice, counts as two. The run time per
# expiry counts only the slices that ended. Returns non-zero if scx_floor
# exited non-zero (the figures are printed anyway). scx_floor's log is left
# in $LOGDIR/hog_slices.log.
hog_slices() {
	local n=$1 pids=() i m p50=null p99=null p99lo=null p90lo=null per=null rc=0 j=$LOGDIR/hog_slices.json
	shift
	if [ $# -gt 0 ]; then rm -f "$j"; start_floor --stats-json "$j" "$@"; fi
	for ((i = 0; i < n; i++)); do pids+=("$(hog 1)"); done
	sleep 0.5
	m=$(mean_slice_ms 5 "${pids[@]}")
	kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null
	if [ $# -gt 0 ]; then
		stop_floor || rc=1
		cp "$FLOOR_LOG" "$LOGDIR/hog_slices.log"
		p50=$(jq '.cpus[] | select(.cpu == 1) | .runlen.p50_ns / 1e6' "$j")
		p99=$(jq '.cpus[] | select(.cpu == 1) | .runlen.p99_ns / 1e6' "$j")
		p99lo=$(jq '(.cpus[] | select(.cpu == 1) | .runlen.p99_ns) as $u
			| [.hist_bucket_lo_ns[] | select(. < $u)] | max / 1e6' "$j")
		p90lo=$(jq '(.cpus[] | select(.cpu == 1) | .runlen.p90_ns) as $u
			| [.hist_bucket_lo_ns[] | select(. < $u)] | max / 1e6' "$j")
		per=$(jq '.cpus[] | select(.cpu == 1) | .counters
			| if .nr_slice_expired > 0 then (.normal_runtime_ns / .nr_slice_expired / 1e3 | round / 1e3) else null end' "$j")
	fi
	echo "$m $p50 $p99 $p99lo $per $p90lo"
	return $rc
}

# goal WHAT VALUE CMD...: print whether a goal (stricter than the test's
# emulator bound) was met: CMD is the check, e.g. goal "normal >= 47.5:" 49 ge 49 47.5
goal() {
	local what=$1 value=$2
	shift 2
	if "$@"; then note "  goal met: $what $value"; else note "  GOAL MISSED (emulator): $what $value"; fi
}

# s1_measure POL PRIO: S1 on CPU 1 under whatever scheduler is loaded: a
# normal task spinning there, then a POL (fifo|rr) PRIO hog; prints "normal
# hog first" (ms/s of each over an exact 6 s window starting 0.5 s after the
# hog spins, and ms from the hog's start to the normal task's first run
# after it, "inf" if none within 3 s). Both are killed after; a command
# named by S1_WHILE_HOG runs first, while the hog still holds the CPU (in
# s1_measure's shell: a subshell when called as < <(s1_measure ...), so it
# reports through files).
s1_measure() {
	local n h first normal hog
	n=$(taskset -c 1 chrt -o 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!)
	wait_spinning 10 "$n" || { kill -KILL "$n"; echo "s1_measure: the normal task did not start spinning" >&2; return 1; }
	h=$(rt_hog 1 "$1" "$2" 30) || { kill -KILL "$n"; return 1; }
	first=$(first_service_ms "$n" 3)
	sleep 0.5
	read -r normal hog < <(ms_per_s_of 6 "$n" "$h")
	[ -z "${S1_WHILE_HOG:-}" ] || "$S1_WHILE_HOG"
	kill -KILL "$h" "$n" 2>/dev/null
	wait "$n" 2>/dev/null
	[ -n "$hog" ] || { echo "s1_measure: could not read the tasks' schedstat" >&2; return 1; }
	echo "$normal $hog $first"
}
