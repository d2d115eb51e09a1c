#!/bin/sh
# test_fakecuda.sh BUILD: oood's executor and data path on a machine without
# a GPU, on the stand-in driver BUILD/tests/fakecuda/libcuda.so.1
# (tests/fakecuda/fakecuda.c: device memory is host memory, copies happen at
# once, kernels do not run). The tests/gpu programs that need no kernel's
# result run against it: fill and read back through the rings (memset,
# HtoD, DtoH, DtoD), 8 sessions' small copies of any size and alignment
# (the stand-in driver says the device cannot reach host memory at its host
# address, so they go to the copy engines here, not to the copy kernel),
# refusals of other sessions' memory, 1000 queues over
# 100 sessions, 8 threads of one session asleep in their syncs when the
# executor dies (each woken at once), 1040 sessions heard by a sleeping executor, 8 threads of one session syncing at once, launches through
# the coalescer (bundled and fused: counted by oooctl sched; every sync
# clean; two kernels whose bundles cross the coalescer's streams: counted
# waits), the per-session caps on fusion classes (128) and on a class's
# shapes (8), a faulting kernel (OOO_EFAULT for its tenant, the executor
# replaced, a neighbour's buffer intact), bundles sent unfused when fusing does not pay (every timed
# bundle made to measure 2 ms), fused launches the driver refuses (each bundle's members then run one
# by one, and one tenant's own refused launch fails only its sync), a buffer that survives a SIGKILL of the executor and is mapped
# again by the next one, a SIGKILLed tenant's charge returned, an
# allocation over mem_limit refused, kernels that never end (the time limit, hang strikes, and a hang
# beside another uid's long work on the other serving thread, counted against neither). The same checks run on the GPU machine
# (tests/gpu) with the real driver.
set -u
build=${1:-build}
name=test_fakecuda
. "$(dirname "$0")/../gpu/lib.sh"
fake=$(cd "$build" 2>/dev/null && pwd)/tests/fakecuda/libcuda.so.1
[ -f "$fake" ] || { echo "$name: FAIL: $fake is not built"; exit 1; }
for b in dp_check buf_check; do
	[ -x "$build/tests/gpu/$b" ] || { echo "$name: FAIL: $build/tests/gpu/$b is not built"; exit 1; }
done
libcuda=$fake
passed=0
ok() {
	echo "$name: $*: ok"
	passed=$((passed + 1))
}
gpu_start 'mem_limit = 8G\nmax_sessions = 200\nmax_queues = 2048\n'
[ "$(field name)" = "ooo fake GPU (tests/fakecuda)" ] || fail "the executor did not open the stand-in driver: $(field name)"
ok "executor ready on the stand-in driver"

for mode in check many threads copies launches; do
	out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" $mode 2>&1) || fail "dp_check $mode: $out"
	echo "$out" | grep -q '^ok' || fail "dp_check $mode: $out"
	ok "dp_check $mode ($(echo "$out" | tail -1))"
done

# the launches went through the coalescer: some of them fused (the counters come about once a second)
fused=0
for _ in $(seq 30); do
	fused=$($ctl --json sched --interval 0 2>/dev/null | sed -n 's/^ *"fused_launches": \([0-9][0-9]*\),*$/\1/p' | head -1)
	[ "${fused:-0}" -gt 0 ] && break
	sleep 0.2
done
[ "${fused:-0}" -gt 0 ] || fail "oooctl sched counts no fused launch after dp_check launches: $($ctl sched 2>&1 | head -20)"
ok "the coalescer fused $fused launches"
# dp_check launches submits several launches a queue back to back: chain_launches (default yes) runs
# them chained in fused bundles (their order on a GPU: test_bundle's chain pass)
chained=$(counter chained_launches)
[ "$chained" -gt 0 ] || fail "oooctl sched counts no chained launch after dp_check launches: $($ctl sched 2>&1 | head -24)"
[ "$(counter burst_holds)" -eq 0 ] || fail "burst_wait_us is 0 (off), yet oooctl sched counts $(counter burst_holds) burst holds"
ok "$chained launches ran chained behind their queue's previous one (no burst hold: burst_wait_us = 0)"

