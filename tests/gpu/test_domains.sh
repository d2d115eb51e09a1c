#!/bin/sh
# test_domains.sh BUILD: trust domains on a real GPU. A victim tenant (uid 4201) fills a 1 MiB buffer;
# a hostile tenant of another uid (4202: another trust domain, so another executor, CUDA context and
# address space) runs a kernel that writes 256 words at the victim's device address, through
# st.global, a generic st and atom.global.exch. Each attempt must fault in the attacker's own
# executor (OOO_EFAULT, or OOO_EDEVRESET when oood saw the executor die first), while the victim's
# buffer keeps its contents, its executor keeps running and its session sees no reset. The control:
# the same kernel from a tenant of the victim's own uid (one domain, one address space) does change
# the buffer, and so does one of another uid whose class shares a domain (domain = shared): the
# domain is the boundary. Needs root (tenants of other uids through setpriv).
set -u
build=${1:-build}
name=test_domains
. "$(dirname "$0")/lib.sh"
gpu_require
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	echo "$name: SKIP: needs root and setpriv (tenants of several uids)"
	exit 77
fi
A=4201
B=4202
as() { u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }
executors() { $ctl devices | sed 1d; }
domain_pid() {
	$ctl --json devices 2>/dev/null | tr -d ' \n' | sed 's/},{/}\n{/g' | grep "\"domain\":\"$1\"" |
		sed -n 's/.*"executor_pid":\([0-9]*\).*/\1/p'
}
victim_start() {
	fifo="$rundir/victim.in"
	rm -f "$fifo"
	mkfifo "$fifo"
	chmod 666 "$fifo"
	as $A "$check" "$sock" victim <"$fifo" >"$rundir/victim.out" 2>&1 &
	victim=$!
	exec 9>"$fifo"
	for _ in $(seq 200); do grep -q '^ready' "$rundir/victim.out" && break; sleep 0.1; done
	grep -q '^ready' "$rundir/victim.out" || fail "victim: $(cat "$rundir/victim.out")"
	vaddr=$(sed -n 's/^ready //p' "$rundir/victim.out")
}
victim_end() {
	echo "$1" >&9
	exec 9>&-
	wait $victim || fail "victim (expected $1): $(cat "$rundir/victim.out")"
}

gpu_start 'max_sessions = 64\n'
# the tenants of other uids run the helper from the run directory (the build may not be theirs to read)
cp "$build/tests/gpu/domain_check" "$rundir/domain_check"
chmod 755 "$rundir/domain_check"
check="$rundir/domain_check"
for how in global generic atom; do
	victim_start
	pa=$(domain_pid uid:$A)
	out=$(timeout 120 setpriv --reuid=$B --regid=$B --clear-groups "$check" "$sock" poke "$vaddr" $how 2>&1) ||
		fail "poke ($how): $out"
	case $out in
	*"poke: -1008 "* | *"poke: -1009 "* | *"poke: -10"[0-9][0-9]" "*) ;;
	*) fail "a write ($how) to another domain's address did not fault: $out" ;;
	esac
	victim_end intact
	grep -q '^resets 0$' "$rundir/victim.out" || fail "the victim saw a reset ($how): $(cat "$rundir/victim.out")"
	[ "$(domain_pid uid:$A)" = "$pa" ] || fail "the victim's executor changed ($how): $(executors)"
	echo "$name: uid $B writing uid $A's buffer at $vaddr through $how: $(echo "$out" | head -1); victim intact, no reset"
done
executors
# the control: in the victim's own domain the same kernel reaches the buffer
victim_start
out=$(timeout 120 setpriv --reuid=$A --regid=$A --clear-groups "$check" "$sock" poke "$vaddr" global 2>&1) || fail "poke in the same domain: $out"
echo "$out" | grep -q '^poke: 0 ' || fail "poke in the same domain: $out"
victim_end changed
echo "$name: the same kernel from the victim's own domain: $(echo "$out" | head -1), $(grep '^changed' "$rundir/victim.out") words changed (one address space)"
gpu_stop

