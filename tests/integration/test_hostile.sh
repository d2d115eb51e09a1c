#!/bin/sh
# test_hostile.sh BUILD: a tenant that turns what oood handed it against oood, its executor and the
# other tenants, on the stand-in driver (tests/fakecuda). The doorbells: a tenant makes every doorbell
# descriptor it holds blocking and full (tests/gpu/hostile_check.c bells), then another tenant of the
# same executor runs round trips while the executor sleeps and wakes between them, and the abuser's
# own kernel faults so that oood rings it while its executor is replaced; oood answers `oooctl status`
# at once throughout, the other tenant's commands complete, nothing waits for the 30 s watchdog.
set -u
build=${1:-build}
name=test_hostile
. "$(dirname "$0")/../gpu/lib.sh"
fake=$(cd "$build" 2>/dev/null && pwd)/tests/fakecuda/libcuda.so.1
check=$(cd "$build" 2>/dev/null && pwd)/tests/gpu/hostile_check
[ -f "$fake" ] && [ -x "$check" ] || { echo "$name: FAIL: $fake or $check is not built"; exit 1; }
libcuda=$fake
passed=0
ok() {
	echo "$name: $*: ok"
	passed=$((passed + 1))
}
# status_ms: how long `oooctl status` took to answer, in ms (9999: it did not, within 5 s)
status_ms() {
	t0=$(date +%s%N)
	timeout 5 $ctl status >/dev/null 2>&1 || { echo 9999; return; }
	echo $((($(date +%s%N) - t0) / 1000000))
}
# status_watch SECONDS: the slowest `oooctl status` over SECONDS of asking every 50 ms
status_watch() {
	worst=0
	end=$(($(date +%s) + $1))
	while [ "$(date +%s)" -lt "$end" ]; do
		t=$(status_ms)
		[ "$t" -gt "$worst" ] && worst=$t
		sleep 0.05
	done
	echo "$worst"
}
# A bound far above what an answer takes (a few ms), far below a blocked daemon (never): it holds
# on a loaded 2-core machine under the sanitizers too
STATUS_MAX_MS=1000

# wait_spin_us = 0: tenants sleep on their completion doorbell at once, so the executor rings them
gpu_start 'wait_spin_us = 0\n'

fifo="$rundir/hostile.in"
mkfifo "$fifo"
"$check" "$sock" bells <"$fifo" >"$rundir/hostile.out" 2>&1 &
hostile=$!
exec 9>"$fifo"
for _ in $(seq 100); do grep -q '^ready' "$rundir/hostile.out" && break; sleep 0.1; done
grep -q '^ready' "$rundir/hostile.out" || fail "the abusing tenant did not start: $(cat "$rundir/hostile.out")"
ok "a tenant abused its $(sed -n 's/^bells //p' "$rundir/hostile.out") doorbell descriptors (blocking, full)"

# the executor sleeps between the victim's round trips (nothing spins) and drains every doorbell when
# it wakes: the abuser's must not hold it
out=$(timeout 60 "$check" "$sock" rounds 200 5000 2>&1) || fail "a neighbour's round trips: $out"
ok "a neighbour's 200 round trips on the same executor ($out)"
t=$(status_ms)
[ "$t" -le $STATUS_MAX_MS ] || fail "oooctl status took $t ms with the abuser in place"

# the abuser syncs: its executor rings its (full, blocking) doorbell when it posts the completion
echo sync >&9
for _ in $(seq 100); do grep -q '^sync:' "$rundir/hostile.out" && break; sleep 0.1; done
grep -q '^sync: 0' "$rundir/hostile.out" || fail "the abuser's own sync: $(cat "$rundir/hostile.out")"
out=$(timeout 60 "$check" "$sock" rounds 50 5000 2>&1) || fail "round trips after the abuser's sync: $out"
ok "the abuser's own sync completed and the executor serves on ($out)"

# its kernel faults: the executor is replaced and oood rings the abuser's doorbell (the epoch changed)
r0=$(field restarts)
echo fault >&9
worst=$(status_watch 3)
[ "$worst" -le $STATUS_MAX_MS ] || fail "oooctl status took $worst ms while the abuser's executor was replaced"
for _ in $(seq 100); do grep -q '^fault:' "$rundir/hostile.out" && break; sleep 0.1; done
grep -q '^fault: -10' "$rundir/hostile.out" || fail "the abuser's fault: $(cat "$rundir/hostile.out")"
wait_restarted "$r0" || fail "the faulting executor was not replaced: $(field state), $(field restarts) restarts"
ok "the abuser's fault ($(sed -n 's/^fault: //p' "$rundir/hostile.out")): its executor replaced, the slowest oooctl status $worst ms"
out=$(timeout 60 "$check" "$sock" rounds 50 5000 2>&1) || fail "round trips on the new executor: $out"
ok "a neighbour's round trips on the new executor ($out)"
exec 9>&-
wait $hostile || fail "the abusing tenant: $(cat "$rundir/hostile.out")"
gpu_stop
ok "oood stopped cleanly"

echo "$passed passed, 0 failed"
