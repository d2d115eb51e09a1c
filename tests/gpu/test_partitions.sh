#!/bin/sh
# test_partitions.sh BUILD: SM partitions of the executor's coalescer, made of
# green contexts, on a real GPU. The class has partition = yes, sm_share = 25:
# 33 SMs asked, 40 made (the H200 splits in groups of 8). A kernel of 1056
# blocks that writes the SM of each block must stay on the partition's SMs;
# resized with oooctl partition set (16 SMs: on 16 at most; 0: no partition,
# the whole GPU again). Order-sensitive launches of 8 sessions (results read
# back) stay right while the partition is resized under them.
set -u
build=${1:-build}
name=test_partitions
. "$(dirname "$0")/lib.sh"
gpu_require
gpu_start 'max_sessions = 200\nmax_queues = 2048\npartition = yes\nsm_share = 25\n'
# (the executor answers the plan a moment after it is ready: "plan 1 sent, not answered yet" until then)
for _ in $(seq 100); do
	out=$($ctl partition 2>&1) || fail "oooctl partition: $out"
	echo "$out" | grep -q 'not answered yet' || break
	sleep 0.1
done
echo "$out"
sms=$(echo "$out" | awk '$3 == "1" && $4 == "default" { print $6; exit }')
[ -n "$sms" ] && [ "$sms" -ge 33 ] && [ "$sms" -lt 132 ] || fail "the class's partition was not made: $out"
out=$(timeout 60 "$build/tests/gpu/launch_check" "$sock" smid "$sms" 2>&1) || fail "smid on $sms SMs: $out"
echo "$name: partition of $sms SMs: $(echo "$out" | grep '^smids')"
out=$($ctl partition set default 16 2>&1) || fail "partition set default 16: $out"
out=$(timeout 60 "$build/tests/gpu/launch_check" "$sock" smid 16 2>&1) || fail "smid on 16 SMs: $out"
echo "$name: partition of 16 SMs: $(echo "$out" | grep '^smids')"
out=$($ctl partition set default 0 2>&1) || fail "partition set default 0: $out"
out=$(timeout 60 "$build/tests/gpu/launch_check" "$sock" smid 1024 2>&1) || fail "smid without a partition: $out"
d=$(echo "$out" | sed -n 's/^smids: \([0-9]*\) distinct.*/\1/p')
[ "${d:-0}" -gt 40 ] || fail "without a partition the kernel ran on only ${d:-0} SMs: $out"
echo "$name: no partition: $(echo "$out" | grep '^smids')"
# results of order-sensitive launches while the partition changes under them
"$build/tests/gpu/dp_check" "$sock" order >"$rundir/order.out" 2>&1 &
pl=$!
for s in 24 64 0 8 40 16; do
	out=$($ctl partition set default $s 2>&1) || fail "partition set default $s during launches: $out"
	sleep 0.2
done
wait $pl || fail "dp_check order while the partition was resized: $(cat "$rundir/order.out")"
echo "$name: $(tail -1 "$rundir/order.out") while the partition was resized 6 times"
$ctl sched --interval 0 | sed -n '/per partition/,$p'
gpu_stop
echo "$name: OK"