# a queue's launches in bundles on different streams of the coalescer: the later stream waits
c0=$(counter stream_waits)
out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" order noresults 2>&1) || fail "dp_check order: $out"
d=$(settle 1 stream_waits)
[ "$d" -gt 0 ] || fail "dp_check order: no stream waited for another ($out): the check did not cross streams"
ok "dp_check order, $d waits of a stream for another's bundle ($(echo "$out" | tail -1))"

# one session's kernels hold at most 128 fusion classes, found or made
c0=$(steady compiles failures)
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" classes 130 noresults 2>&1) || fail "launch_check classes: $out"
d=$(settle 129 compiles failures)
[ "$d" -eq 129 ] || fail "classes: $d new fusion classes, not 129 (128 of the first session, 1 of the others, none of the fourth)"
capped=$(grep -c 'holds 128 fusion classes' "$rundir/oood.log")
[ "$capped" -eq 2 ] || fail "classes: the executor capped $capped sessions, not 2 (the first and the fourth)"
ok "one session's 130 kernels made 128 fusion classes, others' kernel 1 more, a fourth session held to 128"

# one session adds at most 8 of a class's 16 shapes: its 9th shape's two launches go unfused
c0=$(steady direct_launches)
out=$(timeout 60 "$build/tests/gpu/dp_check" "$sock" shapes 2>&1) || fail "dp_check shapes: $out"
d=$(settle 2 direct_launches)
[ "$d" -eq 2 ] || fail "shapes: $d launches went unfused, not 2 (the first session's 9th shape, twice)"
ok "one session's 9th shape of a class runs unfused, another session's new shape is still taken"

# a kernel that faults (its pointer is in the null page: the stand-in's one modelled fault): its
# tenant gets OOO_EFAULT, the executor is replaced, another tenant's buffer is intact
poke_ptx() {
	printf '%s\n' '.version 7.8' '.target sm_90' '.address_size 64' '.visible .entry poke(.param .u64 p)' '{' \
		' .reg .b64 a;' ' .reg .b32 v;' ' ld.param.u64 a, [p];' ' cvta.to.global.u64 a, a;' ' mov.u32 v, 1;' \
		' st.global.u32 [a], v;' ' ret;' '}' >"$rundir/poke.ptx"
	chmod 644 "$rundir/poke.ptx"
}
poke_ptx
r0=$(field restarts)
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" fault "$rundir/poke.ptx" noresults 2>&1) || fail "launch_check fault: $out"
echo "$out" | grep -q '^ok' || fail "launch_check fault: $out"
# (the faulting tenant gets OOO_EFAULT, or OOO_EDEVRESET when oood marks the executor's death before
# the tenant reads the completion the executor posted: libooo drops a dead executor's completions)
wait_restarted "$r0" || fail "the faulting executor was not replaced: $(field state), $(field restarts) restarts"
grep -q 'loading 1 modules (1 kernels) again' "$rundir/oood.log" || fail "oood did not load the sessions' modules again"
ok "a faulting kernel: $(echo "$out" | grep '^faulting'), the executor replaced, the other tenant's buffer intact; $(echo "$out" | grep '^module handles')"

# a buffer outlives the executor, and the next executor maps it again
buffer_survives_restart "$fake"
ok "a buffer survives a SIGKILL of the executor and is mapped again"

# the data path works on the new executor
out=$(timeout 60 "$build/tests/gpu/dp_check" "$sock" check 2>&1) || fail "dp_check check after the restart: $out"
ok "fill and read back on the new executor"

# a tenant SIGKILLed while it holds 4 GiB: its charge returns
hold_buffer 4294967296
[ "$(tenant_mem)" -ge 4294967296 ] || fail "4 GiB not charged: $(tenant_mem)"
kill -9 $holder
wait $holder 2>/dev/null
for _ in $(seq 100); do [ -z "$(tenant_mem)" ] && break; sleep 0.1; done
[ -z "$(tenant_mem)" ] || fail "the SIGKILLed tenant is still charged: $(tenant_mem)"
ok "a SIGKILLed tenant's 4 GiB charge returns"

