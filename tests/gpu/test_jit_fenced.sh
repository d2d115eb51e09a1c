#!/bin/sh
# test_jit_fenced.sh BUILD: fenced kernels through the JIT coalescer on a real GPU, without oood.
# Every kernel of tests/jit/kernels/*.cu (PTX from nvcc, or from BUILD/tests/jit/ptx when that
# exists) is fenced with the rest of its module (jit_fence_all, as a fenced executor loads it);
# fused launches of the fenced copies, with a window that admits every address, must be
# bit-identical to separate launches of the original kernels, alone, x2, x16 and in heterogeneous
# sets (jit_check check with JIT_CHECK_FENCED=1). A kernel the fence refuses is named, not failed.
# (That a fenced access outside its window traps is tests/gpu/test_fence.sh and test_domains.sh.)
set -u
build=${1:-build}
name=test_jit_fenced
. "$(dirname "$0")/lib.sh"
gpu_require
gpu_require_nvcc
here=$(dirname "$0")
corpus=$here/../jit/kernels
check=$build/tests/gpu/jit_check
tmp=$(mktemp -d /tmp/ooo-jitf-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
[ -x "$check" ] || { echo "$name: FAIL: $check is not built"; exit 1; }
corpus_ptx "$tmp"
mkdir -p "$tmp/dump"
JIT_CHECK_FENCED=1 JIT_CHECK_DUMP="$tmp/dump" timeout -k 5 250 "$check" "$libcuda" check "$corpus" "$ptxdir" \
	>"$tmp/check.out" 2>&1
rc=$?
cat "$tmp/check.out"
echo "$name: $(grep -c '^ok .*not fenced' "$tmp/check.out") kernels not fenced (named above)"
[ "$rc" -eq 0 ] || { echo "$name: FAIL: jit_check check (fenced) exited $rc"; exit 1; }
echo "$name: OK"
