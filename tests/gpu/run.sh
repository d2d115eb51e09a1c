#!/bin/sh
# tests/gpu/run.sh BUILD: the tests that need a GPU (run on the GPU machine;
# each skips with exit 77 and a reason elsewhere). Ends with one line
# "N passed, N failed, N skipped".
set -u
build=${1:-build}
passed=0 failed=0 skipped=0
for t in "$(dirname "$0")"/test_*.sh; do
	echo "== $(basename "$t")"
	timeout -k 5 300 sh "$t" "$build"
	case $? in
	0) passed=$((passed + 1)) ;;
	77) skipped=$((skipped + 1)) ;;
	*) failed=$((failed + 1)) ;;
	esac
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
