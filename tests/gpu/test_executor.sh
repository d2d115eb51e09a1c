#!/bin/sh
# test_executor.sh BUILD: oood starts an executor per GPU that opens the
# device as an unprivileged user; a killed executor is restarted and serves
# again; SIGTERM stops oood and its executors.
set -u
build=${1:-build}
name=test_executor
. "$(dirname "$0")/lib.sh"
gpu_require
gpu_start ''
$ctl devices
sms=$(field sm_count)
[ "$sms" -gt 0 ] || fail "no SM count"
gpu_name=$(field name)
echo "test_executor: gpu0 is '$gpu_name' with $sms SMs"
pid=$(field executor_pid)
owner=$(stat -c %u /proc/"$pid")
# as root it runs as a uid of executor_uids (default 60928-61183), its slot's own
[ "$(id -u)" -ne 0 ] || { [ "$owner" -ge 60928 ] && [ "$owner" -le 61183 ]; } ||
	fail "executor runs as uid $owner, not one of executor_uids"
# a dead executor is replaced
kill -9 "$pid"
wait_restarted 0 || fail "executor not restarted: $(field reason)"
[ "$(field restarts)" = 1 ] || fail "restarts = $(field restarts), expected 1"
[ "$(field executor_pid)" != "$pid" ] || fail "same executor pid after a restart"
$ctl status | grep -q '^gpus  *1 ready of 1' || fail "status does not show the GPU"
newpid=$(field executor_pid)
kill -TERM $daemon
wait $daemon || fail "oood exited with $?"
kill -0 "$newpid" 2>/dev/null && fail "executor $newpid outlived oood"
rm -rf "$rundir"
echo "test_executor: executor opened '$gpu_name' ($sms SMs), restarted after SIGKILL, stopped with oood: OK"
