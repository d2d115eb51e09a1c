#!/bin/sh
# test_mps.sh BUILD: MPS control and native leases, end to end, with the test
# double tests/mps/fake-mps-control in place of nvidia-cuda-mps-control:
# oood starts and supervises it, formats and checks its commands, grants
# leases within the reservations (sum of shares <= 100% per GPU, at most
# max_clients clients), hands ooo-run the environment, releases a lease when
# its process exits, evicts, restarts a crashed control daemon and stops it
# last at shutdown. Needs no GPU and no root.
set -u
build=${1:-build}
b=$(cd "$build" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
fake="$src/tests/mps/fake-mps-control"
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { # check DESC CMD...: passes when CMD succeeds
	_desc=$1; shift
	if "$@"; then ok "$_desc"; else bad "$_desc"; fi
}
dir=$(mktemp -d /tmp/ooo-mps.XXXXXX)
chmod 755 "$dir"
export OOO_RUNDIR="$dir"
ctl="$b/oooctl"
run="$b/ooo-run"
pipe="$dir/mps/pipe"
cleanup() {
	[ -n "${dpid:-}" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	for p in $(cat "$dir"/kids 2>/dev/null); do kill "$p" 2>/dev/null; done
	[ -e "$pipe/nvidia-cuda-mps-control.pid" ] && kill "$(cat "$pipe/nvidia-cuda-mps-control.pid")" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

# a native tenant: registers with the fake as an MPS client (unless told not
# to), writes its environment, then waits to be killed or for $2 seconds
cat >"$dir/tenant" <<'EOF'
#!/bin/sh
[ "${1:-}" = noclient ] || echo $$ >>"$CUDA_MPS_PIPE_DIRECTORY/fake.clients"
env | grep -E '^(CUDA_|OOO_LEASE)' | sort >"$OOO_TEST_DIR/env.$$"
echo $$ >>"$OOO_TEST_DIR/kids"
echo $$ >"$OOO_TEST_DIR/started.$OOO_TEST_TAG"
exec sleep "${2:-600}"
EOF
chmod 755 "$dir/tenant"
export OOO_TEST_DIR="$dir"

conf() { # conf EXTRA_MPS_KEYS [EXTRA_CLASS_TEXT]
	printf '[daemon]\nexecutor = no\nshutdown_grace_ms = 200\n[telemetry]\nenabled = no\n[mps]\ncontrol = %s\ndevices = 2\nstop_grace_ms = 500\nevict_grace_ms = 300\n%b\n[class default]\nmatch_uid = *\nsm_share = 60\n%b\n' \
		"$fake" "$1" "${2:-}" >"$dir/oood.conf"
}
start_oood() {
	"$b/oood" -f --rundir "$dir" -c "$dir/oood.conf" >"$dir/log" 2>&1 &
	dpid=$!
	for _ in $(seq 100); do [ -S "$dir/admin.sock" ] && return 0; sleep 0.05; done
	return 1
}
stop_oood() {
	kill -TERM "$dpid" 2>/dev/null
	wait "$dpid"
	rc=$?
	dpid=
	return $rc
}
# lease TAG OOO-RUN-ARGS...: start a tenant under ooo-run in the background; $tpid its pid once started
lease() {
	tag=$1; shift
	rm -f "$dir/started.$tag"
	OOO_TEST_TAG=$tag "$run" "$@" >"$dir/run.$tag" 2>&1 &
	tpid=$!
	echo $tpid >>"$dir/kids"
	for _ in $(seq 100); do
		[ -e "$dir/started.$tag" ] && return 0
		kill -0 $tpid 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
# refused TAG OOO-RUN-ARGS...: ooo-run must exit 69 with a reason
refused() {
	tag=$1; shift
	OOO_TEST_TAG=$tag "$run" "$@" >"$dir/run.$tag" 2>&1
	[ $? -eq 69 ]
}
leases_json() { "$ctl" --json leases; }
nleases() { leases_json | grep -c '"command"'; }
wait_leases() { # wait_leases N
	for _ in $(seq 100); do [ "$(nleases)" -eq "$1" ] && return 0; sleep 0.05; done
	return 1
}
gone() { for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.05; done; return 1; }

# ---- start, supervise ------------------------------------------------------------------
conf "" "max_leases = 8"
start_oood || { bad "oood did not start"; sed 's/^/  | /' "$dir/log"; echo "$pass passed, $fail failed"; exit 1; }
"$ctl" mps | grep -q '^mps *running' && ok "oood started the control daemon and it answers" || { bad "mps not running"; "$ctl" mps; }
check "the control daemon runs in the foreground in multi-user mode (-f -M)" grep -qx -- "-f -M" "$pipe/fake.args"
cpid=$(cat "$pipe/nvidia-cuda-mps-control.pid")
"$ctl" --json mps | grep -q "\"pid\": $cpid" && ok "oooctl mps shows the control daemon's pid" || bad "oooctl mps pid"

# ---- a lease and its environment ------------------------------------------------------------
lease a --sm 25 --mem 2G --priority below -- "$dir/tenant" || bad "ooo-run did not start the tenant: $(cat "$dir/run.a")"
a=$tpid
env_a="$dir/env.$a"
check "the command runs in ooo-run's own process (the leased pid)" test -s "$env_a"
check "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25" grep -qx CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25 "$env_a"
check "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2G" grep -qx CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2G "$env_a"
check "CUDA_MPS_CLIENT_PRIORITY=1 for --priority below" grep -qx CUDA_MPS_CLIENT_PRIORITY=1 "$env_a"
check "CUDA_MPS_PIPE_DIRECTORY is oood's" grep -qx "CUDA_MPS_PIPE_DIRECTORY=$pipe" "$env_a"
check "CUDA_VISIBLE_DEVICES names the leased GPU" grep -qx CUDA_VISIBLE_DEVICES=0 "$env_a"
leases_json | grep -q "\"pid\": $a," && ok "oooctl leases lists the pid" || bad "lease of $a not listed"

# ---- reservations -------------------------------------------------------------------------
lease d --device 0 --sm 50 -- "$dir/tenant" && d=$tpid || bad "25% + 50% on GPU 0: $(cat "$dir/run.d")"
refused b2 --device 0 --sm 30 -- "$dir/tenant" && grep -q oversubscribe "$dir/run.b2" &&
	ok "a lease that would oversubscribe GPU 0 is refused (exit 69): $(cat "$dir/run.b2")" || bad "oversubscription: $(cat "$dir/run.b2")"
lease c --sm 60 -- "$dir/tenant" && c=$tpid || bad "placement: $(cat "$dir/run.c")"
check "a lease without --device goes to the least reserved GPU" grep -qx CUDA_VISIBLE_DEVICES=1 "$dir/env.$c"
"$ctl" mps | grep -q '^gpu0 *75% reserved, 2 leases' && ok "oooctl mps: GPU 0 75% reserved by 2 leases" || { bad "gpu0 accounting"; "$ctl" mps; }
refused e --sm 70 -- "$dir/tenant" && grep -q "at most 60%" "$dir/run.e" && ok "--sm above the class's sm_share is refused" || bad "sm_share: $(cat "$dir/run.e")"
refused e2 --device 5 -- "$dir/tenant" && grep -q "no GPU 5" "$dir/run.e2" && ok "--device beyond the GPUs is refused" || bad "device 5: $(cat "$dir/run.e2")"
refused e3 --class nosuch -- "$dir/tenant" && grep -q "does not exist" "$dir/run.e3" && ok "an unknown --class is refused" || bad "class: $(cat "$dir/run.e3")"
refused e4 --mem 64G -- "$dir/tenant" && grep -q "mem_limit" "$dir/run.e4" && ok "--mem above mem_limit is refused" || bad "mem: $(cat "$dir/run.e4")"
lease e5 -- "$dir/tenant" && grep -qx CUDA_VISIBLE_DEVICES=1 "$dir/env.$tpid" &&
	ok "a default-share lease (native_sm 25%) goes where it fits best (GPU 1)" || bad "e5: $(cat "$dir/run.e5")"
wait_leases 4 && ok "4 leases live" || bad "expected 4 leases, $(nleases)"

# ---- release on exit ------------------------------------------------------------------------
kill "$d"
wait_leases 3 && ok "the lease is released when its process exits" || bad "lease of $d not released"
grep -q "lease .*pid $d.* released: process exited" "$dir/log" && ok "the release is logged" || bad "release not logged"
lease f --device 0 --sm 50 -- "$dir/tenant" && ok "the released share can be leased again" || bad "re-lease: $(cat "$dir/run.f")"

# ---- evict ---------------------------------------------------------------------------------------
"$ctl" evict "$a" >"$dir/evict.a" 2>&1 && grep -q terminate_client "$dir/evict.a" &&
	ok "oooctl evict: terminate_client for an MPS client: $(cat "$dir/evict.a")" || bad "evict: $(cat "$dir/evict.a")"
gone "$a" && ok "the evicted client exited" || bad "$a still running"
grep -q "terminate_client $cpid $a" "$pipe/fake.log" && ok "terminate_client named its server and pid" || bad "terminate_client not sent: $(cat "$pipe/fake.log")"
lease g --sm 10 -- "$dir/tenant" noclient && g=$tpid || bad "lease g: $(cat "$dir/run.g")"
"$ctl" evict --grace 200 "$g" >"$dir/evict.g" 2>&1 && grep -q "not an MPS client" "$dir/evict.g" &&
	ok "evict of a leased process that is not an MPS client: SIGTERM" || bad "evict g: $(cat "$dir/evict.g")"
gone "$g" && ok "it exited" || bad "$g still running"
"$ctl" evict $$ >"$dir/evict.x" 2>&1
[ $? -eq 1 ] && grep -q "holds no lease" "$dir/evict.x" && ok "evict of a pid without a lease is refused (exit 1)" || bad "evict non-lease: $(cat "$dir/evict.x")"
"$ctl" evict abc >/dev/null 2>&1
[ $? -eq 2 ] && ok "oooctl evict abc is a usage error (exit 2)" || bad "evict abc"

# ---- control commands ----------------------------------------------------------------------------
"$ctl" mps run get_server_list | grep -qx "$cpid" && ok "mps run get_server_list" || bad "get_server_list"
"$ctl" mps run set_default_active_thread_percentage 50 | grep -qx 50.0 && ok "mps run set_default_active_thread_percentage 50 (checked echo)" || bad "set pct"
"$ctl" mps run set_default_client_priority 1 >/dev/null && ok "mps run set_default_client_priority 1" || bad "priority"
"$ctl" mps run set_default_device_pinned_mem_limit 0 2G >/dev/null && ok "mps run set_default_device_pinned_mem_limit 0 2G" || bad "mem"
"$ctl" mps run get_client_list 1 >"$dir/o" 2>&1
[ $? -eq 1 ] && grep -q "Server 1 not found" "$dir/o" && ok "a 'Server N not found' reply is an error (exit 1)" || bad "not found: $(cat "$dir/o")"
"$ctl" mps run set_default_active_thread_percentage 200 >"$dir/o" 2>&1
[ $? -eq 1 ] && grep -q "percentage" "$dir/o" && ok "an out-of-range percentage is refused before it reaches MPS" || bad "pct 200: $(cat "$dir/o")"
"$ctl" mps run frobnicate >"$dir/o" 2>&1
[ $? -eq 1 ] && grep -q "unsupported command" "$dir/o" && ok "an unsupported command is refused" || bad "frobnicate: $(cat "$dir/o")"
"$ctl" mps run quit >"$dir/o" 2>&1
[ $? -eq 1 ] && "$ctl" mps | grep -q '^mps *running' && ok "quit is refused while oood owns MPS" || bad "quit: $(cat "$dir/o")"
grep -q "^frobnicate" "$pipe/fake.log" && bad "a refused command reached MPS" || ok "refused commands never reach the control program"
grep -qx "set_default_device_pinned_mem_limit 0 2G" "$pipe/fake.log" && ok "commands are sent as formatted" || bad "format: $(tail -3 "$pipe/fake.log")"

# ---- ooo-run's own errors -------------------------------------------------------------------------
"$run" --sm 0 -- true >/dev/null 2>&1; [ $? -eq 64 ] && ok "ooo-run --sm 0: usage error 64" || bad "--sm 0"
"$run" --mem 10 -- true >/dev/null 2>&1; [ $? -eq 64 ] && ok "ooo-run --mem 10: usage error 64" || bad "--mem 10"
"$run" >/dev/null 2>&1; [ $? -eq 64 ] && ok "ooo-run without a command: 64" || bad "no command"
"$run" --sm 5 -- /nonexistent/cmd >/dev/null 2>&1; [ $? -eq 127 ] && ok "ooo-run of a missing command: 127" || bad "missing command"
"$run" --help | grep -q -- "--sm PCT" && ok "ooo-run --help" || bad "--help"

# ---- crash and restart of the control daemon -----------------------------------------------------
: >"$pipe/fake.crash"
for _ in $(seq 100); do grep -q "restart 1 in" "$dir/log" && break; sleep 0.05; done
grep -q "exited with status 3; restart 1 in" "$dir/log" && ok "a crashed control daemon is seen at once" || bad "crash not seen"
for _ in $(seq 120); do "$ctl" mps | grep -q '^mps *running' && break; sleep 0.05; done
"$ctl" mps | grep -q "1 restarts" && ok "and restarted after its backoff" || { bad "not restarted"; "$ctl" mps; }

# ---- a hung control program: one 3 s timeout, then evict falls back to signals -----------------
: >"$pipe/fake.hang"
lease q --sm 5 -- "$dir/tenant" && q=$tpid || bad "q: $(cat "$dir/run.q")"
t0=$(date +%s)
"$ctl" --timeout 20000 evict "$q" >"$dir/evict.q" 2>&1
t1=$(date +%s)
grep -q "no answer within 3 s" "$dir/evict.q" && grep -q "SIGTERM sent" "$dir/evict.q" &&
	ok "a hung control program: evict gives up after 3 s and signals ($((t1 - t0)) s)" || bad "hung: $(cat "$dir/evict.q")"
[ $((t1 - t0)) -le 6 ] && ok "the loop was blocked for at most one command's limit" || bad "evict took $((t1 - t0)) s"
gone "$q" && ok "the signalled tenant exited" || bad "$q still running"
rm -f "$pipe/fake.hang"
sleep 0.2
t0=$(date +%s)
"$ctl" mps run get_server_list >"$dir/o" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "refused for 10 s" "$dir/o" && [ $(( $(date +%s) - t0 )) -le 1 ] &&
	ok "commands are refused at once for a while after a timeout" || bad "after hang: $rc $(cat "$dir/o")"
for _ in $(seq 150); do "$ctl" mps run get_server_list >/dev/null 2>&1 && break; sleep 0.1; done
"$ctl" mps run get_server_list >/dev/null 2>&1 && ok "and answered again once the stall is over" || bad "still refused"

# ---- shutdown: leased clients get stop_grace_ms, then terminate_client, then quit ---------------
n=$(nleases)
stop_oood && ok "oood exits 0 with $n leases live" || bad "oood exit status"
check "terminate_client was sent at shutdown" grep -q "^terminate_client" "$pipe/fake.log"
check "quit was sent last" sh -c "tail -1 '$pipe/fake.log' | grep -qx quit"
[ -e "$pipe/nvidia-cuda-mps-control.pid" ] && bad "the control daemon outlived oood" || ok "the control daemon is gone"
gone "$c" && ok "leased clients were terminated" || bad "$c survived"

# ---- limits: max_clients, max_leases, executor counted -------------------------------------------
conf "max_clients = 2\\nexecutor_reserve = 50" "native_sm = 30\\nmax_leases = 3"
start_oood || bad "restart oood"
lease h --device 0 -- "$dir/tenant" && ok "native_sm (30%) as the default share" || bad "h: $(cat "$dir/run.h")"
grep -qx CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 "$dir/env.$tpid" && ok "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30" || bad "native_sm env"
lease i --device 0 --sm 10 -- "$dir/tenant" || bad "i: $(cat "$dir/run.i")"
refused j --device 0 --sm 5 -- "$dir/tenant" && grep -q "max_clients = 2" "$dir/run.j" && ok "max_clients: the third client of GPU 0 is refused" || bad "max_clients: $(cat "$dir/run.j")"
refused k --device 1 --sm 60 -- "$dir/tenant" && grep -q "oversubscribe" "$dir/run.k" && ok "executor_reserve counts against the 100%" || bad "reserve: $(cat "$dir/run.k")"
lease l --device 1 --sm 10 -- "$dir/tenant" || bad "l: $(cat "$dir/run.l")"
refused m --device 1 --sm 10 -- "$dir/tenant" && grep -q "max_leases = 3" "$dir/run.m" && ok "max_leases per tenant" || bad "max_leases: $(cat "$dir/run.m")"

# ---- oood killed: the next one adopts the control daemon it left ----------------------------------
cpid=$(cat "$pipe/nvidia-cuda-mps-control.pid")
kill -9 "$dpid"; wait "$dpid" 2>/dev/null; dpid=
kill -0 "$cpid" 2>/dev/null && ok "the control daemon survives oood's SIGKILL" || bad "control daemon died with oood"
start_oood || bad "oood after SIGKILL"
for _ in $(seq 100); do grep -q adopted "$dir/log" && break; sleep 0.05; done
grep -q "adopted control daemon pid $cpid" "$dir/log" && ok "the new oood adopts it instead of starting a second" || bad "not adopted: $(grep mps "$dir/log")"
"$ctl" mps | grep -q '^mps *running' && ok "and serves leases through it" || bad "adopted: not running"
stop_oood || bad "second oood exit status"
gone "$cpid" && ok "the adopted control daemon is quit at shutdown" || bad "adopted control daemon still running"

# ---- off: enabled = no and auto without the program ------------------------------------------------
printf '[daemon]\nexecutor = no\n[telemetry]\nenabled = no\n[mps]\nenabled = no\n[class default]\nmatch_uid = *\n' >"$dir/oood.conf"
start_oood || bad "third oood"
refused n -- "$dir/tenant" && grep -q "MPS is not running" "$dir/run.n" && ok "enabled = no: leases refused with the reason" || bad "off: $(cat "$dir/run.n")"
"$ctl" mps | grep -q '^mps *off: \[mps\] enabled = no' && ok "oooctl mps says why it is off" || { bad "mps off"; "$ctl" mps; }
stop_oood || bad "third oood exit status"
printf '[daemon]\nexecutor = no\n[telemetry]\nenabled = no\n[mps]\ncontrol = /nonexistent/nvidia-cuda-mps-control\n[class default]\nmatch_uid = *\n' >"$dir/oood.conf"
start_oood || bad "fourth oood"
"$ctl" mps | grep -q '^mps *failed: \[mps\] control = /nonexistent/nvidia-cuda-mps-control is not an executable' &&
	ok "a control path that is not an executable: failed, with the path" || { bad "bad control path"; "$ctl" mps; }
refused o -- "$dir/tenant" && grep -q "not an executable" "$dir/run.o" && ok "and leases say why" || bad "o: $(cat "$dir/run.o")"
stop_oood || bad "fourth oood exit status"
found=
for d in /usr/local/nvidia/bin /usr/bin /usr/sbin /usr/local/bin /usr/local/cuda/bin; do
	[ -x "$d/nvidia-cuda-mps-control" ] && found=$d
done
if [ -z "$found" ]; then
	printf '[daemon]\nexecutor = no\n[telemetry]\nenabled = no\n[class default]\nmatch_uid = *\n' >"$dir/oood.conf"
	start_oood || bad "fifth oood"
	"$ctl" mps | grep -q '^mps *off: nvidia-cuda-mps-control not found in' && ok "enabled = auto where there is no MPS: off" || { bad "auto"; "$ctl" mps; }
	stop_oood || bad "fifth oood exit status"
else
	echo "info: $found has nvidia-cuda-mps-control: the auto-off case is not checked here"
fi
printf '[mps]\nenabled = maybe\n' >"$dir/bad.conf"
"$b/oood" -n -c "$dir/bad.conf" >"$dir/o" 2>&1
grep -q "auto, yes or no" "$dir/o" && ok "a bad [mps] value is a config error" || bad "config: $(cat "$dir/o")"

[ $fail -eq 0 ] || sed 's/^/  | /' "$dir/log" | tail -40
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
