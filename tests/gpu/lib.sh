# lib.sh: shared set-up of the tests/gpu scripts (sourced, not run).
# The caller sets `name` and `build`, then calls gpu_start CONFIG_EXTRA.
# Gives: $libcuda, gpu_require, gpu_require_nvcc ($nvcc), and from gpu_start $rundir $sock $ctl $daemon,
# fail, field, wait_ready, wait_restarted, tenant_mem, buffer_survives_restart, hold_buffer, across_restart, over_quota_refused, gpu_stop.

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

# corpus_ptx TMP: set $ptxdir to the PTX of tests/jit/kernels/*.cu: BUILD/tests/jit/ptx when test_corpus.sh
# left it there, else compiled now with $nvcc into TMP/ptx, in parallel (say what failed)
corpus_ptx() {
	if [ -d "$build/tests/jit/ptx" ] && ls "$build/tests/jit/ptx"/*.ptx >/dev/null 2>&1; then
		ptxdir=$build/tests/jit/ptx
		echo "$name: PTX of the corpus from $ptxdir"
		return
	fi
	ptxdir=$1/ptx
	mkdir -p "$ptxdir"
	# shellcheck disable=SC2016 # expanded by the inner sh
	find "$(dirname "$0")/../jit/kernels" -maxdepth 1 -name '*.cu' -print0 |
		xargs -0 -r -P "$(nproc 2>/dev/null || echo 4)" -I{} sh -c \
			'b=$(basename "$3" .cu); "$1" -ptx -arch=sm_90 -O3 -o "$2/$b.ptx" "$3" 2>"$2/$b.log" ||
			 { echo "nvcc failed on $3:"; cat "$2/$b.log"; }' _ "$nvcc" "$ptxdir" {}
	echo "$name: compiled $(find "$ptxdir" -name '*.ptx' | wc -l) corpus files with nvcc"
}

# stage_libcuda: set $run_libcuda, the driver library for an oood in $rundir. The executor opens it after
# dropping root: a stand-in built in a checkout that only root may enter (a clone in a 0700 directory)
# is copied where the executor's uid can read it: into $stage_dir if the caller made one (to know the
# path before gpu_start), else into $rundir.
stage_libcuda() {
	run_libcuda=$libcuda
	case $libcuda in
	"$(cd "$build" && pwd)"/*)
		run_libcuda=${stage_dir:-$rundir}/$(basename "$libcuda")
		[ -f "$run_libcuda" ] && cmp -s "$libcuda" "$run_libcuda" && return
		cp "$libcuda" "$run_libcuda" && chmod 644 "$run_libcuda" || fail "cannot copy $libcuda to ${stage_dir:-$rundir}"
		;;
	esac
}

# gpu_start CLASS_KEYS [DAEMON_KEYS]: start a private oood whose class "default" admits everyone,
# with extra class keys and [daemon] keys (each printf-escaped). OOO_GPU_DAEMON_KEYS (printf-escaped,
# e.g. 'fuse_copies = yes\n') adds [daemon] keys to every test's daemon, to run the suite in another mode.
# MPS is off unless the caller sets gpu_mps to its own [mps] section (printf-escaped): these tests
# measure the executor as the GPU's only context; tests/gpu/test_mps.sh runs it as an MPS client.
gpu_start() {
	rundir=$(mktemp -d /tmp/ooo-gpu-XXXXXX)
	chmod 755 "$rundir"
	stage_libcuda
	printf "[daemon]\nlibcuda = %s\n${OOO_GPU_DAEMON_KEYS:-}${2:-}${gpu_mps:-[mps]\nenabled = no\n}[class default]\nmatch_uid = *\n$1" "$run_libcuda" \
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

# wait_restarted R0: wait until the executor has restarted more than R0 times and is ready again (a
# tenant can hear of its fault before the executor exits, when the old one still reads "ready")
wait_restarted() {
	for _ in $(seq 300); do
		r=$(field restarts)
		[ "${r:-0}" -gt "$1" ] && [ "$(field state)" = ready ] && return 0
		sleep 0.1
	done
	return 1
}

# tenant_mem: the device memory charged to the one tenant ("" when none is charged)
tenant_mem() { $ctl --json tenants | tr -d ' \n' | sed -n 's/.*"used":{[^}]*"mem_bytes":\([0-9]*\).*/\1/p'; }

# counter KEY...: the sum of the executor's cumulative counters KEY (oooctl sched --json)
counter() {
	pat=$(echo "$*" | sed 's/ /\\|/g')
	$ctl --json sched --interval 0 2>/dev/null | sed -n "s/^ *\"\($pat\)\": \([0-9][0-9]*\),*\$/\2/p" |
		awk '{ s += $1 } END { print s + 0 }'
}
# steady KEY...: the counters' sum once two reports 1.2 s apart agree (work before may still be counted)
steady() {
	prev=-1
	now=$(counter "$@")
	for _ in $(seq 20); do
		[ "$now" = "$prev" ] && break
		prev=$now
		sleep 1.2
		now=$(counter "$@")
	done
	echo "$now"
}
# settle WANT KEY...: wait until the counters' sum has grown by WANT from $c0 (they come about once a
# second), then a report more, and print the growth
settle() {
	want=$1
	shift
	# under a sanitizer compiles come slowly: wait while the sum still grows (it stalls 6 s: done), at most 120 s
	last=-1
	still=0
	for _ in $(seq 600); do
		got=$(($(counter "$@") - c0))
		[ "$got" -ge "$want" ] && break
		if [ "$got" = "$last" ]; then
			still=$((still + 1))
			[ "$still" -ge 30 ] && break
		else
			still=0
			last=$got
		fi
		sleep 0.2
	done
	sleep 1.5
	echo $(($(counter "$@") - c0))
}

# buffer_survives_restart LIBCUDA: a tenant (buf_check keep, with its own CUDA context from LIBCUDA)
# allocates 64 MiB through oood and fills it; the executor is SIGKILLed and replaced; the new one
# is given the buffer and maps it again; the tenant finds its contents intact, frees it, and its
# charge returns. Sets $keep_ready to the tenant's "ready ADDR" line.
buffer_survives_restart() {
	fifo="$rundir/in"
	mkfifo "$fifo"
	"$build/tests/gpu/buf_check" "$sock" keep "$1" <"$fifo" >"$rundir/keep.out" 2>&1 &
	tenant=$!
	exec 9>"$fifo"
	for _ in $(seq 100); do grep -q '^ready' "$rundir/keep.out" && break; sleep 0.1; done
	grep -q '^ready' "$rundir/keep.out" || fail "buf_check keep: $(cat "$rundir/keep.out")"
	keep_ready=$(grep '^ready' "$rundir/keep.out")
	[ "$(tenant_mem)" -ge 67108864 ] || fail "64 MiB not charged: $(tenant_mem)"
	pid=$(field executor_pid)
	r0=$(field restarts)
	kill -9 "$pid"
	wait_restarted "${r0:-0}" || fail "executor not restarted: $(field reason)"
	[ "$(field executor_pid)" != "$pid" ] || fail "the executor was not replaced"
	for _ in $(seq 50); do grep -q 'mapping 1 buffers again' "$rundir/oood.log" && break; sleep 0.1; done
	grep -q 'mapping 1 buffers again' "$rundir/oood.log" || fail "the new executor was not given the buffer"
	sleep 0.5
	grep -q 'could not be mapped again' "$rundir/oood.log" && fail "the buffer could not be mapped again"
	echo check >&9
	exec 9>&-
	wait $tenant || fail "buf_check keep: $(cat "$rundir/keep.out")"
	grep -q '^ok' "$rundir/keep.out" || fail "buf_check keep: $(cat "$rundir/keep.out")"
	for _ in $(seq 50); do [ "$(tenant_mem)" = "" ] && break; sleep 0.1; done
	[ -z "$(tenant_mem)" ] || fail "tenant still charged after free: $(tenant_mem)"
}

# hold_buffer SIZE: a tenant (buf_check) allocates SIZE bytes and holds them, in the background
# (its pid in $holder, its output in $rundir/hold.out); returns once it holds them.
hold_buffer() {
	"$build/tests/gpu/buf_check" "$sock" hold "$1" >"$rundir/hold.out" 2>&1 &
	holder=$!
	for _ in $(seq 100); do grep -q '^held' "$rundir/hold.out" && break; sleep 0.1; done
	grep -q '^held' "$rundir/hold.out" || fail "buf_check hold $1: $(cat "$rundir/hold.out")"
}

# across_restart MODE MARK OUT [CMD]: run `dp_check SOCK MODE` in the background (output in OUT); once
# it prints a line starting MARK, eval CMD (if given), SIGKILL the executor, wait until its successor is
# ready, then give dp_check its line on stdin and wait for it. Returns dp_check's exit status.
across_restart() {
	fifo="$rundir/in.$1"
	mkfifo "$fifo"
	timeout 120 "$build/tests/gpu/dp_check" "$sock" "$1" <"$fifo" >"$3" 2>&1 &
	tenant=$!
	exec 9>"$fifo"
	for _ in $(seq 100); do grep -q "^$2" "$3" && break; sleep 0.1; done
	grep -q "^$2" "$3" || fail "dp_check $1: $(cat "$3")"
	[ -z "${4:-}" ] || eval "$4"
	r0=$(field restarts)
	kill -9 "$(field executor_pid)"
	wait_restarted "${r0:-0}" || fail "executor not restarted"
	echo go >&9
	exec 9>&-
	wait $tenant
}

# over_quota_refused: an allocation of 10 GiB under an 8 GiB mem_limit is refused (OOO_ELIMIT)
# with a reason naming mem_limit; sets $quota_reason to it.
over_quota_refused() {
	out=$("$build/tests/gpu/buf_check" "$sock" alloc 10737418240) || fail "buf_check alloc exited $?: $out"
	case $out in
	"result -1003 "*mem_limit*) ;;
	*) fail "10 GiB over an 8 GiB mem_limit: $out" ;;
	esac
	quota_reason=${out#result -1003 }
}

# SIGTERM oood, which must exit 0, and remove the run directory. Under make asan (a BUILD of
# sanitized binaries) nothing the sanitizers found in oood or its executors may be in its log.
gpu_stop() {
	kill -TERM "$daemon"
	wait "$daemon" || fail "oood exited with $?"
	if grep -q 'Sanitizer\|runtime error' "$rundir/oood.log"; then
		grep -A20 'Sanitizer\|runtime error' "$rundir/oood.log" | head -60
		echo "$name: FAIL: the sanitizers reported errors in oood's log"
		exit 1
	fi
	rm -rf "$rundir"
}
