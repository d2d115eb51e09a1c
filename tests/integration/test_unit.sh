#!/bin/sh
# test_unit.sh BUILD: the systemd unit BUILD/oood.service (generated from
# daemon/oood.service.in) scores an exposure of 3.0 or less in
# `systemd-analyze security --offline=yes` and has no directive systemd
# does not know. Needs no running systemd; skips (77) where systemd-analyze
# is not installed (apt-get install systemd). What oood sends to systemd is
# test_notify.sh's.
set -u
build=${1:-build}
name=test_unit
max=3.0
top=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "$name: SKIP: systemd-analyze is not installed: the unit's exposure is not checked"
	exit 77
fi
fail() { echo "$name: FAIL: $*"; exit 1; }
make -s -C "$top" BUILD="$build" "$build/oood.service" >/dev/null || fail "make $build/oood.service"
dir=$(mktemp -d /tmp/ooo-unit-XXXXXX)
trap 'rm -rf "$dir"' EXIT
cp "$build/oood.service" "$dir/oood.service"

out=$(systemd-analyze security --offline=yes --root=/ "$dir/oood.service" 2>&1)
score=$(echo "$out" | sed -n 's/.*Overall exposure level for oood.service: \([0-9][0-9]*\.[0-9]\).*/\1/p')
[ -n "$score" ] || fail "no exposure level in systemd-analyze's output: $(echo "$out" | tail -5)"
if awk -v s="$score" -v m="$max" 'BEGIN { exit !(s + 0 > m + 0) }'; then
	echo "$out" | grep '✗' | sed 's/^/  | /'
	fail "exposure $score is above $max (the lines above are what is open)"
fi
echo "$name: systemd-analyze security: exposure $score (at most $max): ok"

# unknown or misspelt directives: verify names them as "Unknown key name" (missing binaries and
# man pages are expected here: the unit names installed paths)
bad=$(systemd-analyze verify --man=no "$dir/oood.service" 2>&1 | grep -i 'unknown\|invalid\|failed to parse\|ignoring' || true)
[ -z "$bad" ] || fail "systemd-analyze verify: $bad"
echo "$name: systemd-analyze verify: no unknown or invalid directive: ok"
