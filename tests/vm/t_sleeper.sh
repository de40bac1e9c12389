#!/bin/bash
# An intermittent normal task under an RT hog (issue 3: the floor is for
# every normal task, not only CPU hogs). The task runs 2 ms and sleeps
# 20 ms (it wants ~90 ms/s), pinned to CPU 1 under an RR 25 hog, server
# 50 ms / 1 s, default mode (SCHED_FIFO boosts by the executor; kernel-cut
# mode is t_dlbw). The server is deferred (zero laxity) only until its first
# activation; after it, as the kernel's dl_server in its dl_defer_running
# state, each period is served from its start, so each wake-up is boosted
# within a step of the server. Deferred in every period, the task was served
# only inside the last 50 ms of each: 109-118 ms in 8 s.
# Asserts: over 6 s, after 2 s to let the first activation pass, the task
# gets >= 37.5 ms/s (75% of the budget: each boost of a 2 ms run costs the
# server's step latency under TCG) and the RT hog keeps >= 850 ms/s: each
# wake-up costs the CPU the executor's two sched_setattr() calls at FIFO 99
# there, 0.3-0.5 ms each under TCG, ~45 times a second (hog 902-939 ms/s
# measured with the sleeper at 49-52; on hardware the calls take us).
source "$(dirname "$0")/lib.sh"
as_controller
start_floor --server-runtime-us 50000 --server-period-us 1000000
seq=$(enable_seq)
n=$(sleeper 1)
sleep 1
h=$(rt_hog 1 rr 25 20) || fail "no hog"
sleep 2
read -r got hog < <(ms_per_s_of 6 "$n" "$h")
[ -n "$hog" ] || fail "could not read the tasks' schedstat"
assert_not_ejected "$seq"
stop_floor || fail "scx_floor exited $?"
kill -KILL "$h" "$n" 2>/dev/null; wait "$h" "$n" 2>/dev/null
note "sleeper (2 ms run, 20 ms sleep) under an RR 25 hog: $got ms/s, hog $hog ms/s"
figure sleeper_ms_per_s "$got" ">= 37.5"
figure hog_ms_per_s "$hog" ">= 850"
ge "$got" 37.5 || fail "the sleeping task got $got ms/s under the hog (budget 50 ms/s, 37.5 asserted)"
ge "$hog" 850 || fail "the RT hog got $hog ms/s (a floor, not a grab)"
exit 0
