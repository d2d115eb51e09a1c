#!/bin/sh
# test_fakecuda_limits.sh BUILD: on the stand-in driver (tests/fakecuda, as test_fakecuda.sh), what
# takes seconds: a 2 s module load and frees, closes and queue destroys behind a 2 s kernel do not
# stall the other sessions of a serving thread; kernels that never end (the time limit, fused and
# not, with and without a sync behind them), hang strikes, and a hang beside another uid's long work
# on the other serving thread, counted against neither. Split from test_fakecuda.sh so that each
# script ends well within tests/run.sh's 300 s under the sanitizers.
set -u
build=${1:-build}
name=test_fakecuda_limits
here=$(dirname "$0")
. "$here/../gpu/lib.sh"
. "$here/fakecuda_lib.sh"
# stall the other sessions of its serving thread: the load runs without the thread's lock
FAKECUDA_SLOW_LOAD_MS=2000 gpu_start 'max_sessions = 200\n'
{ cat "$(dirname "$0")/../gpu/kernels/hang.ptx"; echo '// fakecuda_slow_load'; } >"$rundir/slow.ptx"
chmod 644 "$rundir/slow.ptx"
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" loadstall "$rundir/slow.ptx" "$(dirname "$0")/../gpu/kernels/hang.ptx" 2>&1) || fail "launch_check loadstall: $out"
echo "$out" | grep -q '^ok' || fail "launch_check loadstall: $out"
ok "$(echo "$out" | grep '^module load')"
fake_stop

# a buffer freed, a session closed (its detach) or a queue destroyed behind a 2 s kernel (the
# stand-in's "slow" one): the executor waits for the kernel without the serving thread's lock (the
# session paused meanwhile), so the thread's other sessions are served; the launch still in the ring
# when the free came is taken first (fuse = no: the kernels on their queues' own streams, not one
# bundle stream)
FAKECUDA_SLOW_MS=2000 gpu_start 'max_sessions = 200\n' 'fuse = no\n'
for how in free close queue; do
	out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" freestall "$(dirname "$0")/../gpu/kernels/hang.ptx" 2000 $how 2>&1) || fail "launch_check freestall $how: $out"
	echo "$out" | grep -q '^ok' || fail "launch_check freestall $how: $out"
	ok "$(echo "$out" | grep '^a [a-z]* behind')"
done
fake_stop

