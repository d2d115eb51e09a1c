#!/bin/sh
# test_jit.sh BUILD: the JIT coalescer on a real GPU, without oood.
#  - every kernel of tests/jit/kernels/*.cu (PTX from nvcc, or from
#    BUILD/tests/jit/ptx when that exists): fused launches bit-identical to
#    separate launches, alone, x2, x16 and in heterogeneous sets, and the
#    expect=reject kernels judged unfusible (jit_check check);
#  - a few Triton kernels (tests/gpu/triton_ptx.py; SKIP without python3 or
#    triton): the same cases, or "rejected: REASON", which is no failure;
#  - the fused-vs-separate benchmark (jit_check bench), printed; only its
#    correctness counts.
set -u
build=${1:-build}
name=test_jit
. "$(dirname "$0")/lib.sh"
gpu_require
gpu_require_nvcc
here=$(dirname "$0")
corpus=$here/../jit/kernels
check=$build/tests/gpu/jit_check
tmp=$(mktemp -d /tmp/ooo-jit-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failed=0
bad() {
	echo "$name: FAIL: $*"
	failed=1
}
[ -x "$check" ] || { echo "$name: FAIL: $check is not built"; exit 1; }

# 1. the corpus
ls "$corpus"/*.cu >/dev/null 2>&1 || bad "no kernels in $corpus"
corpus_ptx "$tmp" # in parallel: the whole test has 300 s in tests/gpu/run.sh
mkdir -p "$tmp/dump"
export JIT_CHECK_DUMP="$tmp/dump"
timeout -k 5 200 "$check" "$libcuda" check "$corpus" "$ptxdir" >"$tmp/check.out" 2>&1
rc=$?
cat "$tmp/check.out"
[ "$rc" -eq 0 ] || bad "jit_check check exited $rc"

# 2. Triton's PTX
if ! command -v python3 >/dev/null 2>&1; then
	echo "$name: triton: SKIP: no python3"
else
	timeout -k 5 120 python3 "$here/triton_ptx.py" "$tmp/triton" >"$tmp/triton.out" 2>&1
	rc=$?
	sed 's/^/  | /' "$tmp/triton.out"
	if [ "$rc" -eq 77 ]; then
		echo "$name: triton: SKIP: $(grep SKIP "$tmp/triton.out" | head -1)"
	else
		[ "$rc" -eq 0 ] || bad "triton_ptx.py exited $rc"
		for spec in "$tmp/triton"/*.spec; do
			[ -e "$spec" ] || continue
			ptx=${spec%.spec}.ptx
			kernel=$(sed -n 's/.*kernel=\([^ ]*\).*/\1/p' "$spec" | head -1)
			out=$(timeout -k 5 60 "$check" "$libcuda" triton "$ptx" "$kernel" "$spec" 2>&1)
			rc=$?
			echo "$out" | sed "s/^/triton $kernel: /"
			[ "$rc" -eq 0 ] || bad "triton kernel $kernel"
		done
	fi
fi

# 3. the benchmark
if "$nvcc" -ptx -arch=sm_90 -O3 -o "$tmp/jit_bench.ptx" "$here/kernels/jit_bench.cu"; then
	timeout -k 5 120 "$check" "$libcuda" bench "$tmp/jit_bench.ptx" jit_spin "$here/kernels/jit_bench.cu"
	rc=$?
	[ "$rc" -eq 0 ] || bad "jit_check bench exited $rc"
else
	bad "nvcc -ptx jit_bench.cu"
fi

rm -rf "$build/tests/gpu/jit-failed"
if [ -n "$(find "$tmp/dump" -name '*.ptx')" ]; then
	mkdir -p "$build/tests/gpu/jit-failed"
	cp "$tmp/dump"/*.ptx "$build/tests/gpu/jit-failed/"
	echo "$name: fused PTX of the failed cases in $build/tests/gpu/jit-failed/"
fi
[ "$failed" -eq 0 ] || exit 1
echo "test_jit: OK"
