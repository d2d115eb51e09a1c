#!/bin/sh
# bench/gpu.sh OUTDIR [WORKLOADS] [ooo-bench args]: the GPU side-by-side
# benchmarks (direct time-slicing, MPS, ooo) in one run, written as
# OUTDIR/NAME.{json,csv,png,gp,txt}, NAME being the workloads joined by '-'
# (default spin,mlp,gemm) and the .txt the table with the run's context.
# The private oood is build/oood (BUILD to change); the driver library is
# /usr/local/nvidia/lib64/libcuda.so.1 where that exists (the GPU machine),
# else libcuda.so.1. OOO_COMMIT names the commit being measured (default:
# the one the build records in $BUILD/gen/version.h).
# Default args: --mode direct,mps,ooo --tenants 1,8,32 --duration 5 --warmup 1
set -eu
out=${1:?usage: bench/gpu.sh OUTDIR [WORKLOADS] [ooo-bench args]}
shift
build=${BUILD:-build}
wl=spin,mlp,gemm
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	wl=$1
	shift
fi
if [ $# -eq 0 ]; then
	set -- --mode direct,mps,ooo --tenants 1,8,32 --duration 5 --warmup 1
fi
libcuda=libcuda.so.1
[ -e /usr/local/nvidia/lib64/libcuda.so.1 ] && libcuda=/usr/local/nvidia/lib64/libcuda.so.1
PATH=$PATH:/usr/local/nvidia/bin
export PATH
name=$(echo "$wl" | tr ',' '-')
if [ -z "${OOO_COMMIT:-}" ] && [ -f "$build/gen/version.h" ]; then
	OOO_COMMIT=$(sed -n 's/^#define OOO_GIT_REV "\(.*\)"/\1/p' "$build/gen/version.h")
	export OOO_COMMIT
fi
mkdir -p "$out"
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: ${OOO_COMMIT:-unknown}"
	echo "host: $(uname -n), kernel $(uname -r), $(nproc) cpus"
	echo "cpu: $(sed -n 's/^model name\t*: //p' /proc/cpuinfo | head -1)"
	if command -v nvidia-smi >/dev/null 2>&1; then
		echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | head -1)"
	fi
	echo "command: $build/ooo-bench $wl --libcuda $libcuda $* --json $out/$name.json --csv $out/$name.csv --plot $out/$name.png"
	echo
} >"$out/$name.txt"
rc=0
"$build/ooo-bench" "$wl" --libcuda "$libcuda" "$@" --json "$out/$name.json" --csv "$out/$name.csv" \
	--plot "$out/$name.png" >>"$out/$name.txt" || rc=$?
cat "$out/$name.txt"
exit $rc
