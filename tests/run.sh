#!/bin/sh
# run.sh BUILD: run every test program under BUILD/tests, then print one
# line "N passed, N failed, N skipped" summing the cmocka test cases.
# A program exiting 77 is skipped (it prints why); one that dies without a
# cmocka summary counts as one failure.
set -u
build=${1:-build}
export OOO_BUILD="$build"
passed=0 failed=0 skipped=0
bad= # the programs that failed, named again at the end (CI shows only the tail)
tmp=$(mktemp)
why=$(mktemp) # a few telling lines of each failed program, shown again at the end
trap 'rm -f "$tmp" "$why"' EXIT
# note NAME: remember that NAME failed and the first lines of its output that say so
note() {
	bad="$bad $1"
	grep -iE 'fail|error|abort|not ok|sanitizer|timed out|assert' "$tmp" | grep -vE '^[0-9]+ passed, 0 failed|^\[  PASSED|^\[       OK|^ok|: ok$' |
		head -4 | sed "s|^|  $1: |" >>"$why"
}
for t in "$build"/tests/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	echo "== $name"
	timeout -k 5 300 "$t" >"$tmp" 2>&1
	rc=$?
	cat "$tmp"
	if [ $rc -eq 77 ]; then
		skipped=$((skipped + 1))
		continue
	fi
	# a program may run several groups: add up every summary line
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$tmp" | awk '{s+=$1} END {if (NR) print s}')
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$tmp" | awk '{s+=$1} END {if (NR) print s}')
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$tmp" | awk '{s+=$1} END {if (NR) print s}')
	passed=$((passed + ${p:-0}))
	skipped=$((skipped + ${s:-0}))
	before=$failed
	if [ -z "$p" ] && [ -z "$f" ]; then
		echo "$name: exited $rc without a test summary"
		failed=$((failed + 1))
	elif [ $rc -ne 0 ] && [ -z "$f" ]; then
		echo "$name: exited $rc"
		failed=$((failed + 1))
	else
		failed=$((failed + ${f:-0}))
	fi
	[ "$failed" -ne "$before" ] && note "$name"
done
# shell tests: exit 0 passes, 77 skips, anything else fails; a script that
# ends with its own "N passed, N failed" line counts those checks instead
for t in tests/unit/test_*.sh tests/integration/test_*.sh tests/jit/test_*.sh; do
	[ -f "$t" ] || continue
	echo "== $(basename "$t")"
	timeout -k 5 300 sh "$t" "$build" >"$tmp" 2>&1
	rc=$?
	cat "$tmp"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp" | tail -1)
	before=$failed
	if [ $rc -eq 77 ]; then
		skipped=$((skipped + 1))
	elif [ -n "$line" ]; then
		p=${line%% passed*}
		f=${line#*passed, }
		f=${f%% failed*}
		passed=$((passed + p))
		failed=$((failed + f))
		[ $rc -ne 0 ] && [ "$f" -eq 0 ] && failed=$((failed + 1))
	elif [ $rc -eq 0 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
	[ "$failed" -ne "$before" ] && note "$(basename "$t") (exit $rc)"
done
if [ -n "$bad" ]; then
	echo "failed:$bad"
	cat "$why"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
