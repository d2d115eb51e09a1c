#!/bin/sh
# test_fakecuda_modes.sh BUILD: oood's executor on the stand-in driver (tests/fakecuda, as
# test_fakecuda.sh) in its other modes: small copies as launches of the copy kernel (fuse_copies),
# spread_lanes, urgent_reserve, burst_wait_us, 3 serving threads (a fault replaces the executor),
# 1040 sessions heard by a sleeping executor, mem_limit, and a refused re-attach. Split from
# test_fakecuda.sh so that each script ends well within tests/run.sh's 300 s under the sanitizers.
set -u
build=${1:-build}
name=test_fakecuda_modes
here=$(dirname "$0")
. "$here/../gpu/lib.sh"
. "$here/fakecuda_lib.sh"
# small copies as launches of the executor's copy kernel (fuse_copies = yes), with FAKECUDA_HOSTPTR=1:
# the stand-in driver reaches host memory at its host address and runs the copy kernel, alone or fused
# (from the fused table), so every byte is checked as on the GPU; and the copies did run fused
FAKECUDA_HOSTPTR=1 gpu_start 'max_sessions = 200\nmax_queues = 2048\n' 'fuse_copies = yes\n'
c0=$(counter fused_launches)
for mode in copies check threads; do
	out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" $mode 2>&1) || fail "dp_check $mode (copies as launches): $out"
	echo "$out" | grep -q '^ok' || fail "dp_check $mode (copies as launches): $out"
done
d=$(settle 1 fused_launches)
[ "$d" -gt 0 ] || fail "fuse_copies = yes: no copy ran in a fused launch: $($ctl sched 2>&1 | head -24)"
ok "copies as launches of the copy kernel: dp_check copies, check and threads right, $d copies in fused launches"
fake_stop

# spread_lanes = yes: the scheduler's lanes choose the bundles' streams; the data path and fused
# launches as without, and a queue's order across streams (tiers) still kept by waits
FAKECUDA_HOSTPTR=1 gpu_start 'max_sessions = 200\nmax_queues = 2048\n' 'spread_lanes = yes\n'
c0=$(counter fused_launches)
for mode in check many threads copies; do
	out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" $mode 2>&1) || fail "dp_check $mode (spread_lanes = yes): $out"
	echo "$out" | grep -q '^ok' || fail "dp_check $mode (spread_lanes = yes): $out"
done
d=$(settle 1 fused_launches)
[ "$d" -gt 0 ] || fail "spread_lanes = yes: no fused launch: $($ctl sched 2>&1 | head -24)"
c0=$(counter stream_waits)
out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" order noresults 2>&1) || fail "dp_check order (spread_lanes = yes): $out"
w=$(settle 1 stream_waits)
[ "$w" -gt 0 ] || fail "spread_lanes = yes: dp_check order: no stream waited for another ($out)"
ok "spread_lanes = yes: dp_check check, many, threads, copies and order right, $d launches fused, $w stream waits"
# oooctl sched counts the bundles by the stream they went on (4 streams, the default): they add up to all bundles
steady bundles >/dev/null
s=$($ctl --json sched --interval 0 2>/dev/null | sed -n 's/^ *"bundles": \([0-9][0-9]*\),*$/\1/p' | head -1) # not the partitions'
by=$(counter 0 1 2 3)
[ "$by" -eq "$s" ] && [ "$s" -gt 0 ] || fail "oooctl sched: bundles_by_stream adds up to $by, not the $s bundles"
$ctl sched 2>/dev/null | grep -q '^ *bundles by stream ' || fail "oooctl sched shows no 'bundles by stream' row: $($ctl sched 2>&1 | head -40)"
ok "oooctl sched: bundles by stream add up to the $s bundles ($($ctl sched 2>/dev/null | sed -n 's/^ *bundles by stream *//p'))"
fake_stop

# urgent_reserve = 4: bundles of queues above the lowest priority tier (dp_check prio's at 99, beside
# those at 10) may take 4 more in-flight slots and go first on the launcher: the data path as without
gpu_start 'max_sessions = 200\nmax_queues = 2048\npriority = 99\n' 'urgent_reserve = 4\n'
for mode in prio many threads; do
	out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" $mode 2>&1) || fail "dp_check $mode (urgent_reserve = 4): $out"
	echo "$out" | grep -q '^ok' || fail "dp_check $mode (urgent_reserve = 4): $out"
