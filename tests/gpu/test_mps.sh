#!/bin/sh
# test_mps.sh BUILD: native tenants under real MPS on a GPU. oood starts
# nvidia-cuda-mps-control (multi-user), its executor is an MPS client at
# 100%; ooo-run leases reach unmodified CUDA programs (tests/gpu/mps_check):
# --sm 25 limits the SMs they see and run on, --mem 2G makes a 3 GiB
# allocation fail, oooctl evict ends one (terminate_client), and a managed
# tenant (through the executor) and two native tenants run at the same time
# on one MPS server. Needs root (oood starts MPS); skips without MPS.
set -u
build=${1:-build}
name=test_mps
. "$(dirname "$0")/lib.sh"
gpu_require
gpu_require_nvcc
here=$(dirname "$0")
[ "$(id -u)" -eq 0 ] || { echo "$name: SKIP: needs root to run the MPS control daemon"; exit 77; }
control=$(command -v nvidia-cuda-mps-control || ls /usr/local/nvidia/bin/nvidia-cuda-mps-control 2>/dev/null)
[ -x "$control" ] || { echo "$name: SKIP: no nvidia-cuda-mps-control"; exit 77; }
check="$build/tests/gpu/mps_check"
pass=0 nfail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { nfail=$((nfail + 1)); echo "FAIL: $*"; }

gpu_mps="[mps]\ncontrol = $control\nstop_grace_ms = 3000\nevict_grace_ms = 2000\n"
gpu_start 'sm_share = 100\nmem_limit = 64G\nslo_us = 50\nmax_leases = 64\n'
run="$build/ooo-run --socket $sock"
$ctl mps
$ctl mps | grep -q '^mps *running' || fail "MPS did not start: $($ctl mps | head -1)"
$ctl --json mps | grep -q '"executor_client": true' && ok "the executor is an MPS client" || bad "executor not an MPS client"

# --sm 25: the SM count the program sees, and the SMs its blocks run on
out=$($run --sm 25 -- "$check" "$libcuda" info 2>&1)
echo "$out" | sed 's/^/  /'
sm=$(echo "$out" | sed -n 's/^sm //p')
[ -n "$sm" ] && [ "$sm" -le 34 ] && [ "$sm" -ge 30 ] && ok "--sm 25: the program sees $sm SMs" || bad "--sm 25: sm '$sm'"
out=$($run --sm 25 -- "$check" "$libcuda" probe 2>&1)
used=$(echo "$out" | sed -n 's/^smids //p')
[ -n "$used" ] && [ "$used" -le 34 ] && ok "--sm 25: 4096 blocks ran on $used distinct SMs" || bad "--sm 25 probe: $out"
out=$($run --sm 100 -- "$check" "$libcuda" probe 2>&1)
all=$(echo "$out" | sed -n 's/^smids //p')
[ -n "$all" ] && [ "$all" -gt 100 ] && ok "--sm 100: on $all SMs" || bad "--sm 100 probe: $out"

# --mem 2G
out=$($run --sm 10 --mem 2G -- "$check" "$libcuda" alloc 3221225472 2>&1)
echo "$out" | grep -q "alloc failed" && ok "--mem 2G: a 3 GiB allocation fails ($out)" || bad "--mem 2G, 3 GiB: $out"
out=$($run --sm 10 --mem 2G -- "$check" "$libcuda" alloc 1073741824 2>&1)
echo "$out" | grep -q "alloc ok" && ok "--mem 2G: a 1 GiB allocation succeeds" || bad "--mem 2G, 1 GiB: $out"

# evict
$run --sm 10 -- "$check" "$libcuda" hold 120 >"$rundir/hold.out" 2>&1 &
hp=$!
for _ in $(seq 100); do grep -q ready "$rundir/hold.out" && break; sleep 0.1; done
grep -q ready "$rundir/hold.out" || bad "hold never became ready: $(cat "$rundir/hold.out")"
$ctl leases
ev=$($ctl evict "$hp" 2>&1)
echo "  $ev"
echo "$ev" | grep -q terminate_client && ok "evict: terminate_client accepted" || bad "evict: $ev"
t0=$(date +%s)
for _ in $(seq 100); do kill -0 "$hp" 2>/dev/null || break; sleep 0.1; done
kill -0 "$hp" 2>/dev/null && bad "the evicted tenant still runs" || ok "the evicted tenant ended within $(( $(date +%s) - t0 )) s"
wait "$hp" 2>/dev/null

