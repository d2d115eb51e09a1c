# lib.sh: shared set-up of the tests/gpu scripts (sourced, not run).
# The caller sets `name` and `build`, then calls gpu_start CONFIG_EXTRA.
# Gives: $libcuda, gpu_require, gpu_require_nvcc ($nvcc), and from gpu_start $rundir $sock $ctl $daemon,
# fail, field, wait_ready, gpu_stop.

# Skip (exit 77) where there is no NVIDIA device.
gpu_require() {
	if [ ! -e /dev/nvidiactl ]; then
		echo "$name: SKIP: no NVIDIA device on this machine"
		exit 77
	fi
}

# The driver library: the GPU machine's, else the loader's.
libcuda=libcuda.so.1
[ -e /usr/local/nvidia/lib64/libcuda.so.1 ] && libcuda=/usr/local/nvidia/lib64/libcuda.so.1

# Set $nvcc, or skip (exit 77) where there is none to build the test kernels.
gpu_require_nvcc() {
	nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
	if [ ! -x "$nvcc" ]; then
		echo "$name: SKIP: no nvcc to build the test kernels"
		exit 77
	fi
}

# Start a private oood whose class "default" admits everyone, with extra class keys (printf-escaped).
# MPS is off unless the caller sets gpu_mps to its own [mps] section (printf-escaped): these tests
# measure the executor as the GPU's only context; tests/gpu/test_mps.sh runs it as an MPS client.
gpu_start() {
	rundir=$(mktemp -d /tmp/ooo-gpu-XXXXXX)
	chmod 755 "$rundir"
	printf "[daemon]\nlibcuda = %s\n${gpu_mps:-[mps]\nenabled = no\n}[class default]\nmatch_uid = *\n$1" "$libcuda" \
		>"$rundir/oood.conf"
	"$build/oood" -f -c "$rundir/oood.conf" --rundir "$rundir" 2>"$rundir/oood.log" &
	daemon=$!
	ctl="$build/oooctl --rundir $rundir"
	sock="$rundir/oood.sock"
	wait_ready || fail "executor never became ready: $(field reason)"
}

fail() {
	echo "$name: FAIL: $*"
	sed 's/^/  | /' "$rundir/oood.log" | tail -40
	kill -9 "$daemon" 2>/dev/null
	exit 1
}

# field NAME: the first value of "NAME" in `oooctl --json devices`
field() { $ctl --json devices 2>/dev/null | sed -n "s/^ *\"$1\": \"*\([^\",]*\)\"*,*$/\1/p" | head -1; }

wait_ready() {
	for _ in $(seq 300); do
		[ "$(field state)" = ready ] && return 0
		sleep 0.1
	done
	return 1
}

# SIGTERM oood, which must exit 0, and remove the run directory.
gpu_stop() {
	kill -TERM "$daemon"
	wait "$daemon" || fail "oood exited with $?"
	rm -rf "$rundir"
}
