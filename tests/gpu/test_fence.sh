#!/bin/sh
# test_fence.sh BUILD: fenced kernels (daemon/jit/fence.c) on a real GPU,
# without oood (tests/gpu/fence_check): a fenced copy inside the tenant's
# window is exact, a generic access to shared memory passes, a write outside
# the window traps and writes nothing (through a global address, a generic
# one and a .func, each alone and as a member of a fused kernel: six runs,
# since a trap ends the context), and the cost of the guards on a
# memory-bound and a compute-bound kernel (printed).
set -u
build=${1:-build}
name=test_fence
. "$(dirname "$0")/lib.sh"
gpu_require
check=$build/tests/gpu/fence_check
rc=0
for mode in global generic func "global fused" "generic fused" "func fused"; do
	# shellcheck disable=SC2086 # mode is one or two words
	out=$(timeout 120 "$check" "$libcuda" $mode 2>&1)
	r=$?
	echo "$out"
	[ $r -eq 77 ] && { echo "$name: SKIP"; exit 77; }
	[ $r -eq 0 ] || rc=1
done
[ $rc -eq 0 ] && echo "$name: OK"
exit $rc