# a kernel that never ends (the stand-in's modelled hang): past kernel_time_limit_ms its tenant gets
# OOO_EHUNG, the executor goes without another CUDA call (a synchronizing one would block for ever) and
# is replaced; the other tenant's buffer is intact and both tenants' kernels run again. With fuse = yes
# the kernel runs in a bundle; with fuse = no on its queue's own stream, timed by the sync behind it.
for fz in yes no; do
	gpu_start 'max_sessions = 200\n' "kernel_time_limit_ms = 1000\nfuse = $fz\n"
	hang_case
	echo "$out" | grep -q '^hung kernel: -1011 ' || fail "fuse = $fz: the hung tenant did not get OOO_EHUNG: $out"
	grep -q 'past kernel_time_limit_ms 1000' "$rundir/oood.log" || fail "oood's log does not say why the executor went (fuse = $fz): $(tail -5 "$rundir/oood.log")"
	# the executor named the hung work's session: the hang counts against its uid (a bundle, or the queue's own stream)
	grep -q "uid $(id -u): hang 1 within hang_window_s 600 s (hang_strikes 3)" "$rundir/oood.log" ||
		fail "the hang was not counted against uid $(id -u) (fuse = $fz): $(grep -i hang "$rundir/oood.log" | tail -4)"
	ok "fuse = $fz: a kernel that never ends: $(echo "$out" | grep '^hung kernel'); the executor replaced, the other tenant's buffer intact, both tenants' kernels run again"
	# its tenant leaves at once: the buffer free (a quiesce) that waits on the hung work ends the same way
	# once the work is overdue (a bundle; with fuse = no a launch on its queue's own stream with no sync
	# behind it, timed by the wait itself from its start: dp_sync's own_overdue)
	hang_case exit
	# the session was gone when the executor reported the hang: it counts against its uid all the same
	grep -q "uid $(id -u): hang 2 within hang_window_s 600 s (hang_strikes 3)" "$rundir/oood.log" ||
		fail "the hang of a tenant that left was not counted: $(grep -i 'hang' "$rundir/oood.log" | tail -4)"
	ok "fuse = $fz: $(echo "$out" | grep '^hung kernel'); counted against uid $(id -u) (2 of hang_strikes 3)"
	# no sync behind the launch, its tenant still there and idle: still timed (fuse = no: a silent
	# pending after a quarter of the limit, watch_tail, timed from the launch) and counted against its uid (pardoned first:
	# a third hang would bar uid 0, the other tenant's too)
	out=$($ctl pardon "$(id -u)" 2>&1) || fail "oooctl pardon: $out"
	hang_case stay
	[ "$(grep -c "uid $(id -u): hang 1 within hang_window_s 600 s (hang_strikes 3)" "$rundir/oood.log")" -eq 2 ] ||
		fail "the hang with no sync behind it was not counted against uid $(id -u) (fuse = $fz): $(grep -i 'hang' "$rundir/oood.log" | tail -4)"
	ok "fuse = $fz: $(echo "$out" | grep '^hung kernel'); counted against uid $(id -u)"
	# its sync comes half the limit after the launch: the executor timed the launch before (with fuse =
	# no through a silent pending, whose OOO_EHUNG goes to the sync behind it: hung_to_sync)
	out=$($ctl pardon "$(id -u)" 2>&1) || fail "oooctl pardon: $out"
	hang_case late
	echo "$out" | grep -q '^hung kernel: -1011 ' || fail "fuse = $fz: the late sync did not get OOO_EHUNG: $out"
	ok "fuse = $fz: a sync half the limit after the launch: $(echo "$out" | grep '^hung kernel')"
	fake_stop
done
# hang strikes: a tenant (uid) whose kernels hang hang_strikes times within hang_window_s may not
# attach a data path for hang_window_s: after the second hang (hang_strikes = 2) its session is closed
# at the restart and a new session's attach is refused with OOO_EHUNG; another uid is not barred;
# oooctl pardon ends the bar.
gpu_start 'max_sessions = 200\n' "kernel_time_limit_ms = 1000\nhang_strikes = 2\nhang_window_s = 600\n"
hang_ptx="$(dirname "$0")/../gpu/kernels/hang.ptx"
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" hang "$hang_ptx" 1000 2>&1) || fail "launch_check hang (first strike): $out"
echo "$out" | grep -q '^ok' || fail "launch_check hang (first strike): $out"
wait_ready || fail "executor not back after the first hang"
grep -q "uid $(id -u): hang 1 within hang_window_s 600 s (hang_strikes 2)" "$rundir/oood.log" ||
	fail "the first hang was not counted against uid $(id -u): $(grep -i hang "$rundir/oood.log" | tail -5)"
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" hang "$hang_ptx" 1000 barred 2>&1) || fail "launch_check hang barred: $out"
echo "$out" | grep -q '^ok' || fail "launch_check hang barred: $out"
wait_ready || fail "executor not back after the second hang"
grep -q "uid $(id -u): 2 hangs or faults within hang_window_s 600 s (hang_strikes 2), the last a hang" "$rundir/oood.log" ||
	fail "the second hang did not bar uid $(id -u): $(grep -i hang "$rundir/oood.log" | tail -5)"
other="the other uid not tried (needs root and setpriv)"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	out=$(timeout 60 setpriv --reuid=4301 --regid=4301 --clear-groups "$build/tests/gpu/dp_check" "$sock" check 2>&1) ||
		fail "uid 4301 after uid 0 was barred: $out"
	other="uid 4301's data path works"