gpu_start 'max_sessions = 64\ndomain = shared\n'
cp "$build/tests/gpu/domain_check" "$rundir/domain_check"
chmod 755 "$rundir/domain_check"
check="$rundir/domain_check"
victim_start
out=$(timeout 120 setpriv --reuid=$B --regid=$B --clear-groups "$check" "$sock" poke "$vaddr" generic 2>&1) || fail "poke in a shared domain: $out"
echo "$out" | grep -q '^poke: 0 ' || fail "poke in a shared domain: $out"
victim_end changed
echo "$name: domain = shared: uid $B's kernel reaches uid $A's buffer ($(grep '^changed' "$rundir/victim.out") words): one domain, one address space"
gpu_stop

# fence = yes: both uids in the GPU's one fenced executor (one address space), each session in its
# own 64 GiB window, every kernel fenced. A fenced kernel writes its own buffer; the same hostile
# writes to the victim's buffer trap (the trap ends the fenced executor's context: the victim sees a
# reset, and its buffer comes back intact); fenced launches of 16 sessions, fused across them, give
# every session its own result.
gpu_start 'max_sessions = 64\nfence = yes\n'
cp "$build/tests/gpu/domain_check" "$rundir/domain_check"
chmod 755 "$rundir/domain_check"
check="$rundir/domain_check"
out=$(timeout 120 setpriv --reuid=$A --regid=$A --clear-groups "$check" "$sock" fenced 2>&1) || fail "fenced: $out"
echo "$out" | sed "s/^/$name: fenced: /"
echo "$out" | grep -q '^own: 0$' && echo "$out" | grep -q '^own-changed 256$' || fail "a fenced kernel on its own buffer: $out"
echo "$out" | grep -q '^host: -' && echo "$out" | grep -q '^cubin: -' && echo "$out" | grep -q '^unfenceable: -' ||
	fail "the refusals of a fenced session: $out"
for how in global generic atom; do
	victim_start
	out=$(timeout 120 setpriv --reuid=$B --regid=$B --clear-groups "$check" "$sock" poke "$vaddr" $how 2>&1) ||
		fail "fenced poke ($how): $out"
	case $out in
	*"poke: -"[0-9]*) ;;
	*) fail "a fenced write ($how) to another session's window did not trap: $out" ;;
	esac
	victim_end intact
	echo "$name: fenced: uid $B writing uid $A's buffer at $vaddr through $how: $(echo "$out" | head -1); victim intact ($(grep '^resets' "$rundir/victim.out"))"
done
# each fault came with only uid B's work on the GPU (the victim waits idle): a strike against B each
# time (EXEC_MSG_FAULT), so the third bars it (hang_strikes 3); pardoned for the launches below
grep -q "only uid $B's work was on the GPU" "$rundir/oood.log" ||
	fail "a fenced fault with only uid $B's work on the GPU was not counted against it"
grep -q "uid $B: 3 hangs or faults within" "$rundir/oood.log" || fail "uid $B was not barred after its third fault"
out=$($ctl pardon $B 2>&1) || fail "oooctl pardon $B: $out"
echo "$name: fenced: uid $B's three faults counted against it, barred; $out"
c0=$(counter fused_launches)
out=$(timeout 200 setpriv --reuid=$B --regid=$B --clear-groups "$check" "$sock" many 16 300 2>&1) ||
	fail "fenced launches of 16 sessions: $out"
for _ in $(seq 30); do [ $(($(counter fused_launches) - c0)) -gt 0 ] && break; sleep 0.2; done
d=$(($(counter fused_launches) - c0))
[ "$d" -gt 0 ] || fail "no fenced launch was fused: $($ctl sched 2>&1 | head -30)"
echo "$name: fenced: $out; $d launches ran in fused bundles"
executors
gpu_stop
echo "$name: OK"
