#!/bin/sh
# test_launch.sh BUILD: modules and kernel launches through ooo on a real GPU:
# vector add from CUDA C (NVRTC in the executor), PTX and CUBIN (nvcc here),
# checked against the host; a faulting kernel (OOO_EFAULT, the executor is
# replaced, another tenant's data intact); and the round-trip and launch-rate
# benchmarks next to direct CUDA in the same run.
set -u
build=${1:-build}
if [ ! -e /dev/nvidiactl ]; then
	echo "test_launch: SKIP: no NVIDIA device on this machine"
	exit 77
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ ! -x "$nvcc" ]; then
	echo "test_launch: SKIP: no nvcc to build the test kernels"
	exit 77
fi
here=$(dirname "$0")
rundir=$(mktemp -d /tmp/ooo-gpu-XXXXXX)
chmod 755 "$rundir"
libcuda=libcuda.so.1
[ -e /usr/local/nvidia/lib64/libcuda.so.1 ] && libcuda=/usr/local/nvidia/lib64/libcuda.so.1
"$nvcc" -ptx -arch=sm_90 -o "$rundir/k.ptx" "$here/kernels/vadd.cu" || exit 1
"$nvcc" -cubin -arch=sm_90 -o "$rundir/k.cubin" "$here/kernels/vadd.cu" || exit 1
chmod 644 "$rundir"/k.*
printf '[daemon]\nlibcuda = %s\n[class default]\nmatch_uid = *\nmem_limit = 16G\n' "$libcuda" >"$rundir/oood.conf"
"$build/oood" -f -c "$rundir/oood.conf" --rundir "$rundir" 2>"$rundir/oood.log" &
daemon=$!
ctl="$build/oooctl --rundir $rundir"
sock="$rundir/oood.sock"
fail() {
	echo "test_launch: FAIL: $*"
	sed 's/^/  | /' "$rundir/oood.log" | tail -40
	kill -9 $daemon 2>/dev/null
	exit 1
}
field() { $ctl --json devices 2>/dev/null | sed -n "s/^ *\"$1\": \"*\([^\",]*\)\"*,*$/\1/p" | head -1; }
wait_ready() {
	for _ in $(seq 300); do
		[ "$(field state)" = ready ] && return 0
		sleep 0.1
	done
	return 1
}
wait_ready || fail "executor never became ready: $(field reason)"
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" vadd "$here/kernels/vadd.cu" "$rundir/k.ptx" "$rundir/k.cubin" 2>&1)
echo "$out"
echo "$out" | grep -q '^ok' || fail "vadd"
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" fault "$rundir/k.ptx" 2>&1)
echo "$out"
echo "$out" | grep -q '^ok' || fail "fault"
wait_ready || fail "executor not back after the fault"
[ "$(field restarts)" -ge 1 ] || fail "the faulting executor was not replaced"
timeout 200 "$build/tests/gpu/launch_check" "$sock" bench "$rundir/k.ptx" "$libcuda" || fail "bench"
kill -TERM $daemon
wait $daemon || fail "oood exited with $?"
rm -rf "$rundir"
echo "test_launch: OK"
