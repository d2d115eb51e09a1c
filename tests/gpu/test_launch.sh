#!/bin/sh
# test_launch.sh BUILD: modules and kernel launches through ooo on a real GPU:
# vector add from CUDA C (NVRTC in the executor), PTX and CUBIN (nvcc here),
# checked against the host; one session with more distinct fusible kernels
# than its share of the executor's fusion classes (128: the rest run unfused,
# every result right, and other sessions' kernels still get a class); a
# faulting kernel (OOO_EFAULT, the executor is replaced, another tenant's data
# intact); the round-trip and launch-rate benchmarks next to direct CUDA in
# the same run; and a kernel that never ends, stopped by kernel_time_limit_ms
# (OOO_EHUNG, the executor is replaced, another tenant's data intact).
set -u
build=${1:-build}
name=test_launch
. "$(dirname "$0")/lib.sh"
gpu_require
gpu_require_nvcc
here=$(dirname "$0")
gpu_start 'mem_limit = 16G\n'
"$nvcc" -ptx -arch=sm_90 -o "$rundir/k.ptx" "$here/kernels/vadd.cu" || fail "nvcc -ptx"
"$nvcc" -cubin -arch=sm_90 -o "$rundir/k.cubin" "$here/kernels/vadd.cu" || fail "nvcc -cubin"
chmod 644 "$rundir"/k.*
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" vadd "$here/kernels/vadd.cu" "$rundir/k.ptx" "$rundir/k.cubin" 2>&1)
echo "$out"
echo "$out" | grep -q '^ok' || fail "vadd"
# jit_classes: fusion classes the executor has compiled or failed to, so far
jit_classes() {
	$ctl --json sched --interval 0 2>/dev/null | sed -n 's/^ *"\(compiles\|failures\)": \([0-9][0-9]*\),*$/\2/p' |
		awk '{ s += $1 } END { print s + 0 }'
}
$ctl sched --help >/dev/null 2>&1 || fail "this oooctl has no 'sched' command"
{
	# the executor's counters come about once a second, and vadd's classes may still be compiling (beside
	# a new spare executor that starts when the first domain claims one): wait until they stand still for
	# three readings (one equal pair was not enough on an H100: two of vadd's compiles landed after it)
	prev=-1 same=0
	c0=$(jit_classes)
	for _ in $(seq 30); do
		if [ "$c0" = "$prev" ]; then
			same=$((same + 1))
			[ "$same" -ge 2 ] && break
		else
			same=0
		fi
		prev=$c0
		sleep 1.2
		c0=$(jit_classes)
	done
	out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" classes 130 2>&1)
	echo "$out"
	echo "$out" | grep -q '^ok' || fail "classes"
	for _ in $(seq 100); do [ $(($(jit_classes) - c0)) -ge 129 ] && break; sleep 0.2; done
	sleep 1.5
	d=$(($(jit_classes) - c0))
	[ "$d" -eq 129 ] || fail "classes: $d new fusion classes, not 129 (128 of the first session, 1 of the others, none of the fourth)"
	capped=$(grep -c 'holds 128 fusion classes' "$rundir/oood.log")
	[ "$capped" -eq 2 ] || fail "classes: the executor capped $capped sessions, not 2 (the first and the fourth)"
	echo "test_launch: one session's 130 kernels made 128 fusion classes, the others' kernel 1 more, a fourth finding all 131 held 128: ok"
}
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" fault "$rundir/k.ptx" 2>&1)
echo "$out"
echo "$out" | grep -q '^ok' || fail "fault"
wait_restarted 0 || fail "the faulting executor was not replaced: $(field state), $(field restarts) restarts"
timeout 200 "$build/tests/gpu/launch_check" "$sock" bench "$rundir/k.ptx" "$libcuda" || fail "bench"
gpu_stop
# a kernel that never ends (it spins until its process goes): with kernel_time_limit_ms = 2000 its
# tenant gets OOO_EHUNG after 2 s, the executor is replaced (its exit is what stops the kernel), the
# other tenant's buffer is intact and both tenants' kernels run again on the new executor
gpu_start 'max_sessions = 200\n' 'kernel_time_limit_ms = 2000\n'
r0=$(field restarts)
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" hang "$here/kernels/hang.ptx" 2000 2>&1)
echo "$out"
echo "$out" | grep -q '^ok' || fail "hang"
wait_restarted "${r0:-0}" || fail "the hung executor was not replaced: $(field state), $(field restarts) restarts"
grep -q 'past kernel_time_limit_ms 2000' "$rundir/oood.log" || fail "oood's log does not say why the executor went"
# its tenant leaves at once: the detach that waits on the hung work is bounded by the limit too
r0=$(field restarts)
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" hang "$here/kernels/hang.ptx" 2000 exit 2>&1)
echo "$out"
echo "$out" | grep -q '^ok' || fail "hang exit"
wait_restarted "${r0:-0}" || fail "the hung executor was not replaced (its tenant gone): $(field state), $(field restarts) restarts"
gpu_stop
# no sync behind the launch and its tenant idle, with fuse = no (the kernel on its queue's own stream,
# where a launch has no completion): the executor's silent pending times it all the same
gpu_start 'max_sessions = 200\n' 'kernel_time_limit_ms = 2000\nfuse = no\n'
r0=$(field restarts)
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" hang "$here/kernels/hang.ptx" 2000 stay 2>&1)
echo "$out"
echo "$out" | grep -q '^ok' || fail "hang stay"
wait_restarted "${r0:-0}" || fail "the hung executor was not replaced (no sync): $(field state), $(field restarts) restarts"
grep -q "uid $(id -u): hang 1 within" "$rundir/oood.log" || fail "the hang with no sync behind it was not counted against uid $(id -u)"
gpu_stop
echo "test_launch: OK"