done
out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" order noresults 2>&1) || fail "dp_check order (urgent_reserve = 4): $out"
c0=0
hi=$(settle 1 high)
[ "$hi" -gt 0 ] || fail "urgent_reserve = 4: no bundle above the lowest tier: $($ctl sched 2>&1 | head -40)"
# the reserve in force, per partition: 4 for each serving thread (2 by default)
rv=$($ctl --json sched --interval 0 2>/dev/null | sed -n 's/^ *"reserve_inflight": \([0-9][0-9]*\),*$/\1/p' | head -1)
[ "$rv" = 8 ] || fail "urgent_reserve = 4: oooctl sched says reserve_inflight '$rv', not 8 (4 for each of 2 serving threads)"
ok "urgent_reserve = 4: dp_check prio, many, threads and order right, $hi bundles above the lowest tier, reserve_inflight $rv"
fake_stop


# burst_wait_us = 50: a queue's lone head launch of a chaining kernel waits for the rest of its
# tenant's burst; the data path as without (order kept, nothing lost) and launches still chained; a
# kernel that never ends, still held when its tenant leaves, is issued on its queue's own stream by
# the session's flush and timed by the wait for it (own_overdue: it was not, 65c4190)
FAKECUDA_HOSTPTR=1 gpu_start 'max_sessions = 200\nmax_queues = 2048\n' 'burst_wait_us = 50\nkernel_time_limit_ms = 1000\n'
c0=$(counter chained_launches)
for mode in check many threads copies launches; do
	out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" $mode 2>&1) || fail "dp_check $mode (burst_wait_us = 50): $out"
	echo "$out" | grep -q '^ok' || fail "dp_check $mode (burst_wait_us = 50): $out"
done
out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" order noresults 2>&1) || fail "dp_check order (burst_wait_us = 50): $out"
d=$(settle 1 chained_launches)
[ "$d" -gt 0 ] || fail "burst_wait_us = 50: no chained launch: $($ctl sched 2>&1 | head -24)"
holds=$(counter burst_holds)
[ "$holds" -gt 0 ] || fail "burst_wait_us = 50: oooctl sched counts no burst hold after dp_check launches"
for _ in 1 2 3; do
	hang_case exit
	$ctl pardon "$(id -u)" >/dev/null 2>&1 || fail "oooctl pardon"
done
[ "$(grep -c "uid $(id -u): hang 1 within" "$rundir/oood.log")" -eq 3 ] ||
	fail "burst_wait_us = 50: the hangs of tenants that left were not each counted: $(grep -i 'hang' "$rundir/oood.log" | tail -6)"
ok "burst_wait_us = 50: dp_check check, many, threads, copies, launches and order right, $d launches chained, $holds burst holds; 3 hangs of a tenant that left timed and counted"
fake_stop