over_quota_refused
ok "over mem_limit refused ($quota_reason)"

# stop: oood exits 0 and, under make asan, nothing the sanitizers found in oood or its executors (gpu_stop)
fake_stop() {
	gpu_stop
	ok "oood stopped cleanly, no sanitizer report in its log"
}
fake_stop

# tenants that do not spin (wait_spin_us = 0: every wait sleeps on the completion doorbell at once)
# get every command's completion; and compiles that finish after every tenant that asked for them is
# gone are still taken in and counted (the classes outlive their sessions): each fused module load
# takes 100 ms here (FAKECUDA_FUSED_LOAD_MS), the tenants leave at once, and no session comes after
FAKECUDA_FUSED_LOAD_MS=100 gpu_start 'max_sessions = 200\nmax_queues = 2048\nwait_spin_us = 0\n'
for mode in check many; do
	out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" $mode 2>&1) || fail "dp_check $mode (wait_spin_us = 0): $out"
	echo "$out" | grep -q '^ok' || fail "dp_check $mode (wait_spin_us = 0): $out"
done
ok "tenants that sleep at once on their completions (wait_spin_us = 0): dp_check check and many right"
c0=$(steady compiles failures)
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" classes 20 noresults 2>&1) || fail "launch_check classes 20: $out"
d=$(settle 21 compiles failures)
[ "$d" -eq 21 ] || fail "slow compiles: $d of 21 fusion classes counted after their sessions left"
ok "21 compiles of 100 ms each, most finishing after their tenants left, all taken in and counted"
fake_stop

# a fused kernel that does not pay: every timed bundle measures 2 ms (launches alone are seen in
# microseconds), so the scheduler sends most bundles unfused, one after another; every sync clean
FAKECUDA_ELAPSED_US=2000 gpu_start 'max_sessions = 200\nmax_queues = 2048\n'
out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" launches 2>&1) || fail "dp_check launches (slow fused): $out"
c0=0
d=$(settle 1 unfused_nopay)
[ "$d" -gt 0 ] || fail "no bundle went unfused although every fused one measured 2 ms: $($ctl sched 2>&1 | head -24)"
ok "fusing that does not pay: $d bundles sent unfused ($(echo "$out" | tail -1))"
fake_stop

# fused launches refused by the driver (FAKECUDA_REFUSE=1: as a fused kernel needing more registers
# than its block allows): each bundle's members run one by one instead, and one tenant's own refused
# launch fails only that tenant's sync
FAKECUDA_REFUSE=1 gpu_start 'max_sessions = 200\nmax_queues = 2048\n'
out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" refused 2>&1) || fail "dp_check refused: $out"
c0=0
d=$(settle 1 retried)
[ "$d" -gt 0 ] || fail "no bundle was retried unfused although every fused launch was refused: $($ctl sched 2>&1 | head -24)"
[ "$(counter fused_launches)" -eq 0 ] || fail "fused launches counted although the driver refused every one"
ok "fused launches refused: $d bundles ran their members one by one ($(echo "$out" | tail -1))"
fake_stop

# SM partitions (on the stand-in, green contexts are bookkeeping: 132 SMs split in groups of 8). The
# class has partition = yes and sm_share = 25: 33 SMs asked, 40 made; its bundles run there. Resized
# with oooctl partition set while launches run (and once to no partition at all): every sync clean.
# A plan that leaves no shared SMs is refused and changes nothing; reset goes back to the policy.
gpu_start 'max_sessions = 200\nmax_queues = 2048\npartition = yes\nsm_share = 25\n'
# part_bundles CLASS: bundles dispatched on CLASS's partition ("null": the shared one), from oooctl sched --json
part_bundles() {
	$ctl --json sched --interval 0 | tr -d ' \n' | grep -o '"partitions":\[[^]]*\]' | head -1 |
		grep -o "\"class\":\"*$1\"*,\"sms\":[0-9]*,\"max_inflight\":[0-9]*,\"streams\":[0-9]*,\"bundles\":[0-9]*" |
		sed 's/.*"bundles"://'
}
# (the executor answers the plan a moment after it is ready: "plan 1 sent, not answered yet" until then)
for i in $(seq 100); do
	out=$($ctl partition 2>&1) || fail "oooctl partition: $out"
	echo "$out" | grep -q 'not answered yet' || break
	sleep 0.1
