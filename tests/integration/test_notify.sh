#!/bin/sh
# test_notify.sh BUILD: what oood tells systemd (Type=notify, WatchdogSec=),
# without systemd: a private oood on the stand-in driver
# (tests/fakecuda) with NOTIFY_SOCKET on a datagram socket this test reads
# (python3) and WATCHDOG_USEC=200000. Checks READY=1, WATCHDOG=1 again and
# again, STATUS= lines (sessions, GPUs ready, the policy generation, and at
# shutdown), RELOADING=1 then READY=1 around `oooctl reload` (which fails
# on a file that does not parse: the unit's ExecReload), that no child of
# oood inherits WATCHDOG_USEC, that a receiver that stops reading never
# stalls oood's loop, and STOPPING=1 at SIGTERM. Every wait is for an
# event, with a deadline far above its usual time (a loaded 2-core machine).
set -u
build=${1:-build}
name=test_notify
here=$(dirname "$0")
command -v python3 >/dev/null 2>&1 || { echo "$name: SKIP: python3 is needed to read the notify socket"; exit 77; }
. "$here/../gpu/lib.sh"
. "$here/fakecuda_lib.sh"

nd=$(mktemp -d /tmp/ooo-notify-XXXXXX)
recv=
cleanup() {
	[ -n "${daemon:-}" ] && kill -9 "$daemon" 2>/dev/null
	[ -n "$recv" ] && kill "$recv" 2>/dev/null
	rm -rf "$nd" "${rundir:-}"
}
trap cleanup EXIT

# The receiver: one line per datagram in $nd/msgs; while $nd/pause exists it reads nothing.
cat >"$nd/recv.py" <<'PY'
import os, socket, sys, time
d = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(d + "/notify")
s.settimeout(0.05)
with open(d + "/msgs", "a") as out:
    open(d + "/bound", "w").close()
    while True:
        if os.path.exists(d + "/pause"):
            time.sleep(0.05)
            continue
        try:
            m = s.recv(4096)
        except socket.timeout:
            continue
        out.write(m.decode(errors="replace").replace("\n", "\\n") + "\n")
        out.flush()
PY
python3 "$nd/recv.py" "$nd" &
recv=$!
for _ in $(seq 200); do [ -e "$nd/bound" ] && break; sleep 0.1; done
[ -e "$nd/bound" ] || { echo "$name: FAIL: the receiver did not bind $nd/notify"; exit 1; }

# wait_msg PATTERN [N]: wait (60 s at most) until $nd/msgs has N lines (default 1) matching PATTERN
count() { grep -c -- "$1" "$nd/msgs" 2>/dev/null || true; }
wait_msg() {
	for _ in $(seq 600); do
		[ "$(count "$1")" -ge "${2:-1}" ] && return 0
		sleep 0.1
	done
	return 1
}
msgs() { tail -20 "$nd/msgs" | sed 's/^/  > /'; }

export NOTIFY_SOCKET="$nd/notify" WATCHDOG_USEC=200000
gpu_start ''
unset NOTIFY_SOCKET WATCHDOG_USEC
ok "oood started with NOTIFY_SOCKET and WATCHDOG_USEC=200000, executor ready"

wait_msg '^READY=1$' || fail "no READY=1 $(msgs)"
ok "READY=1"
wait_msg '^WATCHDOG=1$' 5 || fail "fewer than 5 WATCHDOG=1: $(count '^WATCHDOG=1$') $(msgs)"
grep -q 'less than two ticks' "$rundir/oood.log" || fail "no warning that 200 ms is shorter than two ticks"
ok "WATCHDOG=1 again and again ($(count '^WATCHDOG=1$') so far), the short interval logged"
wait_msg '^STATUS=0 sessions, 1 of 1 GPUs ready, policy generation 1$' ||
	fail "no STATUS= line with the ready GPU $(msgs)"
ok "STATUS= line: $(grep '^STATUS=' "$nd/msgs" | tail -1)"

# the environment is oood's alone: an executor (oood's child) has no WATCHDOG_USEC
epid=$(field executor_pid)
if [ -n "$epid" ] && [ -r "/proc/$epid/environ" ] && tr '\0' '\n' <"/proc/$epid/environ" >/dev/null 2>&1; then
	tr '\0' '\n' <"/proc/$epid/environ" | grep -q '^WATCHDOG_USEC=' && fail "executor $epid inherited WATCHDOG_USEC"
	tr '\0' '\n' <"/proc/$epid/environ" | grep -q '^NOTIFY_SOCKET=' || fail "executor $epid: environment not read"
	ok "the executor did not inherit WATCHDOG_USEC"
else
	echo "$name: the executor's environment is not readable here (not root): not checked"
fi

