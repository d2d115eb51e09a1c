#!/bin/sh
# bench/fencecost.sh OUTFILE [BUILD]: the cost of fencing (docs/jit.md, "Fencing") in kernel time.
# Each kernel with an "ooo-jit:" spec line, in bench/kernels/*.cu (ooo-bench's spin, mlp and gemm
# kernels at their default sizes) and in the JIT corpus tests/jit/kernels/*.cu, is compiled to PTX
# with nvcc, fenced with the rest of its module (jit_fence_all, as a fenced executor loads it) and
# timed against the original: same buffers, same launch, medians of back-to-back launches, the two
# alternating (BUILD/tests/gpu/jit_check fencecost). Written to OUTFILE with the run's context.
# Needs a GPU and nvcc; the driver library is /usr/local/nvidia/lib64/libcuda.so.1 where that
# exists, else libcuda.so.1.
set -eu
out=${1:?usage: bench/fencecost.sh OUTFILE [BUILD]}
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
check=$build/tests/gpu/jit_check
[ -x "$check" ] || { echo "bench/fencecost.sh: $check is not built (make)" >&2; exit 1; }
nvcc=$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")
[ -x "$nvcc" ] || { echo "bench/fencecost.sh: no nvcc" >&2; exit 1; }
libcuda=libcuda.so.1
[ -e /usr/local/nvidia/lib64/libcuda.so.1 ] && libcuda=/usr/local/nvidia/lib64/libcuda.so.1
PATH=$PATH:/usr/local/nvidia/bin
commit=${OOO_COMMIT:-$(sed -n 's/^#define OOO_GIT_REV "\(.*\)"/\1/p' "$build/gen/version.h" 2>/dev/null || true)}
tmp=$(mktemp -d /tmp/ooo-fencecost-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for set in bench:"$here/kernels" corpus:"$here/../tests/jit/kernels"; do
	mkdir -p "$tmp/${set%%:*}"
	# shellcheck disable=SC2016 # expanded by the inner sh
	find "${set#*:}" -maxdepth 1 -name '*.cu' -print0 |
		xargs -0 -r -P "$(nproc 2>/dev/null || echo 4)" -I{} sh -c \
			'"$1" -ptx -arch=sm_90 -O3 -o "$2/$(basename "$3" .cu).ptx" "$3" || touch "$2/nvcc-failed"' \
			_ "$nvcc" "$tmp/${set%%:*}" {}
	if [ -e "$tmp/${set%%:*}/nvcc-failed" ]; then
		echo "bench/fencecost.sh: nvcc failed on a kernel of ${set#*:}" >&2
		exit 1
	fi
done
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: ${commit:-unknown}"
	echo "host: $(uname -n), kernel $(uname -r), $(nproc) cpus"
	if command -v nvidia-smi >/dev/null 2>&1; then
		echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | head -1)"
	fi
	echo "nvcc: $("$nvcc" --version | tail -1)"
	echo "command: bench/fencecost.sh $out $build"
	echo
	echo "== ooo-bench's kernels (bench/kernels), at the sizes ooo-bench launches them"
} >"$out"
rc=0
"$check" "$libcuda" fencecost "$here/kernels" "$tmp/bench" >>"$out" 2>&1 || rc=1
echo >>"$out"
echo "== the JIT corpus (tests/jit/kernels), at its spec lines' launches" >>"$out"
"$check" "$libcuda" fencecost "$here/../tests/jit/kernels" "$tmp/corpus" >>"$out" 2>&1 || rc=1
cat "$out"
exit $rc