done
echo "$out" | grep -Eq '^ *0 +[^ ]+ +1 +default +33 +40 +policy' || fail "partition = yes, sm_share = 25 did not give 40 SMs: $out"
echo "$out" | grep -Eq '^ *0 +[^ ]+ +shared .* 92 ' || fail "the shared partition does not have the other 92 SMs: $out"
"$build/tests/gpu/dp_check" "$sock" launches >"$rundir/parts.out" 2>&1 &
pl=$!
for sms in 16 64 0 24 8 40; do
	out=$($ctl partition set default $sms 2>&1) || fail "oooctl partition set default $sms: $out"
	echo "$out" | grep -q 'applied' || fail "partition set default $sms not applied: $out"
	sleep 0.1
done
wait $pl || fail "launches while the partitions changed: $(cat "$rundir/parts.out")"
# (a partition's counters start again when a plan gives its index to another class, or to none)
out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" launches 2>&1) || fail "dp_check launches on 40 SMs: $out"
sleep 1.5
b=$(part_bundles default)
[ "${b:-0}" -gt 0 ] || fail "no bundle ran on the class's partition: $($ctl sched 2>&1 | tail -5)"
ok "a class's partition resized 6 times while 24000 launches ran, every sync clean; then $b bundles on it"
# the class's own command stages (oooctl sched: per class, p50 / p99): its commands were stamped,
# queued and run, and their completions published
class_stage() {
	$ctl --json sched --interval 0 | tr -d ' \n' | grep -o '"classes":\[[^]]*\]' | head -1 |
		grep -o "\"name\":\"$1\"[^}]*" | grep -o "\"$2\":[0-9a-z.]*" | sed 's/.*://'
}
for st in command_submit command_queue command_run command_notify; do
	v=$(class_stage default ${st}_p99_ns)
	case $v in
	[1-9]*) ;;
	*) fail "class default: no $st p99 in oooctl sched --json (got '$v'): $($ctl --json sched --interval 0 | tr -d ' \n' | grep -o '"classes":\[[^]]*\]')" ;;
	esac
done
$ctl sched --interval 0 | grep -A3 'per class, the command stages' | grep -Eq '^ *default +[0-9]+[mu]?s / [0-9]+[mu]?s +' ||
	fail "oooctl sched prints no command stages for class default: $($ctl sched --interval 0 | tail -12)"
# every tenant here stamps with the executor's clock: none of its stamps is noise, those taken
# after the serving pass read the clock included
bad=$($ctl --json sched --interval 0 | tr -d ' \n' | grep -o '"submit_stamps_bad":[0-9]*' | sed 's/.*://' | sort -u | tr '\n' ' ')
[ "$bad" = "0 " ] || fail "submit stamps counted as bad with one clock: $bad"
ok "class default's own command stages: submit, queue, run and notify p99 $(class_stage default command_submit_p99_ns)/$(class_stage default command_queue_p99_ns)/$(class_stage default command_run_p99_ns)/$(class_stage default command_notify_p99_ns) ns"
out=$($ctl partition set default 200 2>&1) && fail "a partition of 200 SMs was accepted: $out"
echo "$out" | grep -q 'other classes need some' || fail "partition of 200 SMs: unexpected refusal: $out"
$ctl partition | grep -Eq '^ *0 +[^ ]+ +1 +default +40 +40 +oooctl' || fail "a refused plan changed the partitions: $($ctl partition)"
out=$($ctl partition reset default 2>&1) || fail "oooctl partition reset: $out"
echo "$out" | grep -Eq '^ *0 +[^ ]+ +1 +default +33 +40 +policy' || fail "reset did not go back to the policy: $out"
ok "a plan without shared SMs refused and nothing changed; reset back to the policy's 33 (40) SMs"
# what oooctl set outlives the executor: a new one gets the plan when it is ready
$ctl partition set default 24 >/dev/null || fail "partition set default 24"
pid=$(field executor_pid)
r0=$(field restarts)
kill -9 "$pid"
wait_restarted "${r0:-0}" || fail "executor not back after SIGKILL"
[ "$(field executor_pid)" != "$pid" ] || fail "the executor was not replaced"
for _ in $(seq 50); do $ctl partition | grep -q 'applied' && break; sleep 0.1; done
out=$($ctl partition 2>&1)
echo "$out" | grep -Eq '^ *0 +[^ ]+ +1 +default +24 +24 +oooctl' || fail "the new executor did not get the plan: $out"
out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" launches 2>&1) || fail "launches on the new executor's partition: $out"
ok "a new executor (the old one SIGKILLed) gets the plan (24 SMs), and launches run on it"
# a reload that changes the plan sends it: without oooctl's size and with partition = no, no partition
$ctl partition reset default >/dev/null || fail "partition reset default"
sed -i 's/^partition = yes$/partition = no/' "$rundir/oood.conf"
out=$($ctl reload 2>&1) || fail "reload: $out"
for _ in $(seq 50); do $ctl partition | grep -q 'no reserved partitions' && break; sleep 0.1; done
out=$($ctl partition 2>&1)
echo "$out" | grep -q 'applied: no reserved partitions' || fail "the reload did not remove the partition: $out"
ok "a reload to partition = no removes the class's partition"
fake_stop

