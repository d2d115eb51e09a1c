# fakecuda_lib.sh: the shared set-up of the test_fakecuda*.sh scripts (sourced, not run): the stand-in
# driver BUILD/tests/fakecuda/libcuda.so.1 (tests/fakecuda/fakecuda.c) as $libcuda, the tests/gpu helpers
# they run, and ok, fake_stop, poke_ptx and hang_case. The caller sets `name` and `build` and has sourced
# tests/gpu/lib.sh.
fake=$(cd "$build" 2>/dev/null && pwd)/tests/fakecuda/libcuda.so.1
[ -f "$fake" ] || { echo "$name: FAIL: $fake is not built"; exit 1; }
for b in dp_check buf_check launch_check; do
	[ -x "$build/tests/gpu/$b" ] || { echo "$name: FAIL: $build/tests/gpu/$b is not built"; exit 1; }
done
libcuda=$fake
passed=0
ok() {
	echo "$name: $*: ok"
	passed=$((passed + 1))
}

# stop: oood exits 0 and, under make asan, nothing the sanitizers found in oood or its executors (gpu_stop)
fake_stop() {
	gpu_stop
	ok "oood stopped cleanly, no sanitizer report in its log"
}

# poke_ptx: $rundir/poke.ptx, a kernel that writes where its pointer says (the null page faults: the
# stand-in's one modelled fault)
poke_ptx() {
	printf '%s\n' '.version 7.8' '.target sm_90' '.address_size 64' '.visible .entry poke(.param .u64 p)' '{' \
		' .reg .b64 a;' ' .reg .b32 v;' ' ld.param.u64 a, [p];' ' cvta.to.global.u64 a, a;' ' mov.u32 v, 1;' \
		' st.global.u32 [a], v;' ' ret;' '}' >"$rundir/poke.ptx"
	chmod 644 "$rundir/poke.ptx"
}

# hang_case [MODE]: launch_check hang [MODE] at a 1000 ms limit (the stand-in's modelled hang), and the
# executor replaced after it; sets $out (fz: the fuse setting, for the messages)
hang_case() {
	r0=$(field restarts)
	out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" hang "$here/../gpu/kernels/hang.ptx" 1000 ${1:-} 2>&1) ||
		fail "launch_check hang ${1:-} (fuse = ${fz:-yes}): $out"
	echo "$out" | grep -q '^ok' || fail "launch_check hang ${1:-} (fuse = ${fz:-yes}): $out"
	wait_restarted "$r0" ||
		fail "the hung executor was not replaced (${1:-sync}, fuse = ${fz:-yes}): $(field state), $(field restarts) restarts"
}
