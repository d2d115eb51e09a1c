#!/bin/sh
# bench/ab.sh OUTFILE ROUNDS A_OOOD B_OOOD WORKLOAD [ooo-bench args]: two oood
# binaries side by side in one run, alternating: ROUNDS rounds of
# "ooo-bench WORKLOAD --mode ooo --oood A_OOOD ARGS" then the same with
# B_OOOD, so that drift of the machine (another VM host, its load, the GPU's
# clocks) falls on both. Appends every table to OUTFILE, each headed by
# "== round R A|B PATH". The context (date, host, kernel, GPU and driver,
# the command) goes first. BUILD (default build) holds ooo-bench.
# Example: bench/ab.sh out.txt 2 base/oood build/oood spin --tenants 8,32 --slo-us 10000
set -eu
out=${1:?usage: bench/ab.sh OUTFILE ROUNDS A_OOOD B_OOOD WORKLOAD [ooo-bench args]}
rounds=${2:?rounds}
a=${3:?A oood}
b=${4:?B oood}
wl=${5:?workload}
shift 5
build=${BUILD:-build}
for x in "$a" "$b"; do
	[ -x "$x" ] || { echo "ab.sh: $x is not an executable" >&2; exit 2; }
done
case $rounds in '' | *[!0-9]*) echo "ab.sh: ROUNDS must be a number" >&2; exit 2 ;; esac
libcuda=libcuda.so.1
[ -e /usr/local/nvidia/lib64/libcuda.so.1 ] && libcuda=/usr/local/nvidia/lib64/libcuda.so.1
PATH=$PATH:/usr/local/nvidia/bin
export PATH
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "host: $(uname -n), kernel $(uname -r), $(nproc) cpus"
	if command -v nvidia-smi >/dev/null 2>&1; then
		echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | head -1)"
	fi
	echo "A: $a"
	echo "B: $b"
	echo "command, each round, X = A then B: $build/ooo-bench $wl --mode ooo --oood X --libcuda $libcuda -q $*"
} >>"$out"
rc=0
r=1
while [ "$r" -le "$rounds" ]; do
	for side in A B; do
		x=$a
		[ $side = B ] && x=$b
		echo "== round $r $side $x" >>"$out"
		"$build/ooo-bench" "$wl" --mode ooo --oood "$x" --libcuda "$libcuda" -q "$@" >>"$out" 2>&1 || rc=1
	done
	r=$((r + 1))
done
exit $rc
