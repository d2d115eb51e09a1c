#!/bin/sh
# test_hostile.sh BUILD: a tenant that turns what oood handed it against oood, its executor and the
# other tenants, on the stand-in driver (tests/fakecuda). The doorbells: a tenant makes every doorbell
# descriptor it holds blocking and full (tests/gpu/hostile_check.c bells), then another tenant of the
# same executor runs round trips while the executor sleeps and wakes between them, and the abuser's
# own kernel faults so that oood rings it while its executor is replaced; oood answers `oooctl status`
# at once throughout, the other tenant's commands complete, nothing waits for the 30 s watchdog.
# Executor identity (as root): every executor runs as a uid of its own from executor_uids, so no
# tenant (uid nobody included) and no other domain's executor can signal it, and a tenant with an
# executor's uid is refused.
# OOO_TEST_LIBCUDA names another driver library (tests/gpu/test_hostile.sh: the GPU machine's).
set -u
build=${1:-build}
name=${name:-test_hostile}
. "$(dirname "$0")/../gpu/lib.sh"
libcuda=${OOO_TEST_LIBCUDA:-$(cd "$build" 2>/dev/null && pwd)/tests/fakecuda/libcuda.so.1}
check=$(cd "$build" 2>/dev/null && pwd)/tests/gpu/hostile_check
[ -e "$libcuda" ] || [ -n "${OOO_TEST_LIBCUDA:-}" ] || { echo "$name: FAIL: $libcuda is not built"; exit 1; }
[ -x "$check" ] || { echo "$name: FAIL: $check is not built"; exit 1; }
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

# fault strikes: a tenant (uid) whose kernels fault hang_strikes times within hang_window_s may not attach
# a data path for a while, as for hangs (its own domain's executor is restarted for every fault)
gpu_start '' 'hang_strikes = 2\nhang_window_s = 600\n'
for i in 1 2; do
	r0=$(field restarts)
	out=$(timeout 60 "$check" "$sock" fault 2>&1) || fail "fault $i: $out"
	echo "$out" | grep -q '^fault: -10' || fail "fault $i did not fault: $out"
	wait_restarted "$r0" || fail "the executor was not replaced after fault $i"
done
grep -q "uid $(id -u): fault 1 within hang_window_s 600 s (hang_strikes 2)" "$rundir/oood.log" ||
	fail "the first fault was not counted against uid $(id -u): $(grep -i 'fault' "$rundir/oood.log" | tail -5)"
grep -q "uid $(id -u): 2 hangs or faults within hang_window_s 600 s (hang_strikes 2), the last a fault" "$rundir/oood.log" ||
	fail "the second fault did not bar uid $(id -u): $(grep -i 'fault' "$rundir/oood.log" | tail -5)"
out=$(timeout 60 "$check" "$sock" rounds 1 5000 2>&1) && fail "a barred tenant attached: $out"
echo "$out" | grep -q "faulted" || fail "the barred tenant's attach did not say why: $out"
out=$($ctl pardon "$(id -u)" 2>&1) || fail "oooctl pardon: $out"
out=$(timeout 60 "$check" "$sock" rounds 3 5000 2>&1) || fail "the pardoned tenant: $out"
ok "fault strikes: two faults of uid $(id -u) (hang_strikes 2) bar it from data paths until oooctl pardon"
gpu_stop
ok "oood stopped cleanly"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	echo "$name: executor identity: SKIP: needs root and setpriv (tenants of other uids)"
	echo "$passed passed, 0 failed"
	exit 0
fi
as() { u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }
# exec_pids: the pids of every executor (the spare and each domain's)
exec_pids() { $ctl --json devices 2>/dev/null | sed -n 's/^ *"executor_pid": \([1-9][0-9]*\),*$/\1/p'; }
proc_uid() { awk '/^Uid:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
gpu_start 'max_sessions = 64\n' 'executor_uids = 60928-61183\n'
chmod 755 "$rundir"
# two domains (uids 4211 and 4212) beside the spare: three executors
for u in 4211 4212; do
	out=$(as $u "$check" "$sock" rounds 3 5000 2>&1) || fail "a tenant of uid $u: $out"
done
pids=$(exec_pids)
[ "$(echo "$pids" | wc -w)" -ge 3 ] || fail "not three executors: $($ctl devices 2>&1)"
uids=
for p in $pids; do
	u=$(proc_uid "$p")
	[ -n "$u" ] && [ "$u" -ge 60928 ] && [ "$u" -le 61183 ] || fail "executor $p runs as uid '$u', not one of executor_uids"
	uids="$uids $u"
done
[ "$(echo $uids | tr ' ' '\n' | sort -u | wc -l)" -eq "$(echo "$pids" | wc -w)" ] ||
	fail "executors share a uid: pids $(echo $pids) uids$uids"
ok "$(echo "$pids" | wc -w) executors, each its own uid of executor_uids:$uids"
# no tenant can signal an executor: uid nobody (admitted by the class), another domain's executor's uid
set -- $pids
for p in $pids; do
	for u in 65534 4211 $(proc_uid "$1"); do
		[ "$u" = "$(proc_uid "$p")" ] && continue
		if as "$u" kill -STOP "$p" 2>/dev/null; then
			kill -CONT "$p"
			fail "uid $u stopped executor $p (uid $(proc_uid "$p"))"
		fi
		as "$u" kill -0 "$p" 2>/dev/null && fail "uid $u may signal executor $p (uid $(proc_uid "$p"))"
	done
done
ok "neither uid nobody, nor a tenant, nor another executor's uid may signal an executor"
# a tenant with an executor's uid is refused, with the reason
out=$(as 61000 "$check" "$sock" rounds 1 5000 2>&1) && fail "a tenant of uid 61000 (executor_uids) was admitted: $out"
echo "$out" | grep -q 'reserved for oood' || fail "a tenant of an executor's uid: no reason given: $out"
ok "a tenant of uid 61000, one of executor_uids, is refused ($(echo "$out" | head -1))"
gpu_stop
ok "oood stopped cleanly"

echo "$passed passed, 0 failed"