# a bundle keeps its queues' priority: the stand-in's streams remember their priority (0 least .. -5
# greatest) and FAKECUDA_PRIO_DIR names the priorities fused launches ran at. With the class at
# priority 99, dp_check launches' queues are all of one tier: their bundles run at the least
# priority. Then dp_check prio's queues at the class's priority (99, above the default 50) fuse k0
# and those at 10 (below it) fuse k1: k0's bundles run at the greatest, k1's at the least, none at
# the default's (-2). On green-context streams (partition = yes), then on the primary context's.
for part in yes no; do
	pdir=$(mktemp -d /tmp/ooo-prio-XXXXXX)
	chmod 777 "$pdir" # the executor runs as a uid of executor_uids
	FAKECUDA_PRIO_DIR=$pdir gpu_start "max_sessions = 200\nmax_queues = 2048\npriority = 99\npartition = $part\nsm_share = 25\n"
	# queues of one tier only (all at the class's 99): their bundles keep the least priority, as before tiers
	out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" launches 2>&1) || fail "dp_check launches (partition = $part): $out"
	[ -e "$pdir/fused-prio-0" ] && [ -z "$(ls "$pdir" | grep -v '^fused-prio-0$')" ] ||
		fail "partition = $part: queues of one priority: fused launches ran at stream priorities $(ls "$pdir" | tr '\n' ' '), not 0 only"
	out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" prio 2>&1) || fail "dp_check prio (partition = $part): $out"
	echo "$out" | grep -q 'queue priorities 99 (k0) and 10 (k1)' || fail "dp_check prio: queue priorities not applied: $out"
	c0=0
	hi=$(settle 1 high)
	lo=$(counter low)
	df=$(counter default)
	tiers="bundles by priority: low $lo, default $df, high $hi"
	[ -e "$pdir/fused-prio--5" ] && [ -e "$pdir/fused-prio-0" ] && [ ! -e "$pdir/fused-prio--2" ] ||
		fail "partition = $part: fused launches ran at stream priorities $(ls "$pdir" | tr '\n' ' '), not -5 (priority 99) and 0 (priority 10) only; oooctl sched: $tiers"
	[ "$hi" -gt 0 ] && [ "$lo" -gt 0 ] && [ "$df" -eq 0 ] || fail "partition = $part: oooctl sched $tiers"
	rm -rf "$pdir"
	ok "partition = $part: priority 99's fused launches ran at the greatest stream priority, priority 10's at the least ($tiers)"
	fake_stop
done

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

