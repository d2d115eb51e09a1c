#!/bin/sh
# test_telemetry.sh BUILD: the eBPF probes of oood, end to end, as root.
# A process linked against the CUDA toolkit's stub libcuda makes exactly N
# cuLaunchKernel, M cuStreamSynchronize and K cuMemAlloc_v2 calls (the stub
# returns errors; the uprobes fire all the same): oood's counters for its
# pid must be exactly N, M and K. An untraced twin must not be counted. Two
# threads ping-ponging through pipes must show run-queue samples. The
# metrics output must be valid Prometheus text. Exit 77 where BPF cannot run.
set -u
build=${1:-build}
b=$(cd "$build" && pwd)
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
skip() { echo "test_telemetry: SKIP: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "needs root (CAP_BPF and CAP_PERFMON)"
[ -x "$b/tests/telemetry/cuda_calls" ] || skip "no CUDA toolkit stub libcuda to link cuda_calls against"
dir=$(mktemp -d /tmp/ooo-tm.XXXXXX)
export OOO_RUNDIR="$dir"
ctl="$b/oooctl"
cleanup() {
	for f in "$dir"/*.fd; do [ -e "$f" ] || continue; done
	[ -n "${dpid:-}" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	for p in $(cat "$dir"/kids 2>/dev/null); do kill "$p" 2>/dev/null; done
	rm -rf "$dir"
}
trap cleanup EXIT
cat > "$dir/oood.conf" <<CONF
[daemon]
executor = no
[telemetry]
slow_sync_us = 60000000
[class default]
match_uid = *
CONF
"$b/oood" -f --rundir "$dir" -c "$dir/oood.conf" > "$dir/log" 2>&1 &
dpid=$!
for i in $(seq 50); do [ -S "$dir/admin.sock" ] && break; sleep 0.1; done
state=$("$ctl" --json telemetry 2>&1 | sed -n 's/.*"state": *"\([a-z]*\)".*/\1/p')
if [ "$state" != running ]; then
	echo "oood says: $("$ctl" telemetry 2>&1 | head -1)"
	skip "the eBPF probes do not run here"
fi
ok "oood loaded and attached every program (verifier passed)"
"$ctl" --json telemetry | grep -q '"runqueue_probes": *true' && ok "run-queue programs attached" || bad "run-queue programs not attached"

# start NAME ARGS...: a helper waiting on a fifo; sets $pid and fd of the fifo in $NAME
start() {
	n=$1; shift
	mkfifo "$dir/$n.in"
	"$@" < "$dir/$n.in" > "$dir/$n.out" 2>&1 &
	echo $! >> "$dir/kids"
	eval "exec ${fd}>\"$dir/$n.in\""
	for i in $(seq 50); do grep -q ready "$dir/$n.out" && break; sleep 0.1; done
	pid=$(awk '/ready/ {print $2}' "$dir/$n.out")
}
waitdone() {
	for i in $(seq 100); do grep -q done "$dir/$1.out" && return 0; sleep 0.1; done
	return 1
}
series() { "$ctl" metrics | awk -v k="$1{pid=\"$2\"" 'index($0, k) == 1 {print $NF; exit}'; }

fd=5; start a "$b/tests/telemetry/cuda_calls" 1000 37 5; apid=$pid
fd=6; start u "$b/tests/telemetry/cuda_calls" 500 7 3; upid=$pid
[ -n "$apid" ] && [ -n "$upid" ] || { bad "helpers did not start"; echo "$fail failed"; exit 1; }
out=$("$ctl" trace add "$apid" 2>&1)
case "$out" in *"launches probed in 1 of"*) ok "trace add: $out" ;; *) bad "trace add: $out" ;; esac
echo go >&5; echo go >&6
waitdone a && waitdone u || bad "helpers did not finish"
v=$(series ooo_process_cuda_launches_total "$apid"); [ "$v" = 1000 ] && ok "launches counted exactly (1000)" || bad "launches: '$v', want 1000"
v=$("$ctl" metrics | awk -v k="ooo_process_cuda_syncs_total{pid=\"$apid\"" 'index($0, k) == 1 && /cuStreamSynchronize/ {print $NF}')
[ "$v" = 37 ] && ok "stream syncs counted exactly (37)" || bad "syncs: '$v', want 37"
v=$(series ooo_process_cuda_alloc_failures_total "$apid"); [ "$v" = 5 ] && ok "failed allocations counted (5)" || bad "alloc failures: '$v', want 5"
v=$(series ooo_process_cuda_allocs_total "$apid"); [ "$v" = 0 ] && ok "no successful allocation (stub)" || bad "allocs: '$v', want 0"
v=$(series ooo_process_cuda_sync_seconds_count "$apid"); [ "$v" = 37 ] && ok "sync histogram has 37 samples" || bad "sync histogram count '$v'"
v=$(series ooo_process_cuda_launches_total "$upid"); [ -z "$v" ] && ok "untraced process not counted" || bad "untraced process counted: '$v'"
"$ctl" metrics > "$dir/metrics.txt"
if "$b/tests/tools/prom_lint" "$dir/metrics.txt" > "$dir/lint.txt" 2>&1; then ok "metrics: $(cat "$dir/lint.txt")"; else bad "metrics: $(cat "$dir/lint.txt")"; fi
"$ctl" --json top --count 1 --interval 100 | grep -q "\"pid\": *$apid" && ok "top --json lists the pid" || bad "top --json"
"$ctl" hist --metric sync "$apid" | grep -q "37 samples" && ok "hist shows 37 sync samples" || bad "hist: $("$ctl" hist "$apid" 2>&1 | head -3)"

