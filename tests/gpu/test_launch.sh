#!/bin/sh
# test_launch.sh BUILD: modules and kernel launches through ooo on a real GPU:
# vector add from CUDA C (NVRTC in the executor), PTX and CUBIN (nvcc here),
# checked against the host; a faulting kernel (OOO_EFAULT, the executor is
# replaced, another tenant's data intact); and the round-trip and launch-rate
# benchmarks next to direct CUDA in the same run.
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
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" fault "$rundir/k.ptx" 2>&1)
echo "$out"
echo "$out" | grep -q '^ok' || fail "fault"
wait_ready || fail "executor not back after the fault"
[ "$(field restarts)" -ge 1 ] || fail "the faulting executor was not replaced"
timeout 200 "$build/tests/gpu/launch_check" "$sock" bench "$rundir/k.ptx" "$libcuda" || fail "bench"
gpu_stop
echo "test_launch: OK"
