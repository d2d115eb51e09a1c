#!/bin/sh
# test_domains.sh BUILD: trust domains on the stand-in driver (tests/fakecuda: kernels do not run,
# a launch with a 64-bit parameter below 4096 faults). Tenants of two uids get two executors (two
# CUDA contexts, two address spaces) beside the GPU's spare; a tenant whose kernel faults takes down
# only its own domain's executor: a tenant of the other domain keeps its executor, its buffer and
# its session, and sees no reset. Tenants of one uid share an executor; a class's `domain = NAME`
# puts several uids in one; max_domains refuses one domain too many (OOO_ELIMIT, naming the key);
# an idle domain's executor is stopped after domain_idle_ms; a request of a domain whose executor
# is starting waits for it. Needs root (tenants of other uids through setpriv).
set -u
build=${1:-build}
name=test_domains
. "$(dirname "$0")/../gpu/lib.sh"
if [ "$(id -u)" != 0 ]; then
	echo "$name: SKIP: needs root (tenants of several uids)"
	exit 77
fi
command -v setpriv >/dev/null || { echo "$name: SKIP: setpriv (util-linux) not found"; exit 77; }
fake=$(cd "$build" 2>/dev/null && pwd)/tests/fakecuda/libcuda.so.1
check=$(cd "$build" 2>/dev/null && pwd)/tests/gpu/domain_check
[ -f "$fake" ] && [ -x "$check" ] || { echo "$name: FAIL: $fake or $check is not built"; exit 1; }
libcuda=$fake
passed=0
ok() {
	echo "$name: $*: ok"
	passed=$((passed + 1))
}
A=4201
B=4202
C=4203
as() { u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }
# executors: one line per executor, "DOMAIN PID STATE RESTARTS" (a spare's domain is "-")
executors() {
	$ctl --json devices 2>/dev/null | tr -d ' \n' | sed 's/},{/}\n{/g' |
		sed -n 's/.*"domain":"\([^"]*\)".*"state":"\([a-z]*\)".*"executor_pid":\([0-9]*\),"restarts":\([0-9]*\).*/\1 \3 \2 \4/p' |
		sed 's/^ /- /'
}
epid() { executors | awk -v d="$1" '$1 == d { print $2 }'; }
erestarts() { executors | awk -v d="$1" '$1 == d { print $4 }'; }
wait_domain() { # wait_domain DOMAIN STATE [MIN_RESTARTS]
	for _ in $(seq 100); do
		executors | awk -v d="$1" -v s="$2" -v r="${3:-0}" \
			'$1 == d && $3 == s && $4 >= r { found = 1 } END { exit !found }' && return 0
		sleep 0.1
	done
	return 1
}
# victim_start UID: a tenant of UID with a filled 1 MiB buffer, waiting on a fifo; sets $vaddr
victim_start() {
	fifo="$rundir/victim.in"
	rm -f "$fifo"
	mkfifo "$fifo"
	chmod 666 "$fifo"
	as "$1" "$check" "$sock" victim <"$fifo" >"$rundir/victim.out" 2>&1 &
	victim=$!
	exec 9>"$fifo"
	for _ in $(seq 100); do grep -q '^ready' "$rundir/victim.out" && break; sleep 0.1; done
	grep -q '^ready' "$rundir/victim.out" || fail "victim: $(cat "$rundir/victim.out")"
	vaddr=$(sed -n 's/^ready //p' "$rundir/victim.out")
}
victim_end() { # victim_end intact|changed
	echo "$1" >&9
	exec 9>&-
	wait $victim || fail "victim (expected $1): $(cat "$rundir/victim.out")"
}

gpu_start 'max_sessions = 64\n'
chmod 755 "$rundir"
# the GPU's spare is ready before any tenant
[ "$(executors | awk '$1 == "-"' | wc -l)" -eq 1 ] || fail "no spare executor: $(executors)"

# two uids, two executors; the first domain took the spare, a new spare stands behind them
victim_start $A
out=$(as $B "$check" "$sock" poke 0x10 global 2>&1) || fail "poke: $out"
echo "$out" | grep -q '^poke: -100[0-9]' || fail "a null-page poke did not fault: $out"
pa=$(epid uid:$A)
[ -n "$pa" ] || fail "no executor of domain uid:$A: $(executors)"
# the poke's fault reaches it before its executor exits: wait for the replacement, not for "ready"
wait_domain uid:$B ready 1 || fail "the faulting domain's executor was not replaced: $(executors)"
[ "$(epid uid:$B)" != "$pa" ] || fail "uid:$A and uid:$B share executor $pa"
[ "$(erestarts uid:$A)" -eq 0 ] || fail "the other domain's executor restarted: $(executors)"
st=$($ctl status)
echo "$st" | grep -Eq "gpu0 uid:$A +ready, pid $pa; domain: 1 session of 1 uid\$" ||
	fail "oooctl status does not show domain uid:$A's executor and session: $st"