fd=7; start p "$b/tests/telemetry/pingpong" 2000; ppid=$pid
"$ctl" trace add "$ppid" > /dev/null 2>&1 || bad "trace add pingpong"
echo go >&7
waitdone p || bad "pingpong did not finish"
v=$(series ooo_process_runqueue_delay_seconds_count "$ppid")
[ -n "$v" ] && [ "$v" -ge 1000 ] && ok "run-queue samples of the ping-pong: $v" || bad "run-queue samples: '$v', want >= 1000"

# a libcuda.so.1 the tenant could have written is not probed (root would parse and probe its file)
mkdir -p "$dir/own" && cp "$(readlink -f "$b/tests/telemetry/stubs/libcuda.so.1")" "$dir/own/libcuda.so.1"
chown nobody "$dir/own/libcuda.so.1" 2>/dev/null || chmod 666 "$dir/own/libcuda.so.1"
fd=8; start o env LD_LIBRARY_PATH="$dir/own" "$b/tests/telemetry/cuda_calls" 300 0 0; opid=$pid
grep -q "$dir/own/libcuda.so.1" /proc/"$opid"/maps || bad "the helper did not map its own libcuda"
"$ctl" trace add "$opid" > /dev/null 2>&1
echo go >&8; waitdone o || bad "own-libcuda helper did not finish"
v=$(series ooo_process_cuda_launches_total "$opid")
[ -z "$v" ] || [ "$v" = 0 ] && ok "a tenant-writable libcuda is not probed" || bad "tenant-writable libcuda probed: $v launches"
grep -q "not probing .*own/libcuda.so.1: not a root-owned file" "$dir/log" && ok "and oood says why" || bad "no log line for the refused file"

# errors change nothing
"$ctl" trace add 3000000000 > "$dir/e" 2>&1; rc=$?
[ $rc -eq 2 ] && ok "bad pid is a usage error" || bad "trace add 3000000000: rc $rc $(cat "$dir/e")"
"$ctl" trace add 4194304 > "$dir/e" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "no such process" "$dir/e" && ok "missing pid refused: $(cat "$dir/e")" || bad "trace add of a missing pid: rc $rc $(cat "$dir/e")"
"$ctl" trace remove "$ppid" > /dev/null 2>&1 && ok "trace remove" || bad "trace remove"
"$ctl" trace remove "$ppid" > "$dir/e" 2>&1; rc=$?
[ $rc -eq 1 ] && ok "second remove refused: $(cat "$dir/e")" || bad "second trace remove: rc $rc"

