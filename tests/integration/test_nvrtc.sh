#!/bin/sh
# test_nvrtc.sh BUILD: a CUDA C module whose compile goes wrong fails that load only, never the
# executor (issue 38): oood's executor on the stand-in driver (tests/fakecuda/fakecuda.c) with the
# stand-in NVRTC (tests/fakecuda/fakenvrtc.c, first in oood's LD_LIBRARY_PATH: it passes PTX through
# as CUDA C, raises SIGSEGV on "fakenvrtc_crash" and never returns on "fakenvrtc_hang"). A compile
# that crashes, and one that hangs past the helper's 20 s limit (NVRTC_TIME_LIMIT_MS, below oood's
# 30 s watchdog), each fail their load with the reason; the executor is the same process throughout
# (its pid and the restarts count unchanged), another session's launches and syncs go on while
# NVRTC runs, and a good CUDA C module loads and its kernel runs afterwards.
set -u
build=${1:-build}
name=test_nvrtc
. "$(dirname "$0")/../gpu/lib.sh"
fakedir=$(cd "$build" 2>/dev/null && pwd)/tests/fakecuda
for f in "$fakedir/libcuda.so.1" "$fakedir/libnvrtc.so.13" "$build/tests/gpu/launch_check"; do
	[ -e "$f" ] || { echo "$name: FAIL: $f is not built"; exit 1; }
done
libcuda=$fakedir/libcuda.so.1
passed=0
ok() {
	echo "$name: $*: ok"
	passed=$((passed + 1))
}
hang_ptx="$(dirname "$0")/../gpu/kernels/hang.ptx"

# the executor's NVRTC helper opens the library as the executor's uid: a copy it can read (a clone in a
# 0700 directory is root's alone)
libdir=$(mktemp -d /tmp/ooo-nvrtc-XXXXXX)
chmod 755 "$libdir"
cp "$fakedir/libnvrtc.so.13" "$libdir/" && chmod 644 "$libdir/libnvrtc.so.13" || { echo "$name: FAIL: cannot copy the stand-in NVRTC"; exit 1; }
trap 'rm -rf "$libdir"' EXIT
LD_LIBRARY_PATH=$libdir gpu_start 'max_sessions = 200\n'
pid=$(field executor_pid)
r0=$(field restarts)
[ -n "$pid" ] && [ -n "$r0" ] || fail "oooctl devices names no executor pid or restarts count"
for what in crash hang; do
	{ cat "$hang_ptx"; echo "// fakenvrtc_$what"; } >"$rundir/$what.cu"
	chmod 644 "$rundir/$what.cu"
done

# same_executor WHAT: the executor of the start still serves, never replaced
same_executor() {
	[ "$(field executor_pid)" = "$pid" ] && [ "$(field restarts)" = "$r0" ] && [ "$(field state)" = ready ] ||
		fail "$1: the executor was replaced: pid $(field executor_pid) (was $pid)," \
			"$(field restarts) restarts (was $r0), $(field state)"
	ends='has not answered\|executor killed by signal\|executor exited with'
	grep -q "$ends" "$rundir/oood.log" && fail "$1: oood's log tells of the executor's end: $(grep "$ends" "$rundir/oood.log")"
	return 0
}

out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" badcc "$rundir/crash.cu" \
	'NVRTC crashed (signal 11, SIGSEGV) compiling this module' "$hang_ptx" 2>&1) || fail "launch_check badcc (crash): $out"
echo "$out" | grep -q '^ok' || fail "launch_check badcc (crash): $out"
same_executor "NVRTC crashed"
ok "NVRTC crashed: $(echo "$out" | grep '^CUDA C load'); the executor (pid $pid) serves on, CUDA C compiles again"

out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" badcc "$rundir/hang.cu" \
	'NVRTC ran past its 20 s limit compiling this module: stopped' "$hang_ptx" 2>&1) || fail "launch_check badcc (hang): $out"
echo "$out" | grep -q '^ok' || fail "launch_check badcc (hang): $out"
same_executor "NVRTC hung"
ok "NVRTC hung: $(echo "$out" | grep '^CUDA C load'); the executor (pid $pid) serves on, CUDA C compiles again"

# no helper is left behind: the executor has no child
kids=$(ps -o pid= --ppid "$pid" | wc -l)
[ "$kids" -eq 0 ] || fail "the executor has $kids children left: $(ps -o pid,stat,args --ppid "$pid")"
ok "no NVRTC helper left"

gpu_stop
echo "$passed passed, 0 failed"