fi
# still barred, until the operator pardons it
out=$(timeout 60 "$build/tests/gpu/dp_check" "$sock" check 2>&1) && fail "a barred tenant attached: $out"
echo "$out" | grep -q "hang_strikes" || fail "the barred tenant's attach did not say why: $out"
out=$($ctl pardon "$(id -u)" 2>&1) || fail "oooctl pardon: $out"
echo "$out" | grep -q "uid $(id -u): 2 hangs forgotten; it was barred" || fail "oooctl pardon said: $out"
out=$(timeout 60 "$build/tests/gpu/dp_check" "$sock" check 2>&1) || fail "the pardoned tenant's data path: $out"
out=$($ctl pardon "$(id -u)" 2>&1) || fail "oooctl pardon (again): $out"
echo "$out" | grep -q "nothing to forget" || fail "a second pardon said: $out"
grep -q "cannot be attached again (uid $(id -u).s kernels hung" "$rundir/oood.log" || fail "the barred session was not closed at the restart"
ok "hang strikes: the second hang of uid $(id -u) (hang_strikes 2): its session closed, a new one refused with OOO_EHUNG until oooctl pardon; $other"
fake_stop

# slow_4301: uid 4301's slow kernel (the stand-in's, FAKECUDA_SLOW_MS) launched and running in the
# background, its output in $slog, its pid in $spid
slow_4301() {
	slog=$rundir/slow.out
	timeout 120 setpriv --reuid=4301 --regid=4301 --clear-groups "$build/tests/gpu/launch_check" "$sock" stall \
		"$hang_ptx" slow >"$slog" 2>&1 &
	spid=$!
	for _ in $(seq 200); do
		grep -q '^launched' "$slog" && break
		sleep 0.05
	done
	grep -q '^launched' "$slog" || fail "uid 4301's slow kernel was not launched: $(cat "$slog")"
}

# a hang beside another tenant's long work, on the other serving thread of one executor (domain =
# shared; shard_sessions = 0: the first session on thread 0, the second on thread 1): uid 4301's kernel
# runs 4 s (the stand-in's "slow" kernel, FAKECUDA_SLOW_MS), past kernel_time_limit_ms 2000, and
# passes it first; uid 0's, launched after it, never ends. The report names both tenants' work (the
# other thread's as that thread published it), so the hang counts against neither (hang_strikes = 1
# would bar at once): a tenant whose work a hang starved is not the one blamed.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	FAKECUDA_SLOW_MS=4000 gpu_start 'max_sessions = 200\ndomain = shared\n' \
		"kernel_time_limit_ms = 2000\nhang_strikes = 1\nserving_threads = 2\nshard_sessions = 0\n"
	slow_4301
	out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" stall "$hang_ptx" hang 2>&1) ||
		fail "launch_check stall hang: $out"
	wait "$spid" || fail "launch_check stall slow (uid 4301): $(cat "$slog")"
	wait_ready || fail "executor not back after the hang"
	grep -q "the hung work was not one known tenant's (sessions of several tenants" "$rundir/oood.log" ||
		fail "the hang beside uid 4301's work: $(grep -i hang "$rundir/oood.log" | tail -5)"
	grep -q "uid [0-9]*: 1 hangs or faults within" "$rundir/oood.log" &&
		fail "a hang was counted against one tenant: $(grep -i hang "$rundir/oood.log" | tail -5)"
	for u in 4301 "$(id -u)"; do
		out=$($ctl pardon "$u" 2>&1) || fail "oooctl pardon $u: $out"
		echo "$out" | grep -q "nothing to forget" || fail "uid $u had hangs counted: $out"
	done
	ok "a hang beside another uid's work past half the limit on the other serving thread: counted against neither ($(sed -n 's/^slow kernel: /uid 4301: /p' "$slog"))"
	fake_stop
else
	echo "$name: a hang beside another uid's work: not tried (needs root and setpriv)"
fi

