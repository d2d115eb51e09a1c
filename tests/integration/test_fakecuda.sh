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
# 100 sessions, 8 threads of one session syncing at once, 8 threads of one
# session asleep in their syncs when the executor dies (each woken at once), launches through
# the coalescer (bundled and fused: counted by oooctl sched; every sync
# clean; two kernels whose bundles cross the coalescer's streams: counted
# waits), the per-session caps on fusion classes (128) and on a class's
# shapes (8), a faulting kernel (OOO_EFAULT for its tenant, the executor
# replaced, a neighbour's buffer intact), bundles sent unfused when fusing does not pay (every timed
# bundle made to measure 20 ms), fused launches the driver refuses (each bundle's members then run one
# by one, and one tenant's own refused launch fails only its sync), a buffer that survives a SIGKILL of the executor and is mapped
# again by the next one, a SIGKILLed tenant's charge returned, an
# allocation over mem_limit refused, partitions resized at run time, stream priorities. The same checks
# run on the GPU machine (tests/gpu) with the real driver. test_fakecuda_modes.sh (the executor's other
# modes) and test_fakecuda_limits.sh (kernels that never end, stalls) go on from here: one script was
# too long for tests/run.sh's 300 s under the sanitizers on a loaded 2-core machine.
set -u
build=${1:-build}
name=test_fakecuda
here=$(dirname "$0")
. "$here/../gpu/lib.sh"
. "$here/fakecuda_lib.sh"
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

# a fused kernel that does not pay: every timed bundle measures 20 ms (launches alone are seen in
# microseconds; in milliseconds on a loaded machine, whose clock times them: 2 ms was too close), so the scheduler sends most bundles unfused, one after another; every sync clean
FAKECUDA_ELAPSED_US=20000 gpu_start 'max_sessions = 200\nmax_queues = 2048\n'
out=$(timeout 150 "$build/tests/gpu/dp_check" "$sock" launches 2>&1) || fail "dp_check launches (slow fused): $out"
c0=0
d=$(settle 1 unfused_nopay)
[ "$d" -gt 0 ] || fail "no bundle went unfused although every fused one measured 20 ms: $($ctl sched 2>&1 | head -24)"
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

# threads of one session asleep in their syncs when the executor dies, its successor slow to come
# (FAKECUDA_INIT_MS): every sync ends with OOO_EDEVRESET at the death, within 1.5 s of the first, not
# when the successor takes the session or at its timeout (the thread that hears of the death fails the
# others' commands, and may have drained the doorbell and notice that would have woken them)
FAKECUDA_INIT_MS=3000 gpu_start 'max_sessions = 200\nwait_spin_us = 0\n'
across_restart resetwake busy "$rundir/resetwake.out" || fail "dp_check resetwake: $(cat "$rundir/resetwake.out")"
ok "an executor's death under 8 threads asleep in their syncs: $(sed -n 's/^ok: //p' "$rundir/resetwake.out")"
fake_stop

echo "$passed passed, 0 failed"