# hang_case [MODE]: launch_check hang [MODE] at a 1000 ms limit (the stand-in's modelled hang), and the
# executor replaced after it; sets $out (fz: the fuse setting, for the messages)
hang_case() {
	r0=$(field restarts)
	out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" hang "$(dirname "$0")/../gpu/kernels/hang.ptx" 1000 ${1:-} 2>&1) ||
		fail "launch_check hang ${1:-} (fuse = ${fz:-yes}): $out"
	echo "$out" | grep -q '^ok' || fail "launch_check hang ${1:-} (fuse = ${fz:-yes}): $out"
	wait_restarted "$r0" ||
		fail "the hung executor was not replaced (${1:-sync}, fuse = ${fz:-yes}): $(field state), $(field restarts) restarts"
}

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
# threads of one session asleep in their syncs when the executor dies, its successor slow to come
# (FAKECUDA_INIT_MS): every sync ends with OOO_EDEVRESET at the death, within 1.5 s of the first, not
# when the successor takes the session or at its timeout (the thread that hears of the death fails the
# others' commands, and may have drained the doorbell and notice that would have woken them)
FAKECUDA_INIT_MS=3000 gpu_start 'max_sessions = 200\nwait_spin_us = 0\n'
across_restart resetwake busy "$rundir/resetwake.out" || fail "dp_check resetwake: $(cat "$rundir/resetwake.out")"
ok "an executor's death under 8 threads asleep in their syncs: $(sed -n 's/^ok: //p' "$rundir/resetwake.out")"
fake_stop
# a module load that takes 2 s (the driver's PTX JIT of a large module; the stand-in sleeps) does not
# stall the other sessions of its serving thread: the load runs without the thread's lock
FAKECUDA_SLOW_LOAD_MS=2000 gpu_start 'max_sessions = 200\n'
{ cat "$(dirname "$0")/../gpu/kernels/hang.ptx"; echo '// fakecuda_slow_load'; } >"$rundir/slow.ptx"
chmod 644 "$rundir/slow.ptx"
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" loadstall "$rundir/slow.ptx" "$(dirname "$0")/../gpu/kernels/hang.ptx" 2>&1) || fail "launch_check loadstall: $out"
echo "$out" | grep -q '^ok' || fail "launch_check loadstall: $out"
ok "$(echo "$out" | grep '^module load')"
fake_stop

# a buffer freed, a session closed (its detach) or a queue destroyed behind a 2 s kernel (the
# stand-in's "slow" one): the executor waits for the kernel without the serving thread's lock (the
# session paused meanwhile), so the thread's other sessions are served; the launch still in the ring
# when the free came is taken first (fuse = no: the kernels on their queues' own streams, not one
# bundle stream)
FAKECUDA_SLOW_MS=2000 gpu_start 'max_sessions = 200\n' 'fuse = no\n'
for how in free close queue; do
	out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" freestall "$(dirname "$0")/../gpu/kernels/hang.ptx" 2000 $how 2>&1) || fail "launch_check freestall $how: $out"
	echo "$out" | grep -q '^ok' || fail "launch_check freestall $how: $out"
	ok "$(echo "$out" | grep '^a [a-z]* behind')"
done
fake_stop