echo "$st" | grep -Eq 'gpu0 \(spare\) +ready' || fail "oooctl status does not show the spare: $st"
victim_end intact
grep -q '^resets 0$' "$rundir/victim.out" || fail "the other domain's tenant saw a reset: $(cat "$rundir/victim.out")"
[ "$(epid uid:$A)" = "$pa" ] || fail "the other domain's executor changed: $(executors)"
ok "uid:$A and uid:$B in two executors; uid:$B's fault replaced only its own ($out), uid:$A's buffer and session untouched, no reset"

# the same uid: one executor (the victim's), and its neighbour's fault is its fault too
victim_start $A
out=$(as $A "$check" "$sock" poke 0x10 global 2>&1) || fail "poke: $out"
echo "$out" | grep -q '^poke: -100[0-9]' || fail "a null-page poke did not fault: $out"
victim_end intact
grep -q '^resets 0$' "$rundir/victim.out" && fail "a neighbour in the same domain faulted, yet no reset was seen"
[ "$(epid uid:$A)" != "$pa" ] || fail "uid:$A's executor was not replaced after its own fault"
ok "tenants of one uid share their domain's executor: one's fault resets the other (then its buffer is back)"
gpu_stop

# max_domains = 2, domain_idle_ms = 1500: a third domain refused, an idle one stopped
gpu_start 'max_sessions = 64\n'
sed -i 's/^\[daemon\]$/[daemon]\nmax_domains = 2\ndomain_idle_ms = 1500/' "$rundir/oood.conf"
$ctl reload >/dev/null || fail "reload"
victim_start $A
as $B "$check" "$sock" poke 0x100000 global >/dev/null 2>&1 || fail "poke as uid $B"
out=$(as $C "$check" "$sock" poke 0x100000 global 2>&1)
echo "$out" | grep -q 'max_domains' || fail "a third domain was not refused (max_domains = 2): $out"
[ "$(executors | awk '$1 == "-"' | wc -l)" -eq 0 ] || fail "a spare beyond max_domains: $(executors)"
ok "max_domains = 2: the third domain refused ($(echo "$out" | head -1))"
# uid:$B has no session now: its executor goes after 1.5 s, uid:$A's (its victim waits) stays
for _ in $(seq 60); do [ -z "$(epid uid:$B)" ] && break; sleep 0.1; done
[ -z "$(epid uid:$B)" ] || fail "idle domain uid:$B still has an executor: $(executors)"
[ -n "$(epid uid:$A)" ] || fail "busy domain uid:$A lost its executor: $(executors)"
victim_end intact
grep -q 'executor of uid:4202 stopped (idle' "$rundir/oood.log" || fail "no log line for the idle stop"
# and a spare comes back, so the next domain starts at once
for _ in $(seq 100); do executors | grep -q '^- [0-9]* ready' && break; sleep 0.1; done
executors | grep -q '^- [0-9]* ready' || fail "no spare after the idle stop: $(executors)"
out=$(as $C "$check" "$sock" poke 0x100000 generic 2>&1) || fail "poke as uid $C: $out"
echo "$out" | grep -q '^poke: 0 ' || fail "uid:$C after the idle stop: $out"
ok "an idle domain's executor stopped after domain_idle_ms, a spare took its place and served a new domain"
gpu_stop

# a class's domain: uids $A and $B in one executor "shared"; requests wait for a starting executor
gpu_start 'domain = shared\n'
victim_start $A
out=$(as $B "$check" "$sock" poke "$vaddr" atom 2>&1) || fail "poke: $out"
echo "$out" | grep -q '^poke: 0 ' || fail "poke in the shared domain: $out"
[ "$(executors | grep -c '^shared ')" -eq 1 ] || fail "domain = shared: $(executors)"
[ -z "$(epid uid:$A)$(epid uid:$B)" ] || fail "per-uid executors despite domain = shared: $(executors)"
victim_end intact # (the stand-in runs no kernel: on a GPU this poke changes the buffer, tests/gpu)
ok "domain = shared: uids $A and $B in one executor"
gpu_stop

