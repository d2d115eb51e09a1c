#!/bin/sh
# test_buffers.sh BUILD: device buffers through oood on a real GPU.
#  - a tenant allocates, imports the memory into its own context and fills it;
#    the executor is killed and replaced; the contents are intact and the new
#    executor mapped the buffer again;
#  - a tenant killed with SIGKILL holding 4 GiB: its charge and the device
#    memory both return;
#  - mem_limit refuses an allocation over quota, with the reason.
set -u
build=${1:-build}
name=test_buffers
. "$(dirname "$0")/lib.sh"
gpu_require
command -v nvidia-smi >/dev/null 2>&1 || { echo "$name: SKIP: no nvidia-smi"; exit 77; }
gpu_start 'mem_limit = 8G\n'
mem_used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; }
tenant_mem() { $ctl --json tenants | tr -d ' \n' | sed -n 's/.*"used":{[^}]*"mem_bytes":\([0-9]*\).*/\1/p'; }

base=$(mem_used)

# 1. contents survive the executor's death, and the new executor maps the buffer again
fifo="$rundir/in"
mkfifo "$fifo"
"$build/tests/gpu/buf_check" "$sock" keep "$libcuda" <"$fifo" >"$rundir/keep.out" 2>&1 &
tenant=$!
exec 9>"$fifo"
for _ in $(seq 100); do grep -q '^ready' "$rundir/keep.out" && break; sleep 0.1; done
grep -q '^ready' "$rundir/keep.out" || fail "tenant: $(cat "$rundir/keep.out")"
echo "test_buffers: tenant filled $(grep '^ready' "$rundir/keep.out")"
[ "$(tenant_mem)" -ge 67108864 ] || fail "64 MiB not charged: $(tenant_mem)"
pid=$(field executor_pid)
kill -9 "$pid"
sleep 0.2
wait_ready || fail "executor not restarted: $(field reason)"
for _ in $(seq 50); do grep -q 'mapping 1 buffers again' "$rundir/oood.log" && break; sleep 0.1; done
grep -q 'mapping 1 buffers again' "$rundir/oood.log" || fail "the new executor was not given the buffer"
sleep 0.5
grep -q 'could not be mapped again' "$rundir/oood.log" && fail "re-import failed"
echo check >&9
exec 9>&-
wait $tenant || fail "tenant: $(cat "$rundir/keep.out")"
grep -q '^ok' "$rundir/keep.out" || fail "tenant: $(cat "$rundir/keep.out")"
echo "test_buffers: contents intact after an executor restart, buffer mapped again"
for _ in $(seq 50); do [ "$(tenant_mem)" = "" ] && break; sleep 0.1; done
[ -z "$(tenant_mem)" ] || fail "tenant still charged after free: $(tenant_mem)"

# 2. SIGKILL with 4 GiB held: charge and device memory return
"$build/tests/gpu/buf_check" "$sock" hold 4294967296 >"$rundir/hold.out" 2>&1 &
holder=$!
for _ in $(seq 100); do grep -q '^held' "$rundir/hold.out" && break; sleep 0.1; done
grep -q '^held' "$rundir/hold.out" || fail "holder: $(cat "$rundir/hold.out")"
held=$(mem_used)
[ $((held - base)) -ge 4000 ] || fail "device memory did not grow by 4 GiB ($base -> $held MiB)"
kill -9 $holder
wait $holder 2>/dev/null
back=
for _ in $(seq 100); do
	now=$(mem_used)
	if [ $((now - base)) -le 64 ] && [ -z "$(tenant_mem)" ]; then back=1; break; fi
	sleep 0.1
done
[ -n "$back" ] || fail "after SIGKILL: device memory $base -> $held -> $(mem_used) MiB, tenant charge $(tenant_mem)"
echo "test_buffers: SIGKILLed tenant's 4 GiB returned ($base -> $held -> $(mem_used) MiB)"

# 3. over quota
out=$("$build/tests/gpu/buf_check" "$sock" alloc 10737418240)
case $out in
"result -1003 "*mem_limit*) ;;
*) fail "10 GiB over an 8 GiB mem_limit: $out" ;;
esac
echo "test_buffers: over quota refused: ${out#result -1003 }"

gpu_stop
echo "test_buffers: OK"
