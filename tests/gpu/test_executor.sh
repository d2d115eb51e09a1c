#!/bin/sh
# test_executor.sh BUILD: oood starts an executor per GPU that opens the
# device as an unprivileged user; a killed executor is restarted and serves
# again; SIGTERM stops oood and its executors.
set -u
build=${1:-build}
if [ ! -e /dev/nvidiactl ]; then
	echo "test_executor: SKIP: no NVIDIA device on this machine"
	exit 77
fi
rundir=$(mktemp -d /tmp/ooo-gpu-XXXXXX)
chmod 755 "$rundir"
libcuda=libcuda.so.1
[ -e /usr/local/nvidia/lib64/libcuda.so.1 ] && libcuda=/usr/local/nvidia/lib64/libcuda.so.1
printf '[daemon]\nlibcuda = %s\n[class default]\nmatch_uid = *\n' "$libcuda" >"$rundir/oood.conf"
"$build/oood" -f -c "$rundir/oood.conf" --rundir "$rundir" 2>"$rundir/oood.log" &
daemon=$!
ctl="$build/oooctl --rundir $rundir"
fail() {
	echo "test_executor: FAIL: $*"
	sed 's/^/  | /' "$rundir/oood.log"
	kill -9 $daemon 2>/dev/null
	exit 1
}
field() { # field NAME: first value of "NAME": in `oooctl --json devices`
	$ctl --json devices | sed -n "s/^ *\"$1\": \"*\([^\",]*\)\"*,*$/\1/p" | head -1
}
wait_ready() {
	for _ in $(seq 300); do
		[ "$(field state)" = ready ] && return 0
		sleep 0.1
	done
	return 1
}
wait_ready || fail "executor never became ready: $(field reason)"
$ctl devices
sms=$(field sm_count)
[ "$sms" -gt 0 ] || fail "no SM count"
name=$(field name)
echo "test_executor: gpu0 is '$name' with $sms SMs"
pid=$(field executor_pid)
owner=$(stat -c %U /proc/"$pid")
[ "$(id -u)" -ne 0 ] || [ "$owner" = nobody ] || fail "executor runs as $owner, not nobody"
# a dead executor is replaced
kill -9 "$pid"
sleep 0.2
wait_ready || fail "executor not restarted: $(field reason)"
[ "$(field restarts)" = 1 ] || fail "restarts = $(field restarts), expected 1"
[ "$(field executor_pid)" != "$pid" ] || fail "same executor pid after a restart"
$ctl status | grep -q '^gpus  *1 ready of 1' || fail "status does not show the GPU"
newpid=$(field executor_pid)
kill -TERM $daemon
wait $daemon || fail "oood exited with $?"
kill -0 "$newpid" 2>/dev/null && fail "executor $newpid outlived oood"
rm -rf "$rundir"
echo "test_executor: executor opened '$name' ($sms SMs), restarted after SIGKILL, stopped with oood: OK"
