#!/usr/bin/env python3
# gp_latency.py SECS: wait for RCU grace periods back to back for SECS seconds
# and print "n p50_ms p99_ms max_ms". Each wait is one
# membarrier(MEMBARRIER_CMD_GLOBAL), which the kernel implements as
# synchronize_rcu() (kernel/sched/membarrier.c); it fails with EINVAL on a
# kernel booted with nohz_full=.
import ctypes
import sys
import time

SYS_membarrier = 324  # x86_64
MEMBARRIER_CMD_GLOBAL = 1

libc = ctypes.CDLL(None, use_errno=True)
end = time.monotonic() + float(sys.argv[1])
lat = []
while time.monotonic() < end:
    t = time.monotonic_ns()
    if libc.syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0:
        sys.exit(f"membarrier: errno {ctypes.get_errno()}")
    lat.append((time.monotonic_ns() - t) / 1e6)
lat.sort()
n = len(lat)
print(n, f"{lat[n // 2]:.1f}", f"{lat[min(n - 1, n * 99 // 100)]:.1f}", f"{lat[-1]:.1f}")