# a managed tenant and two native tenants at the same time
"$nvcc" -ptx -arch=sm_90 -o "$rundir/k.ptx" "$here/kernels/vadd.cu" || fail "nvcc -ptx"
"$nvcc" -cubin -arch=sm_90 -o "$rundir/k.cubin" "$here/kernels/vadd.cu" || fail "nvcc -cubin"
chmod 644 "$rundir"/k.*
$run --sm 30 -- "$check" "$libcuda" spin 8 >"$rundir/n1.out" 2>&1 &
n1=$!
$run --sm 30 -- "$check" "$libcuda" spin 8 >"$rundir/n2.out" 2>&1 &
n2=$!
for _ in $(seq 100); do grep -q ready "$rundir/n1.out" && grep -q ready "$rundir/n2.out" && break; sleep 0.1; done
servers=$($ctl mps run get_server_list 2>&1)
nserv=$(echo "$servers" | grep -c '^[0-9]')
[ "$nserv" -eq 1 ] && ok "one MPS server for the executor (a uid of executor_uids) and the natives (root): multi-user" || bad "servers: $servers"
clients=$($ctl mps run get_client_list "$(echo "$servers" | head -1)" 2>&1)
expid=$($ctl --json devices | grep -o '"executor_pid": *[0-9]*' | head -1 | grep -o '[0-9]*$')
echo "$clients" | grep -qx "$n1" && echo "$clients" | grep -qx "$n2" && echo "$clients" | grep -qx "$expid" &&
	ok "the executor ($expid) and both natives are clients of that server at once" || bad "clients: $(echo $clients) (executor $expid, natives $n1 $n2)"
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" vadd "$here/kernels/vadd.cu" "$rundir/k.ptx" "$rundir/k.cubin" 2>&1)
echo "$out" | grep -q '^ok' && ok "a managed tenant's launches are correct meanwhile" || bad "managed tenant: $out"
wait "$n1"; r1=$?
wait "$n2"; r2=$?
l1=$(sed -n 's/^launches //p' "$rundir/n1.out")
l2=$(sed -n 's/^launches //p' "$rundir/n2.out")
[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ "${l1:-0}" -gt 0 ] && [ "${l2:-0}" -gt 0 ] &&
	ok "both native tenants ran throughout ($l1 and $l2 probe batches in 8 s)" || bad "natives: $r1 $r2: $(cat "$rundir/n1.out" "$rundir/n2.out")"
# telemetry feedback: a native tenant whose syncs take longer than the class's slo_us (50 us here)
if $ctl --json telemetry | grep -q '"state": *"running"'; then
	$run --sm 10 -- "$check" "$libcuda" spin 6 >"$rundir/slow.out" 2>&1 &
	sp=$!
	for _ in $(seq 80); do $ctl --json leases | grep -q '"slow": *true' && break; sleep 0.1; done
	$ctl leases | sed 's/^/  /'
	$ctl --json leases | grep -q '"slow": *true' && ok "a lease whose sync p99 exceeds slo_us is marked slow" || bad "no lease marked slow"
	offer=$($ctl mps | sed -n 's/.*next leases offered \([0-9]*\)% (was \([0-9]*\)%).*/\1 \2/p')
	set -- $offer
	[ -n "$offer" ] && [ "$1" -eq $(( $2 + 10 )) ] && ok "feedback: the class's next leases are offered $1% (was $2%)" || bad "feedback: $($ctl mps | grep feedback)"
	out=$($run -- "$check" "$libcuda" info 2>&1)
	sm=$(echo "$out" | sed -n 's/^sm //p')
	want=$(( ${1:-0} * 132 / 100 ))
	[ -n "$sm" ] && [ "$sm" -ge $((want - 3)) ] && [ "$sm" -le $((want + 3)) ] && ok "a default lease now gets ${1:-?}%: $sm SMs" || bad "after feedback: sm '$sm' ($out), want about $want"
	wait "$sp"
else
	echo "info: telemetry not running here ($($ctl telemetry | head -1)): feedback not checked"
fi

# the MPS client limit: with the executors clients (the managed tenant's domain's and the GPU's spare),
# max_clients - executors leases fit on the GPU; the next is refused by oood
nexec=$($ctl --json devices | grep -o '"executor_pid": *[1-9][0-9]*' | wc -l)
fit=$((48 - nexec))
i=0
while [ $i -lt $fit ]; do
	$run --sm 1 -- "$check" "$libcuda" hold 60 >"$rundir/c$i.out" 2>&1 &
	echo $! >>"$rundir/cpids"
	i=$((i + 1))
done
for _ in $(seq 300); do [ "$(cat "$rundir"/c*.out 2>/dev/null | grep -c ready)" -ge $fit ] && break; sleep 0.1; done
nready=$(cat "$rundir"/c*.out | grep -c ready)
[ "$nready" -eq $fit ] && ok "$fit native clients and $nexec executors on one GPU" || bad "only $nready of $fit clients ready: $(grep -v ready "$rundir"/c*.out | head -3)"
out=$($run --sm 1 -- "$check" "$libcuda" info 2>&1); rc=$?
[ $rc -eq 69 ] && echo "$out" | grep -q "max_clients = 48" && ok "the 49th client is refused by oood (exit 69), not by MPS (808): $out" || bad "49th: rc $rc: $out"
for p in $(cat "$rundir/cpids"); do kill "$p" 2>/dev/null; done
for p in $(cat "$rundir/cpids"); do wait "$p" 2>/dev/null; done

$ctl mps
cpid=$($ctl --json mps | grep -o '"pid": *[0-9]*' | head -1 | grep -o '[0-9]*$')
gpu_stop
sleep 1
[ -n "$cpid" ] && ! kill -0 "$cpid" 2>/dev/null && ok "the MPS control daemon ($cpid) stopped with oood" || bad "MPS control daemon $cpid outlived oood"
echo "$pass passed, $nfail failed"
[ $nfail -eq 0 ] && echo "test_mps: OK"
[ $nfail -eq 0 ]