# serving_threads = 3: the executor serves its sessions from three threads (each a shard of the
# sessions with its own coalescer); the data path, fused launches and copies, the summed counters,
# and a faulting kernel (every shard stops, the executor is replaced) as with one
FAKECUDA_HOSTPTR=1 gpu_start 'max_sessions = 200\nmax_queues = 2048\n' 'serving_threads = 3\nshard_sessions = 0\n'
epid=$(field executor_pid)
for _ in $(seq 50); do # the executor says it is ready before it starts them
	n=$(cat /proc/"$epid"/task/*/comm 2>/dev/null | grep -c '^ooo-serve')
	[ "$n" -ge 3 ] && break
	sleep 0.1
done
[ "$n" -eq 3 ] || fail "serving_threads = 3: the executor runs $n serving threads"
c0=$(counter fused_launches)
for mode in check many threads copies launches; do
	out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" $mode 2>&1) || fail "dp_check $mode (3 threads): $out"
	echo "$out" | grep -q '^ok' || fail "dp_check $mode (3 threads): $out"
done
d=$(settle 1 fused_launches)
[ "$d" -gt 0 ] || fail "serving_threads = 3: no fused launch counted: $($ctl sched 2>&1 | head -24)"
poke_ptx
r0=$(field restarts)
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" fault "$rundir/poke.ptx" noresults 2>&1) || fail "launch_check fault (3 threads): $out"
echo "$out" | grep -q '^ok' || fail "launch_check fault (3 threads): $out"
wait_restarted "$r0" || fail "the faulting executor was not replaced (3 threads): $(field state), $(field restarts) restarts"
out=$(timeout 60 "$build/tests/gpu/dp_check" "$sock" check 2>&1) || fail "dp_check check after the restart (3 threads): $out"
ok "3 serving threads: dp_check check, many, threads, copies, launches right, $d launches fused; a fault replaces the executor"
fake_stop

# more sessions than one poll() set used to hold (1024): a sleeping executor still hears every
# session's doorbell (fuse = no: no periodic wake-up would hide a missing one; one serving thread
# holds them all; each session's 33 MiB area is charged to mem_limit, hence 64G)
gpu_start 'max_sessions = 1100\nmax_queues = 2048\nmem_limit = 64G\n' 'fuse = no\nserving_threads = 1\n'
out=$(timeout 200 "$build/tests/gpu/dp_check" "$sock" crowd 1040 2>&1)
case $? in
0) echo "$out" | grep -q '^ok' || fail "dp_check crowd 1040: $out"
   ok "dp_check crowd: $(echo "$out" | tail -1)" ;;
77) echo "$name: dp_check crowd 1040 skipped: $out" ;;
*) fail "dp_check crowd 1040: $out" ;;
esac
fake_stop

# a session's area (33 MiB, pinned by the executor) is charged to the tenant's mem_limit: under
# 100M the third attach is refused with the reason (each session's 4 KiB buffer is charged 2 MiB,
# the charge granule: 2 x (33 + 2) + 2 = 72 MiB in use, and 33 more would pass 100), and the
# charges return when the sessions end. A holder session of the same tenant stays open across it,
# so the tenant's account outlives them and must come back to the holder's own charge.
gpu_start 'mem_limit = 100M\n'
hold_buffer 4096
held=$(tenant_mem)
[ -n "$held" ] || fail "the holder's buffer is not charged"
out=$(timeout 60 "$build/tests/gpu/dp_check" "$sock" crowd 4 2>&1) && fail "dp_check crowd 4 under mem_limit = 100M passed: $out"
echo "$out" | grep -q 'session 2: .*pinned host memory.*mem_limit' || fail "dp_check crowd 4 under 100M: $out"
for _ in $(seq 50); do [ "$(tenant_mem)" = "$held" ] && break; sleep 0.1; done
[ "$(tenant_mem)" = "$held" ] || fail "the sessions' areas are still charged after they closed: $(tenant_mem), not $held"
kill $holder
wait $holder 2>/dev/null
ok "session areas charged to mem_limit: $(echo "$out" | grep -o 'the session.s shared area.*' | head -1)"
fake_stop

# an executor replaced under a session, whose successor refuses to take the session back (pinning its
# area fails): the session is closed with the reason (OOO_ECLOSED for the tenant), not left at an
# odd epoch where every submission is told to try again, for ever
noreg=$(mktemp -u /tmp/ooo-noreg-XXXXXX)
FAKECUDA_HOSTREG_FAIL=$noreg gpu_start 'max_sessions = 200\n'
# shellcheck disable=SC2016 # expanded by across_restart's eval
across_restart lost attached "$rundir/lost.out" 'touch "$noreg"'
rc=$?
rm -f "$noreg"
[ "$rc" -eq 0 ] || fail "dp_check lost: $(cat "$rundir/lost.out")"
grep -q 'cannot be attached again' "$rundir/oood.log" || fail "oood did not log the refused re-attach"
out=$(timeout 60 "$build/tests/gpu/dp_check" "$sock" check 2>&1) || fail "dp_check check after a refused re-attach: $out"
ok "a refused re-attach closes the session with the reason ($(sed -n 's/^ok: //p' "$rundir/lost.out")); new sessions attach"
fake_stop
# a module load that takes 2 s (the driver's PTX JIT of a large module; the stand-in sleeps) does not
echo "$passed passed, 0 failed"