# a kernel that never ends (the stand-in's modelled hang): past kernel_time_limit_ms its tenant gets
# OOO_EHUNG, the executor goes without another CUDA call (a synchronizing one would block for ever) and
# is replaced; the other tenant's buffer is intact and both tenants' kernels run again. With fuse = yes
# the kernel runs in a bundle; with fuse = no on its queue's own stream, timed by the sync behind it.
for fz in yes no; do
	gpu_start 'max_sessions = 200\n' "kernel_time_limit_ms = 1000\nfuse = $fz\n"
	hang_case
	echo "$out" | grep -q '^hung kernel: -1011 ' || fail "fuse = $fz: the hung tenant did not get OOO_EHUNG: $out"
	grep -q 'past kernel_time_limit_ms 1000' "$rundir/oood.log" || fail "oood's log does not say why the executor went (fuse = $fz): $(tail -5 "$rundir/oood.log")"
	# the executor named the hung work's session: the hang counts against its uid (a bundle, or the queue's own stream)
	grep -q "uid $(id -u): hang 1 within hang_window_s 600 s (hang_strikes 3)" "$rundir/oood.log" ||
		fail "the hang was not counted against uid $(id -u) (fuse = $fz): $(grep -i hang "$rundir/oood.log" | tail -4)"
	ok "fuse = $fz: a kernel that never ends: $(echo "$out" | grep '^hung kernel'); the executor replaced, the other tenant's buffer intact, both tenants' kernels run again"
	# its tenant leaves at once: the buffer free (a quiesce) that waits on the hung work ends the same way
	# once the work is overdue (a bundle; with fuse = no a launch on its queue's own stream with no sync
	# behind it, timed by the wait itself from its start: dp_sync's own_overdue)
	hang_case exit
	# the session was gone when the executor reported the hang: it counts against its uid all the same
	grep -q "uid $(id -u): hang 2 within hang_window_s 600 s (hang_strikes 3)" "$rundir/oood.log" ||
		fail "the hang of a tenant that left was not counted: $(grep -i 'hang' "$rundir/oood.log" | tail -4)"
	ok "fuse = $fz: $(echo "$out" | grep '^hung kernel'); counted against uid $(id -u) (2 of hang_strikes 3)"
	# no sync behind the launch, its tenant still there and idle: still timed (fuse = no: a silent
	# pending after a quarter of the limit, watch_tail, timed from the launch) and counted against its uid (pardoned first:
	# a third hang would bar uid 0, the other tenant's too)
	out=$($ctl pardon "$(id -u)" 2>&1) || fail "oooctl pardon: $out"
	hang_case stay
	[ "$(grep -c "uid $(id -u): hang 1 within hang_window_s 600 s (hang_strikes 3)" "$rundir/oood.log")" -eq 2 ] ||
		fail "the hang with no sync behind it was not counted against uid $(id -u) (fuse = $fz): $(grep -i 'hang' "$rundir/oood.log" | tail -4)"
	ok "fuse = $fz: $(echo "$out" | grep '^hung kernel'); counted against uid $(id -u)"
	# its sync comes half the limit after the launch: the executor timed the launch before (with fuse =
	# no through a silent pending, whose OOO_EHUNG goes to the sync behind it: hung_to_sync)
	out=$($ctl pardon "$(id -u)" 2>&1) || fail "oooctl pardon: $out"
	hang_case late
	echo "$out" | grep -q '^hung kernel: -1011 ' || fail "fuse = $fz: the late sync did not get OOO_EHUNG: $out"
	ok "fuse = $fz: a sync half the limit after the launch: $(echo "$out" | grep '^hung kernel')"
	fake_stop
done
# hang strikes: a tenant (uid) whose kernels hang hang_strikes times within hang_window_s may not
# attach a data path for hang_window_s: after the second hang (hang_strikes = 2) its session is closed
# at the restart and a new session's attach is refused with OOO_EHUNG; another uid is not barred;
# oooctl pardon ends the bar.
gpu_start 'max_sessions = 200\n' "kernel_time_limit_ms = 1000\nhang_strikes = 2\nhang_window_s = 600\n"
hang_ptx="$(dirname "$0")/../gpu/kernels/hang.ptx"
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" hang "$hang_ptx" 1000 2>&1) || fail "launch_check hang (first strike): $out"
echo "$out" | grep -q '^ok' || fail "launch_check hang (first strike): $out"
wait_ready || fail "executor not back after the first hang"
grep -q "uid $(id -u): hang 1 within hang_window_s 600 s (hang_strikes 2)" "$rundir/oood.log" ||
	fail "the first hang was not counted against uid $(id -u): $(grep -i hang "$rundir/oood.log" | tail -5)"
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" hang "$hang_ptx" 1000 barred 2>&1) || fail "launch_check hang barred: $out"
echo "$out" | grep -q '^ok' || fail "launch_check hang barred: $out"
wait_ready || fail "executor not back after the second hang"
grep -q "uid $(id -u): 2 hangs within hang_window_s 600 s (hang_strikes 2)" "$rundir/oood.log" ||
	fail "the second hang did not bar uid $(id -u): $(grep -i hang "$rundir/oood.log" | tail -5)"
