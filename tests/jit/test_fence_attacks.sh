#!/bin/sh
# test_fence_attacks.sh [BUILD]: PTX built to slip past the fence's checker
# (tests/jit/fence-attacks/*.ptx: a store outside the window hidden after a
# .loc, wmma/ldmatrix/mbarrier accesses, a call whose return list overwrites
# the window, the window in the wrong parameters, shadowed or overwritten
# window registers, a guard's masking skipped under a predicate, an access
# through the unconfined address, ...): `ooo-jit fence-check` must refuse
# every one (exit 1) for the reason its "// refused:" line names, and
# `ooo-jit fence` must refuse to fence the *.ptx.in inputs (kernels it must
# not rewrite). No CUDA needed.
set -u
build=${1:-build}
dir=$(cd "$(dirname "$0")" && pwd)/fence-attacks
jit=$build/ooo-jit
pass=0 fail=0
for f in "$dir"/*.ptx; do
	out=$("$jit" fence-check "$f" 2>&1)
	rc=$?
	# refused for the reason the file's "// refused: TEXT" line names, not for another
	want=$(sed -n 's|^// refused: ||p' "$f" | head -1)
	if [ $rc -eq 1 ] && { [ -z "$want" ] || printf '%s' "$out" | grep -qF -- "$want"; }; then
		pass=$((pass + 1))
	elif [ $rc -eq 1 ]; then
		fail=$((fail + 1))
		echo "test_fence_attacks: FAIL: $(basename "$f") refused, but not for '$want': $out"
	else
		fail=$((fail + 1))
		echo "test_fence_attacks: FAIL: $(basename "$f") accepted (exit $rc): $out"
	fi
done
for f in "$dir"/*.ptx.in; do
	k=$(sed -n 's/^\.visible \.entry \([A-Za-z0-9_]*\)(.*/\1/p' "$f" | head -1)
	out=$("$jit" fence "$f" "$k" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -eq 1 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "test_fence_attacks: FAIL: $(basename "$f"): ooo-jit fence $k exited $rc: $out"
	fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
