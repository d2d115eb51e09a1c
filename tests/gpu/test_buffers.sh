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

# 1. contents survive the executor's death, and the new executor maps the buffer again
buffer_survives_restart "$libcuda"
echo "test_buffers: tenant filled $keep_ready; contents intact after an executor restart, buffer mapped again"
# the baseline: the tenants' trust domain (uid 0) has its executor now, beside the GPU's spare
sleep 0.5
base=$(mem_used)

# 2. SIGKILL with 4 GiB held: charge and device memory return
hold_buffer 4294967296
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
over_quota_refused
echo "test_buffers: over quota refused: $quota_reason"

gpu_stop
echo "test_buffers: OK"