other="the other uid not tried (needs root and setpriv)"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	out=$(timeout 60 setpriv --reuid=4301 --regid=4301 --clear-groups "$build/tests/gpu/dp_check" "$sock" check 2>&1) ||
		fail "uid 4301 after uid 0 was barred: $out"
	other="uid 4301's data path works"
fi
# still barred, until the operator pardons it
out=$(timeout 60 "$build/tests/gpu/dp_check" "$sock" check 2>&1) && fail "a barred tenant attached: $out"
echo "$out" | grep -q "hang_strikes" || fail "the barred tenant's attach did not say why: $out"
out=$($ctl pardon "$(id -u)" 2>&1) || fail "oooctl pardon: $out"
echo "$out" | grep -q "uid $(id -u): 2 hangs forgotten; it was barred" || fail "oooctl pardon said: $out"
out=$(timeout 60 "$build/tests/gpu/dp_check" "$sock" check 2>&1) || fail "the pardoned tenant's data path: $out"
out=$($ctl pardon "$(id -u)" 2>&1) || fail "oooctl pardon (again): $out"
echo "$out" | grep -q "nothing to forget" || fail "a second pardon said: $out"
grep -q "cannot be attached again (uid $(id -u).s kernels ran past" "$rundir/oood.log" || fail "the barred session was not closed at the restart"
ok "hang strikes: the second hang of uid $(id -u) (hang_strikes 2): its session closed, a new one refused with OOO_EHUNG until oooctl pardon; $other"
fake_stop

# a hang beside another tenant's long work, on the other serving thread of one executor (domain =
# shared; shard_sessions = 0: the first session on thread 0, the second on thread 1): uid 4301's kernel
# runs 4 s (the stand-in's "slow" kernel, FAKECUDA_SLOW_MS), past kernel_time_limit_ms 2000, and
# passes it first; uid 0's, launched after it, never ends. The report names both tenants' work (the
# other thread's as that thread published it), so the hang counts against neither (hang_strikes = 1
# would bar at once): a tenant whose work a hang starved is not the one blamed.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	FAKECUDA_SLOW_MS=4000 gpu_start 'max_sessions = 200\ndomain = shared\n' \
		"kernel_time_limit_ms = 2000\nhang_strikes = 1\nserving_threads = 2\nshard_sessions = 0\n"
	slog=$rundir/slow.out
	timeout 120 setpriv --reuid=4301 --regid=4301 --clear-groups "$build/tests/gpu/launch_check" "$sock" stall \
		"$hang_ptx" slow >"$slog" 2>&1 &
	spid=$!
	for _ in $(seq 200); do
		grep -q '^launched' "$slog" && break
		sleep 0.05
	done
	grep -q '^launched' "$slog" || fail "uid 4301's slow kernel was not launched: $(cat "$slog")"
	out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" stall "$hang_ptx" hang 2>&1) ||
		fail "launch_check stall hang: $out"
	wait "$spid" || fail "launch_check stall slow (uid 4301): $(cat "$slog")"
	wait_ready || fail "executor not back after the hang"
	grep -q "the hung work was not one known tenant's (sessions of several tenants" "$rundir/oood.log" ||
		fail "the hang beside uid 4301's work: $(grep -i hang "$rundir/oood.log" | tail -5)"
	grep -q "uid [0-9]*: 1 hangs within" "$rundir/oood.log" &&
		fail "a hang was counted against one tenant: $(grep -i hang "$rundir/oood.log" | tail -5)"
	for u in 4301 "$(id -u)"; do
		out=$($ctl pardon "$u" 2>&1) || fail "oooctl pardon $u: $out"
		echo "$out" | grep -q "nothing to forget" || fail "uid $u had hangs counted: $out"
	done
	ok "a hang beside another uid's work past half the limit on the other serving thread: counted against neither ($(sed -n 's/^slow kernel: /uid 4301: /p' "$slog"))"
	fake_stop
else
	echo "$name: a hang beside another uid's work: not tried (needs root and setpriv)"
fi
echo "$passed passed, 0 failed"
