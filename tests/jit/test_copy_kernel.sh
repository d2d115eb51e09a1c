#!/bin/sh
# test_copy_kernel.sh [BUILD]: the executor's copy kernel (daemon/exec/copy.ptx,
# embedded in oood; "copies as launches" in daemon/exec/coalesce.h) parses, is
# fusible with the 24-byte parameter block the executor writes (dst, src,
# bytes), fuses with itself at the grids the executor launches (1 and 16
# blocks), and the fused PTX passes ptxas; where nvcc exists, copy.ptx is what
# nvcc makes of copy.cu (so the committed PTX is not stale). No GPU needed.
set -u
build=${1:-build}
src=$(cd "$(dirname "$0")/../../daemon/exec" && pwd)
jit=$build/ooo-jit
cuda=${CUDA_HOME:-/usr/local/cuda}
tmp=$(mktemp -d /tmp/ooo-copyk-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "test_copy_kernel: ok: $*"; }
bad() { fail=$((fail + 1)); echo "test_copy_kernel: FAIL: $*"; }

out=$("$jit" inspect "$src/copy.ptx" 2>&1)
if printf '%s\n' "$out" | grep -q '^kernel oood_copy: fusible' &&
	printf '%s\n' "$out" | grep -q 'params 3 (24 bytes)'; then
	ok "oood_copy is fusible, 3 parameters of 24 bytes"
else
	bad "ooo-jit inspect: $out"
fi
if "$jit" fuse -o "$tmp/fused.ptx" "$src/copy.ptx:oood_copy*8@1" "$src/copy.ptx:oood_copy*8@16" >"$tmp/layout" 2>&1; then
	ok "fuses 16 members (grids 1 and 16)"
	ptxas=$cuda/bin/ptxas
	[ -x "$ptxas" ] || ptxas=$(command -v ptxas || true)
	if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
		if "$ptxas" -arch=sm_90 "$tmp/fused.ptx" -o /dev/null 2>"$tmp/ptxas.log" &&
			"$ptxas" -arch=sm_90 "$src/copy.ptx" -o /dev/null 2>>"$tmp/ptxas.log"; then
			ok "ptxas accepts copy.ptx and its fused form"
		else
			bad "ptxas: $(head -5 "$tmp/ptxas.log")"
		fi
	else
		echo "test_copy_kernel: no ptxas: the ptxas check skipped"
	fi
else
	bad "ooo-jit fuse: $(cat "$tmp/layout")"
fi
nvcc=$cuda/bin/nvcc
want=$(sed -n 's|^// Cuda compilation tools, ||p' "$src/copy.ptx")
have=$([ -x "$nvcc" ] && "$nvcc" --version | sed -n 's|^Cuda compilation tools, ||p')
if [ -z "$have" ]; then
	echo "test_copy_kernel: no nvcc: the staleness check of copy.ptx skipped"
elif [ "$have" != "$want" ]; then
	echo "test_copy_kernel: nvcc is '$have', copy.ptx was made by '$want': the staleness check skipped"
elif "$nvcc" -ptx -arch=compute_75 -O3 -o "$tmp/copy.ptx" "$src/copy.cu" 2>"$tmp/nvcc.log"; then
	grep -v '^//' "$tmp/copy.ptx" >"$tmp/new"
	grep -v '^//' "$src/copy.ptx" >"$tmp/old"
	if diff "$tmp/new" "$tmp/old" >"$tmp/diff" 2>&1; then
		ok "copy.ptx is nvcc's output for copy.cu"
	else
		bad "copy.ptx differs from nvcc -ptx -arch=compute_75 -O3 copy.cu: $(head -10 "$tmp/diff")"
	fi
else
	bad "nvcc copy.cu: $(head -5 "$tmp/nvcc.log")"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