# fence = yes: tenants of two uids in the GPU's one fenced executor, each session in its own 64 GiB
# window; zero-copy host memory, binary modules and kernels that cannot be fenced refused with reasons
gpu_start 'max_sessions = 64\nfence = yes\n'
out1=$(as $A "$check" "$sock" fenced 2>&1) || fail "fenced uid $A: $out1"
out2=$(as $B "$check" "$sock" fenced 2>&1) || fail "fenced uid $B: $out2"
[ "$(executors | grep -c '^\*fenced ')" -eq 1 ] || fail "fence = yes: not one fenced executor: $(executors)"
[ -z "$(epid uid:$A)$(epid uid:$B)" ] || fail "per-uid executors despite fence = yes: $(executors)"
echo "$out1" | grep -q '^own: 0$' || fail "a fenced launch on its own buffer: $out1"
echo "$out1" | grep -q '^host: -[0-9]* .*fenced' || fail "zero-copy host memory not refused to a fenced session: $out1"
echo "$out1" | grep -q '^cubin: -[0-9]* .*fenced' || fail "a CUBIN not refused to a fenced session: $out1"
echo "$out1" | grep -q '^unfenceable: -[0-9]* .*module .global variable' ||
	fail "a kernel that reads a module .global was not refused with its reason: $out1"
w1=$(echo "$out1" | sed -n 's/^window //p')
w2=$(echo "$out2" | sed -n 's/^window //p')
b1=$(echo "$out1" | sed -n 's/^buffer //p')
[ -n "$w1" ] && [ -n "$w2" ] && [ "$w1" = "$b1" ] || fail "windows: '$w1' '$w2' (buffer $b1)"
# (the two ran one after the other: the second may get the window the first gave back)
ok "fence = yes: two uids in one fenced executor, a buffer at its window's base ($w1), host memory, CUBIN and an unfenceable kernel refused with reasons"
victim_start $A
vwin=$(printf '0x%x' $(( vaddr & ~((1 << 36) - 1) )))
out=$(as $B "$check" "$sock" fenced 2>&1) || fail "fenced uid $B beside a victim: $out"
w2=$(echo "$out" | sed -n 's/^window //p')
[ "$w2" != "$vwin" ] || fail "two live fenced sessions share the window $vwin"
victim_end intact
ok "two live fenced sessions get different windows ($vwin, $w2)"
# fenced kernels of several sessions still fuse: 16 sessions' launches, each in its own window
c0=$(counter fused_launches)
out=$(timeout 150 "$check" "$sock" many 16 200 noresults 2>&1) || fail "fenced launches of 16 sessions: $out"
d=$(settle 1 fused_launches)
[ "$d" -gt 0 ] || fail "no fenced launch was fused: $($ctl sched 2>&1 | head -30)"
ok "fenced launches of 16 sessions fused: $d of them ran in fused bundles ($(echo "$out" | tail -1))"
gpu_stop

# requests that need an executor still starting wait for it (cuInit made to take 0.4 s): two new
# domains at once, one claims the spare and the other waits for the next executor; and a tenant
# that comes before any executor is ready
FAKECUDA_INIT_MS=400
export FAKECUDA_INIT_MS
gpu_start ''
as $A "$check" "$sock" poke 0x100000 global >"$rundir/p1" 2>&1 &
p1=$!
as $B "$check" "$sock" poke 0x100000 global >"$rundir/p2" 2>&1 &
p2=$!
wait $p1 && wait $p2 || fail "two new domains at once: $(cat "$rundir/p1" "$rundir/p2")"
grep -q '^poke: 0 ' "$rundir/p1" && grep -q '^poke: 0 ' "$rundir/p2" ||
	fail "two new domains at once: $(cat "$rundir/p1" "$rundir/p2")"
grep -q 'waits for its executor to be ready' "$rundir/oood.log" || fail "neither request waited for an executor"
ok "two new domains at once: one claimed the spare, the other waited for an executor; both served"
gpu_stop
rundir=$(mktemp -d /tmp/ooo-gpu-XXXXXX)
chmod 755 "$rundir"
stage_libcuda
printf '[daemon]\nlibcuda = %s\n[mps]\nenabled = no\n[class default]\nmatch_uid = *\n' "$run_libcuda" >"$rundir/oood.conf"
"$build/oood" -f -c "$rundir/oood.conf" --rundir "$rundir" 2>"$rundir/oood.log" &
daemon=$!
sock="$rundir/oood.sock"
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.02; done
out=$(as $A "$check" "$sock" poke 0x100000 global 2>&1) || fail "a tenant at startup: $out"
echo "$out" | grep -q '^poke: 0 ' || fail "a tenant at startup: $out"
grep -q 'waits for its executor to be ready' "$rundir/oood.log" || fail "the tenant at startup did not wait"
ok "a tenant that comes before any executor is ready waits for one"
gpu_stop
unset FAKECUDA_INIT_MS
echo "$passed passed, 0 failed"
