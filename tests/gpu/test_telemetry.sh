#!/bin/sh
# test_telemetry.sh BUILD: the eBPF probes on the real driver library.
# - cuda_calls against the driver's libcuda.so.1: its launches, syncs and
#   allocations counted exactly;
# - the cost of the launch uprobe: ns per cuLaunchKernel call untraced and
#   traced, in one run (printed as "probe overhead" lines for bench/results);
# - oood's CPU while four traced processes make launches as fast as they can;
# - a PyTorch model seen through the probes (launches/s, sync histogram):
#   what it sees is printed.
# Skips (77) without a device, without BPF (gVisor), or not as root.
set -u
name=test_telemetry
build=$(cd "${1:-build}" && pwd)
. "$(dirname "$0")/lib.sh"
gpu_require
[ "$(id -u)" -eq 0 ] || { echo "$name: SKIP: needs root"; exit 77; }
[ -x "$build/tests/telemetry/cuda_calls" ] || { echo "$name: SKIP: cuda_calls not built"; exit 77; }
drv=$(dirname "$libcuda")
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
dir=$(mktemp -d /tmp/ooo-gtm.XXXXXX)
export OOO_RUNDIR="$dir"
ctl="$build/oooctl"
cleanup() {
	[ -n "${dpid:-}" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	for p in $(cat "$dir"/kids 2>/dev/null); do kill "$p" 2>/dev/null; done
	rm -rf "$dir"
}
trap cleanup EXIT
printf '[daemon]\nexecutor = no\n[telemetry]\nslow_sync_us = 60000000\n[class default]\nmatch_uid = *\n' > "$dir/oood.conf"
"$build/oood" -f --rundir "$dir" -c "$dir/oood.conf" > "$dir/log" 2>&1 &
dpid=$!
for i in $(seq 50); do [ -S "$dir/admin.sock" ] && break; sleep 0.1; done
if ! "$ctl" --json telemetry | grep -q '"state": *"running"'; then
	echo "$name: SKIP: telemetry not running here: $("$ctl" telemetry 2>&1 | head -1)"
	exit 77
fi
series() { "$ctl" metrics | awk -v k="$1{pid=\"$2\"" 'index($0, k) == 1 {print $NF; exit}'; }
n=0
# start ARGS...: a helper reading lines from the fifo h$n.in; sets $pid, $tag
start() {
	n=$((n + 1)); tag=h$n
	mkfifo "$dir/$tag.in"
	# read-write: the open does not wait for a writer, and the helper never sees EOF
	LD_LIBRARY_PATH="$drv" "$@" <> "$dir/$tag.in" > "$dir/$tag.out" 2>&1 &
	echo $! >> "$dir/kids"
	for i in $(seq 300); do grep -q ready "$dir/$tag.out" && break; sleep 0.1; done
	pid=$(awk '/ready/ {print $2}' "$dir/$tag.out")
}
go() { echo go > "$dir/h$1.in"; }
waitdone() { for i in $(seq 600); do grep -q done "$dir/h$1.out" && return 0; sleep 0.1; done; return 1; }
per() { awk '/done/ {print $2}' "$dir/h$1.out"; echo bye > "$dir/h$1.in"; }

N=200000
start "$build/tests/telemetry/cuda_calls" $N 1000 10; p1=$pid
"$ctl" trace add "$p1"
go 1; waitdone 1 || bad "traced helper did not finish"
grep -q "libcuda" "$dir/log" && echo "probed: $(grep 'probing' "$dir/log" | head -2)"
v=$(series ooo_process_cuda_launches_total "$p1"); [ "$v" = $N ] && ok "real libcuda: $N launches counted exactly" || bad "launches '$v', want $N"
v=$("$ctl" metrics | awk -v k="ooo_process_cuda_syncs_total{pid=\"$p1\"" 'index($0, k) == 1 && /cuStreamSynchronize/ {print $NF}')
[ "$v" = 1000 ] && ok "1000 stream syncs counted" || bad "syncs '$v', want 1000"
v=$(series ooo_process_cuda_alloc_failures_total "$p1"); a=$(series ooo_process_cuda_allocs_total "$p1")
[ "$((v + a))" = 10 ] && ok "10 allocations counted ($a ok, $v failed: no context)" || bad "allocs $a + $v, want 10"

# the launch probe's cost: same binary, same N, untraced then traced, three times each
for r in 1 2 3; do
	start "$build/tests/telemetry/cuda_calls" 1000000 0 0; u=$n
	go $u; waitdone $u
	start "$build/tests/telemetry/cuda_calls" 1000000 0 0; t=$n
	"$ctl" trace add "$pid" > /dev/null
	go $t; waitdone $t
	echo "probe overhead: run $r: untraced $(per $u) ns/call, traced $(per $t) ns/call"
done

# oood's CPU while 4 traced processes launch as fast as they can
t0=$(awk '{print $14 + $15}' /proc/$dpid/stat)
first=$((n + 1))
for k in 1 2 3 4; do start "$build/tests/telemetry/cuda_calls" 2000000 0 0; "$ctl" trace add "$pid" > /dev/null; done
s0=$(date +%s%N)
for k in 0 1 2 3; do go $((first + k)); done
for k in 0 1 2 3; do waitdone $((first + k)); done
s1=$(date +%s%N)
t1=$(awk '{print $14 + $15}' /proc/$dpid/stat)
tck=$(getconf CLK_TCK)
awk -v ns=$((s1 - s0)) -v c=$((t1 - t0)) -v hz="$tck" 'BEGIN {
	printf "oood cpu under load: 8000000 probed launches in %.2f s (%.0f events/s), oood used %.3f s of CPU\n",
		ns / 1e9, 8e6 / (ns / 1e9), c / hz }'

# PyTorch: a small MLP, traced after CUDA is initialised
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	cat > "$dir/mlp.py" <<'PY'
import os, sys, time, torch
m = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512)).cuda()
x = torch.randn(64, 512, device="cuda")
m(x); torch.cuda.synchronize()
print("ready", os.getpid(), flush=True)
sys.stdin.readline()
t = time.time(); it = 0
while time.time() - t < 2.0:
    for _ in range(10):
        y = m(x)
    torch.cuda.synchronize(); it += 1
print("done", it, flush=True)
sys.stdin.readline()
PY
	start python3 "$dir/mlp.py"; tp=$pid; tn=$n
	"$ctl" trace add "$tp"
	go $tn; waitdone $tn
	"$ctl" top --count 1 --interval 200 | grep -E "PID|^ *$tp " || true
	l=$(series ooo_process_cuda_launches_total "$tp")
	s=$("$ctl" metrics | awk -v k="ooo_process_cuda_sync_seconds_count{pid=\"$tp\"" 'index($0, k) == 1 {print $NF}')
	echo "pytorch: $(awk '/done/ {print $2}' "$dir/h$tn.out") iterations of 10 forward passes; probes saw launches=$l sync_calls=$s"
	"$ctl" hist --metric sync "$tp" | head -20
	[ -n "$s" ] && [ "$s" -gt 0 ] && ok "pytorch syncs seen ($s)" || bad "pytorch: no sync seen"
	[ -n "$l" ] && [ "$l" -gt 0 ] && ok "pytorch launches seen ($l)" || echo "note: pytorch launches not seen through cuLaunchKernel* (runtime entry points): launches=$l"
else
	echo "note: no PyTorch with CUDA here: skipped that part"
fi
"$ctl" telemetry | head -12
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
