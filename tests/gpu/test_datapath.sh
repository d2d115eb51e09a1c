#!/bin/sh
# test_datapath.sh BUILD: queues and copies through the shared-memory rings on
# a real GPU: fill and read back, refusals, an executor killed under a busy
# queue (OOO_EDEVRESET, then the queue works again), and the copy bandwidth
# through staging next to direct pinned cuMemcpy in the same run. Also eight
# threads of one session syncing at once (no lost wake-up), 8 sessions' small
# copies at once, every byte checked (they run as fused launches of the
# executor's copy kernel: counted; and again with fuse_copies = no: none
# fused), and launches of two
# order-sensitive kernels whose bundles run on different streams of the
# coalescer (each queue's results as its launches in order make them).
set -u
build=${1:-build}
name=test_datapath
. "$(dirname "$0")/lib.sh"
gpu_require
gpu_start 'mem_limit = 16G\nmax_sessions = 200\nmax_queues = 2048\n' 'fuse_copies = yes\n'

out=$(timeout 120 "$build/tests/gpu/dp_check" "$sock" check 2>&1) || fail "check: $out"
echo "$out" | grep -q '^ok' || fail "check: $out"
echo "test_datapath: fill and read back, dtod, small memsets, refusals: ok"

out=$(timeout 200 "$build/tests/gpu/dp_check" "$sock" many 2>&1) || fail "many: $out"
echo "test_datapath: $out"
for _ in $(seq 100); do $ctl status | grep -q '^sessions  *0 /' && break; sleep 0.1; done
$ctl status | grep -q '^sessions  *0 /' || fail "sessions not reclaimed: $($ctl status)"

out=$(timeout 120 "$build/tests/gpu/dp_check" "$sock" threads 2>&1) || fail "threads: $out"
echo "test_datapath: $out"

# small copies run as launches of the executor's copy kernel, fused across sessions (daemon/exec/coalesce.h)
c0=$(counter fused_launches)
out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" copies 2>&1) || fail "copies: $out"
echo "$out" | grep -q '^ok' || fail "copies: $out"
d=$(settle 1 fused_launches)
[ "$d" -gt 0 ] || fail "copies: none ran in a fused launch of the copy kernel ($out)"
echo "test_datapath: $out; $d copies ran in fused launches"

# a queue's launches in bundles on different streams of the coalescer keep their order
c0=$(counter stream_waits)
out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" order 2>&1) || fail "order: $out"
d=$(settle 1 stream_waits)
[ "$d" -gt 0 ] || fail "order: no stream waited for another ($out): the check did not cross streams"
echo "test_datapath: $out, $d waits of a stream for another's bundle"

across_restart reset busy "$rundir/reset.out" || fail "reset: $(cat "$rundir/reset.out")"
grep -q '^ok' "$rundir/reset.out" || fail "reset: $(cat "$rundir/reset.out")"
echo "test_datapath: executor killed under a busy queue: $(grep '^sync after' "$rundir/reset.out"); queue works again: ok"

timeout 120 "$build/tests/gpu/dp_check" "$sock" bw "$libcuda" 64 || fail "bandwidth"
gpu_stop

# with fuse_copies = no every small copy is a driver call on its queue's own stream: the same bytes, none fused
gpu_start 'mem_limit = 16G\nmax_sessions = 200\nmax_queues = 2048\n' 'fuse_copies = no\n'
c0=$(counter fused_launches)
out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" copies 2>&1) || fail "copies, fuse_copies = no: $out"
echo "$out" | grep -q '^ok' || fail "copies, fuse_copies = no: $out"
d=$(($(steady fused_launches) - c0))
[ "$d" -eq 0 ] || fail "fuse_copies = no: $d launches ran fused ($out)"
echo "test_datapath: fuse_copies = no: $out; none fused"
gpu_stop
echo "test_datapath: OK"
