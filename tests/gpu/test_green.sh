#!/bin/sh
# test_green.sh BUILD: SM partitions with green contexts (daemon/exec/partition.c)
# on a real GPU, without oood: BUILD/tests/gpu/green_check runs the checks
# (partition sizes, kernels of a primary-context module confined to each
# partition's SMs, the cuLibrary path, primary-context and VMM memory, events
# across green and primary streams, occupancy, part_resize) and prints one
# "ok:"/"FAIL:" line each and "N passed, N failed".
set -u
build=${1:-build}
name=test_green
. "$(dirname "$0")/lib.sh"
gpu_require
check=$build/tests/gpu/green_check
[ -x "$check" ] || { echo "$name: FAIL: $check is not built"; exit 1; }
out=$(mktemp /tmp/ooo-green-XXXXXX)
trap 'rm -f "$out"' EXIT
timeout -k 5 120 "$check" "$libcuda" >"$out" 2>&1
rc=$?
if [ "$rc" -eq 77 ]; then
	echo "$name: SKIP: $(sed -n 's/^SKIP: //p' "$out" | head -1)"
	exit 77
fi
sed "s/^/$name: /" "$out"
[ "$rc" -eq 0 ] || { echo "$name: FAIL: green_check exited $rc"; exit 1; }
grep -q '^[0-9]* passed, 0 failed$' "$out" || { echo "$name: FAIL: no clean summary line"; exit 1; }
echo "$name: OK"