# a device-side assert (CUDA_ERROR_ASSERT, 710) leaves the context unusable, as a fault does: the
# executor is replaced and its tenant told, not left serving a dead context
FAKECUDA_FAULT_CODE=710 gpu_start '' ''
poke_ptx
r0=$(field restarts)
out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" fault "$rundir/poke.ptx" noresults 2>&1) ||
	fail "launch_check fault (a device-side assert): $out"
echo "$out" | grep -q '^ok' || fail "launch_check fault (a device-side assert): $out"
wait_restarted "$r0" || fail "the executor of a device-side assert was not replaced: $(field state), $(field restarts) restarts"
# a fault of the tenant's kernel, so a strike against its uid (domain uid:N), as any fault
grep -q "uid $(id -u): fault 1 within" "$rundir/oood.log" ||
	fail "a device-side assert was not counted as a fault: $(grep -iE 'fault|assert' "$rundir/oood.log" | tail -5)"
ok "a device-side assert: $(echo "$out" | grep '^faulting'), the executor replaced, a fault strike counted"
fake_stop

# a fault in a shared domain (several uids, one executor) counts against the tenant whose work was on
# the GPU (the executor names the sessions with work in flight, EXEC_MSG_FAULT): alone, uid 0's fault
# is its strike; beside uid 4301's kernel still running (the stand-in's slow kernel), the fault could
# be either's (a sticky error is the whole context's) and counts against neither
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	FAKECUDA_SLOW_MS=4000 gpu_start 'max_sessions = 200\ndomain = shared\n' 'hang_strikes = 3\nhang_window_s = 600\n'
	poke_ptx
	r0=$(field restarts)
	out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" fault "$rundir/poke.ptx" noresults 2>&1) ||
		fail "launch_check fault (shared domain, alone): $out"
	wait_restarted "$r0" || fail "the shared domain's executor was not replaced after a fault"
	grep -q "only uid $(id -u)'s work was on the GPU" "$rundir/oood.log" &&
		grep -q "uid $(id -u): fault 1 within" "$rundir/oood.log" ||
		fail "a fault alone in a shared domain was not counted against its tenant: $(grep -i fault "$rundir/oood.log" | tail -5)"
	ok "domain = shared: a fault with only its tenant's work on the GPU is counted against that tenant"
	# the first fault restarts the executor at once (its tenants wait for it), a second within 60 s
	# after the usual backoff
	grep -q "executor exited with status 4; restart 1 in 0 ms" "$rundir/oood.log" ||
		fail "the first fault did not restart the executor at once: $(grep 'restart [0-9]' "$rundir/oood.log")"
	wait_ready || fail "the shared domain's executor is not back"
	slow_4301
	r0=$(field restarts)
	out=$(timeout 120 "$build/tests/gpu/launch_check" "$sock" fault "$rundir/poke.ptx" noresults 2>&1) ||
		fail "launch_check fault (shared domain, beside uid 4301): $out"
	wait "$spid" || fail "uid 4301's slow kernel: $(cat "$slog")"
	wait_restarted "$r0" || fail "the shared domain's executor was not replaced after the second fault"
	grep -q "faulted; the work on the GPU was several tenants'" "$rundir/oood.log" ||
		fail "a fault beside another uid's work: $(grep -i fault "$rundir/oood.log" | tail -5)"
	[ "$(grep -c "uid $(id -u): fault [0-9]* within" "$rundir/oood.log")" -eq 1 ] &&
		! grep -q "uid 4301: fault" "$rundir/oood.log" ||
		fail "a fault beside another uid's work was counted: $(grep -i fault "$rundir/oood.log" | tail -5)"
	grep -q "executor exited with status 4; restart 2 in 1000 ms" "$rundir/oood.log" ||
		fail "a second fault within 60 s was not backed off: $(grep 'restart [0-9]' "$rundir/oood.log")"
	ok "domain = shared: a fault beside another uid's running kernel counts against neither ($(sed -n 's/^slow kernel: /uid 4301: /p' "$slog"))"
	fake_stop
else
	echo "$name: faults in a shared domain: not tried (needs root and setpriv)"
fi

echo "$passed passed, 0 failed"