# a session shows in the status line
"$build/tests/gpu/buf_check" "$sock" hold 1048576 >"$nd/hold.out" 2>&1 &
holder=$!
wait_msg '^STATUS=1 sessions, 1 of 1 GPUs ready' || fail "no STATUS= line with 1 session $(msgs) $(cat "$nd/hold.out")"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
wait_msg '^STATUS=0 sessions, 1 of 1 GPUs ready' 2 || fail "no STATUS= line after the session closed $(msgs)"
ok "STATUS= follows sessions opening and closing"

# reload: RELOADING=1, READY=1 and the new generation; a bad file fails oooctl reload (ExecReload)
$ctl reload >/dev/null || fail "oooctl reload of a good file failed"
wait_msg '^RELOADING=1$' || fail "no RELOADING=1 $(msgs)"
wait_msg '^READY=1$' 2 || fail "no READY=1 after the reload $(msgs)"
wait_msg '^STATUS=.*policy generation 2$' || fail "no STATUS= line with generation 2 $(msgs)"
cp "$rundir/oood.conf" "$nd/good.conf"
echo 'not an ini line' >>"$rundir/oood.conf"
if out=$($ctl reload 2>&1); then
	fail "oooctl reload of a bad file exited 0: $out"
fi
echo "$out" | grep -q 'keeping the current policy' || fail "oooctl reload of a bad file: $out"
wait_msg '^RELOADING=1$' 2 || fail "no RELOADING=1 for the failed reload $(msgs)"
wait_msg '^READY=1$' 3 || fail "no READY=1 after the failed reload $(msgs)"
cp "$nd/good.conf" "$rundir/oood.conf"
ok "reload: RELOADING=1, READY=1, STATUS= generation 2; a bad file fails oooctl reload ($out)"

# a receiver that stops reading: oood's sends fail (queue full) instead of blocking the loop
qlen=$(cat /proc/sys/net/unix/max_dgram_qlen 2>/dev/null || echo 10)
if [ "$qlen" -le 64 ]; then
	touch "$nd/pause"
	for _ in $(seq 600); do grep -q 'cannot notify the service manager' "$rundir/oood.log" && break; sleep 0.1; done
	grep -q 'cannot notify the service manager.*Resource temporarily unavailable' "$rundir/oood.log" ||
		fail "the notify queue never filled ($qlen datagrams)"
	[ "$(grep -c 'cannot notify the service manager' "$rundir/oood.log")" = 1 ] || fail "a full queue logged more than once"
	timeout 30 $ctl ping -c 3 >/dev/null || fail "oood's loop does not answer while the notify socket is full"
	rm -f "$nd/pause"
	for _ in $(seq 600); do grep -q 'notifying the service manager again' "$rundir/oood.log" && break; sleep 0.1; done
	grep -q 'notifying the service manager again' "$rundir/oood.log" || fail "no recovery once the receiver reads"
	ok "a full notify socket: oood answers pings, logs once, and recovers"
else
	echo "$name: net.unix.max_dgram_qlen is $qlen: the full-queue check would take minutes, not run"
fi

# SIGTERM: STOPPING=1 and a last STATUS= line, then a clean exit
fake_stop
daemon=
wait_msg '^STOPPING=1$' || fail "no STOPPING=1 $(msgs)"
wait_msg '^STATUS=stopping: ' || fail "no STATUS=stopping line $(msgs)"
[ "$(grep -n '^READY=1$' "$nd/msgs" | head -1 | cut -d: -f1)" -lt "$(grep -n '^STOPPING=1$' "$nd/msgs" | cut -d: -f1)" ] ||
	fail "STOPPING=1 before READY=1 $(msgs)"
ok "SIGTERM: STOPPING=1, $(grep '^STATUS=stopping' "$nd/msgs" | tail -1), clean exit"

# WATCHDOG_PID naming another process: no watchdog (sd_watchdog_enabled). The first tick sends
# WATCHDOG=1 before its STATUS= line when the watchdog is on, so that line is the sign to look.
: >"$nd/msgs"
mkdir "$nd/run2"
printf '[mps]\nenabled = no\n[class default]\nmatch_uid = *\n' >"$nd/run2/oood.conf"
NOTIFY_SOCKET="$nd/notify" WATCHDOG_USEC=200000 WATCHDOG_PID=1 \
	"$build/oood" -f -c "$nd/run2/oood.conf" --rundir "$nd/run2" 2>"$nd/run2/oood.log" &
daemon=$!
rundir=$nd/run2
wait_msg '^STATUS=' || fail "no STATUS= line from the second oood $(msgs)"
[ "$(count '^WATCHDOG=1$')" = 0 ] || fail "WATCHDOG=1 sent with WATCHDOG_PID=1 $(msgs)"
kill -TERM "$daemon"
wait "$daemon" || fail "the second oood exited with $?"
daemon=
ok "WATCHDOG_PID of another process: no WATCHDOG=1 ($(grep '^STATUS=' "$nd/msgs" | head -1))"
echo "$passed passed, 0 failed"