# a reload that changes [telemetry] restarts the probes and keeps the tracked pids
before=$("$ctl" --json telemetry | sed -n 's/.*"tracked": *\([0-9]*\).*/\1/p')
sed -i 's/^slow_sync_us = .*/slow_sync_us = 5000/' "$dir/oood.conf"
"$ctl" reload > /dev/null 2>&1 || bad "reload"
j=$("$ctl" --json telemetry)
echo "$j" | grep -q '"slow_sync_ns": *5000000' && echo "$j" | grep -q '"state": *"running"' \
	&& [ "$(echo "$j" | sed -n 's/.*"tracked": *\([0-9]*\).*/\1/p')" = "$before" ] \
	&& ok "reload restarted the probes with the new settings, $before pids still tracked" \
	|| bad "after reload: $j"
grep -q "restarting the probes" "$dir/log" && ok "the restart is logged" || bad "no restart line in the log"

# an exited process's records go within a few seconds
exec 5>&- 6>&- 7>&- 8>&-
sleep 0.5
for i in $(seq 60); do [ -z "$(series ooo_process_cuda_launches_total "$apid")" ] && break; sleep 0.1; done
[ -z "$(series ooo_process_cuda_launches_total "$apid")" ] && ok "records of the exited process aged out" || bad "records of $apid still there"
# one uid's sessions take at most a quarter of max_tracked (here 4: one process)
d2="$dir/d2"; mkdir -p "$d2"
printf '[daemon]\nexecutor = no\n[telemetry]\nmax_tracked = 4\n[class default]\nmatch_uid = *\n' > "$d2/oood.conf"
"$b/oood" -f --rundir "$d2" -c "$d2/oood.conf" > "$d2/log" 2>&1 &
d2pid=$!
for i in $(seq 50); do [ -S "$d2/admin.sock" ] && break; sleep 0.1; done
"$b/ooo-bench" ping --rundir "$d2" --modes ooo --sessions 1 --seconds 2 --warmup 0 > /dev/null 2>&1 &
b1=$!
"$b/ooo-bench" ping --rundir "$d2" --modes ooo --sessions 1 --seconds 2 --warmup 0 > /dev/null 2>&1 &
b2=$!
sleep 1
v=$("$ctl" --rundir "$d2" --json telemetry | sed -n 's/.*"tracked": *\([0-9]*\).*/\1/p')
wait $b1 $b2
kill $d2pid; wait $d2pid
[ "$v" = 1 ] && ok "two processes of one uid, max_tracked 4: one tracked" || bad "per-uid share: tracked '$v', want 1"

# without privilege: one clear line, and oood runs on
if ! id nobody > /dev/null 2>&1 || ! command -v runuser > /dev/null 2>&1 ||
	! runuser -u nobody -- test -x "$b/oood"; then
	echo "note: the unprivileged check needs user nobody, runuser and a build nobody can run: not run"
else
	d3="$dir/d3"; mkdir -p "$d3"; chmod 777 "$d3"
	printf '[daemon]\nexecutor = no\n[class default]\nmatch_uid = *\n' > "$d3/oood.conf"; chmod 644 "$d3/oood.conf"
	chmod 755 "$dir"
	runuser -u nobody -- "$b/oood" -f --rundir "$d3/r" -c "$d3/oood.conf" > "$d3/log" 2>&1 &
	# (under a sanitizer on a loaded machine oood may take more than 5 s to be ready: wait up to 20 s)
	for i in $(seq 200); do [ -S "$d3/r/admin.sock" ] && grep -q 'ready:' "$d3/log" && break; sleep 0.1; done
	n=$(grep -c -E "telemetry|libbpf" "$d3/log")
	r=$(runuser -u nobody -- "$ctl" --rundir "$d3/r" telemetry 2>&1 | head -1)
	pkill -u nobody -f "$d3/r" 2>/dev/null; sleep 0.2
	[ "$n" = 1 ] && grep -q "not privileged" "$d3/log" && ok "unprivileged: one line: $(grep telemetry "$d3/log")" \
		|| bad "unprivileged oood logged $n telemetry lines: $(cat "$d3/log")"
	case "$r" in *unavailable*"not privileged"*) ok "oooctl telemetry says why" ;; *) bad "oooctl telemetry: $r" ;; esac
fi

kill "$dpid"; wait "$dpid"; rc=$?; dpid=
[ $rc -eq 0 ] && ok "oood stopped cleanly" || bad "oood exited $rc"
grep -E "warning|error" "$dir/log" | grep -v "no NVIDIA" && bad "oood logged warnings" || ok "no warnings in oood's log"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
