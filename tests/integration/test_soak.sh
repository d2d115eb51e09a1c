#!/bin/sh
# test_soak.sh BUILD [SECONDS]: a bounded soak of oood on the stand-in driver (tests/fakecuda): for
# SECONDS (default 90) a loop does, at random from a seeded generator (the seed is printed;
# OOO_SOAK_SEED=N replays its choices), one of: start an ordinary tenant that works at random
# (tests/gpu/soak_check.c worker), SIGKILL one mid-work, SIGKILL the executor (the tenants' domain's,
# or the spare), run a tenant that writes garbage into its session area (indices, flags, entries, the
# header; soak_check rings), one that makes its doorbell descriptors blocking and full and syncs
# (hostile_check bells), one whose kernel faults (the executor is replaced), send malformed datagrams
# on oood.sock and admin.sock (soak_check garbage: random bytes, truncated headers, other versions,
# descriptors where none belong), reload the configuration (oooctl reload, SIGHUP; one in four times
# a file that does not parse). Executor deaths are spaced so that the restart backoff stays at most
# BACKOFF_MAX_MS. Throughout, one checker tenant (soak_check checker, two threads and queues) submits
# rounds of commands and reads back every byte: each completion must come once, with the right data,
# within its time; OOO_EDEVRESET (or OOO_EFAULT, a neighbour's fault in the shared context) for what
# it had in flight when its executor went is counted and the round done again. oood must answer
# oooctl status within STATUS_MAX_MS at every step. Afterwards, once the abusers are gone and the
# executors back: a new tenant's round trips work; no session, tenant or charge is left; oood holds
# exactly the descriptors it held before (with the same executors), and so does each executor;
# oood's VmRSS grew by at most RSS_GROWTH_KB; every executor death was one the soak caused (SIGKILL
# or the faulting kernel: none by another signal); reloads that failed are the ones meant to; and
# oood stops cleanly (no sanitizer report under make asan). Prints the figures.
set -u
build=${1:-build}
secs=${2:-90}
name=test_soak
. "$(dirname "$0")/../gpu/lib.sh"
fake=$(cd "$build" 2>/dev/null && pwd)/tests/fakecuda/libcuda.so.1
sc=$(cd "$build" 2>/dev/null && pwd)/tests/gpu/soak_check
hc=$(cd "$build" 2>/dev/null && pwd)/tests/gpu/hostile_check
for f in "$fake" "$sc" "$hc"; do
	[ -f "$f" ] || { echo "$name: FAIL: $f is not built"; exit 1; }
done
case $secs in
'' | *[!0-9]*) echo "$name: FAIL: SECONDS must be a number: $secs"; exit 1 ;;
esac
libcuda=$fake
checker='' workers='' hostile=
# fail as lib.sh's, and the soak's own processes go too; the seed is named again to replay it
fail() {
	echo "$name: FAIL: $*"
	sed 's/^/  | /' "$rundir/oood.log" | tail -40
	[ -f "$rundir/checker.out" ] && sed 's/^/  checker | /' "$rundir/checker.out" | tail -10
	kill -9 "$daemon" $checker $workers $hostile 2>/dev/null
	echo "$name: seed $seed (OOO_SOAK_SEED=$seed replays it)"
	exit 1
}
# small copies go through the executor's copy kernel (fused with other sessions' copies and launches)
export FAKECUDA_HOSTPTR=1
# the tenants (not oood: its leaks count) under make asan: they leave without freeing what they hold
tenant_env="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

BACKOFF_MAX_MS=8000   # executor deaths are spaced so that its restart backoff stays at most this
STATUS_MAX_MS=8000    # oooctl status answers in milliseconds (seconds at worst, under the sanitizers on 2 busy cores); a blocked daemon never does
RSS_GROWTH_KB=16384   # oood's VmRSS after the soak, over its baseline (not under the sanitizers: their quarantine)
MAX_WORKERS=4
MAX_HOSTILE=3

seed=${OOO_SOAK_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
case $seed in
'' | *[!0-9]*) echo "$name: FAIL: OOO_SOAK_SEED must be a number: $seed"; exit 1 ;;
esac
state=$((seed % 2147483648))
echo "$name: seed $seed (OOO_SOAK_SEED=$seed replays it), $secs s"
# rnd N: $r becomes a number in [0, N) (N <= 32768) from the seeded generator (an LCG of 31 bits)
rnd() {
	state=$(((state * 1103515245 + 12345) % 2147483648))
	r=$(((state / 65536) % $1))
}
# rseed: $r becomes a seed for a helper (30 bits)
rseed() {
	rnd 32768
	_hi=$r
	rnd 32768
	r=$((_hi * 32768 + r))
}

# the configuration: the class's keys (a reload alternates two; "bad" writes one that does not parse),
# in gpu_start's file. No idle domain's executor is stopped while the soak runs; the telemetry probes
# the stand-in driver from the start (else it finds it only when it happens to scan an executor that has
# loaded it already: its probes, kept while oood runs, would come in the middle of the soak)
# hang_strikes = 0: the soak's faults are its own uid's (fault strikes would bar its checker; they are
# tested in test_hostile.sh)
# The telemetry must name the very file the executors load: the staged copy (stage_libcuda), which is
# therefore made before gpu_start, in a directory of its own.
stage_dir=$(mktemp -d /tmp/ooo-soak-lib-XXXXXX)
chmod 755 "$stage_dir"
trap 'rm -rf "$stage_dir"' EXIT
stage_libcuda
daemon_keys="domain_idle_ms = 3600000\nhang_strikes = 0\n[telemetry]\nlibcuda = $run_libcuda\n"
class_a='max_sessions = 64\nwait_spin_us = 0\n'
soak_conf() {
	case $1 in
	a) keys=$class_a ;;
	b) keys='max_sessions = 64\nwait_spin_us = 200\npriority = 40\n' ;;
	bad) keys='max_sessions = 64\nthis is not a key\n' ;;
	esac
	printf "[daemon]\nlibcuda = %s\n${OOO_GPU_DAEMON_KEYS:-}${daemon_keys}[mps]\nenabled = no\n[class default]\nmatch_uid = *\n$keys" \
		"$run_libcuda" >"$rundir/oood.conf.new"
	mv "$rundir/oood.conf.new" "$rundir/oood.conf"
}

# dev DOMAIN KEY: KEY of the executor of DOMAIN ("" is the GPU's spare) in oooctl --json devices
dev() {
	$ctl --json devices 2>/dev/null | awk -v d="\"$1\"" -v k="\"$2\":" '
		$1 == "\"domain\":" { cur = $2; sub(/,$/, "", cur) }
		$1 == k && cur == d { sub(/^[^:]*: */, ""); sub(/,$/, ""); gsub(/"/, ""); print; exit }'
}
# stat KEY: a number of oooctl --json status
stat_of() { $ctl --json status 2>/dev/null | sed -n "s/^ *\"$1\": \([0-9]*\),*\$/\1/p" | head -1; }
nfds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# running PID: the child PID has not ended (a zombie has)
running() { [ -d "/proc/$1" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]; }
status_ms() {
	t0=$(date +%s%N)
	timeout 10 $ctl status >/dev/null 2>&1 || { echo 99999; return; }
	echo $((($(date +%s%N) - t0) / 1000000))
}

me=$(id -u)
dom="uid:$me"
gpu_start "$class_a" "$daemon_keys"
conf=a

# the baseline: the tenants' domain's executor and the spare, both ready, no session
out=$(timeout 60 env "$tenant_env" "$hc" "$sock" rounds 3 5000 2>&1) || fail "the first tenant: $out"
wait_idle() { # wait_idle SECONDS: both executors ready, no session, no tenant
	for _ in $(seq $(($1 * 10))); do
		[ "$(dev "$dom" state)" = ready ] && [ "$(dev "" state)" = ready ] && [ "$(stat_of sessions)" = 0 ] &&
			[ "$(stat_of tenants)" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}
wait_idle 30 || fail "not idle after the first tenant: $($ctl devices 2>&1; $ctl status 2>&1 | head -20)"
# oood's descriptors settle (the ended session's are closed as its replies complete)
stable_fds() {
	prev=-1
	for _ in $(seq 50); do
		n=$(nfds "$1")
		[ "$n" = "$prev" ] && break
		prev=$n
		sleep 0.2
	done
	echo "$n"
}
base_fds=$(stable_fds "$daemon")
ls -l "/proc/$daemon/fd" 2>/dev/null | sed 's/.* \([0-9]* -> .*\)/\1/' | sort -n >"$rundir/fds.before"
base_rss=$(rss_kb "$daemon")
base_dom_pid=$(dev "$dom" executor_pid)
base_spare_pid=$(dev "" executor_pid)
exec_fds_ok=yes
[ -r "/proc/$base_dom_pid/fd" ] && [ -r "/proc/$base_spare_pid/fd" ] || exec_fds_ok=no
base_dom_fds=$(nfds "$base_dom_pid")
base_spare_fds=$(nfds "$base_spare_pid")
base_mem_free=$(dev "$dom" mem_free)
if [ $exec_fds_ok = yes ]; then
	echo "$name: baseline: oood pid $daemon $base_fds fds, VmRSS $base_rss kB; executors $dom pid $base_dom_pid" \
		"($base_dom_fds fds), spare pid $base_spare_pid ($base_spare_fds fds)"
else
	echo "$name: baseline: oood pid $daemon $base_fds fds, VmRSS $base_rss kB; executors $dom pid $base_dom_pid," \
		"spare pid $base_spare_pid (their descriptors are not counted: /proc/PID/fd of an executor needs root)"
fi

# the checker, for the whole soak
mkfifo "$rundir/checker.in"
rseed
env "$tenant_env" "$sc" "$sock" checker "$r" 2 <"$rundir/checker.in" >"$rundir/checker.out" 2>&1 &
checker=$!
exec 8>"$rundir/checker.in"
for _ in $(seq 300); do grep -q '^ready' "$rundir/checker.out" && break; running $checker || break; sleep 0.1; done
grep -q '^ready' "$rundir/checker.out" || fail "the checker did not start: $(cat "$rundir/checker.out")"
checker_alive() {
	running $checker || fail "the checker ended during the soak: $(tail -20 "$rundir/checker.out")"
}

# the abusers in the background: their pids (and kinds: w worker, r rings, b bells, f fault)
n_worker=0 n_wkill=0 n_wdone=0 n_xkill=0 n_skill=0 n_xskip=0 n_rings=0 n_bells=0 n_fault=0 n_fskip=0
n_faulted=0 n_garbage=0 n_agarbage=0 n_reload=0 n_reload_bad=0 n_hup=0 n_hup_bad=0 n_iter=0 worst=0 worst_what=
# the restart backoff the soak expects of the next death of each executor (may_die reads them by eval)
# shellcheck disable=SC2034
bo_dom=0 bo_spare=0
# reap LIST: $left becomes the pids of LIST still running; check how the others ended
reap() {
	left=
	for p in $1; do
		if running "$p"; then
			left="$left $p"
			continue
		fi
		wait "$p"
		rc=$?
		read -r kind o <"$rundir/job.$p.kind"
		case $kind:$rc in
		w:0 | w:137) [ $rc = 0 ] && n_wdone=$((n_wdone + 1)) ;;
		r:0 | r:137) grep -q '^FAIL' "$o" && fail "a rings tenant: $(cat "$o")" ;;
		b:0) ;;
		f:0) grep -q '^fault: -1008' "$o" && n_faulted=$((n_faulted + 1)) ;;
		# (its set-up or first round trip met the executor's replacement or a neighbour's fault: the soak's own doing)
		b:1 | f:1) grep -Eq -- '-100[678]|restart|died' "$o" || fail "hostile_check bells ($kind) exited 1: $(cat "$o")" ;;
		*) fail "an abusing tenant ($kind, pid $p) exited $rc: $(cat "$o")" ;;
		esac
		rm -f "$o" "$rundir/job.$p.kind"
	done
}
# job KIND INPUT CMD...: start CMD in the background (its input from the file INPUT) as an abuser of
# kind KIND; sets $job
job() {
	kind=$1
	in=$2
	shift 2
	env "$tenant_env" "$@" <"$in" >"$rundir/job.$n_iter.out" 2>&1 &
	job=$!
	echo "$kind $rundir/job.$n_iter.out" >"$rundir/job.$job.kind"
}
# bells_job INPUT KIND: hostile_check bells in the background, given INPUT's lines
bells_job() {
	printf "$1" >"$rundir/bells.$n_iter.in"
	job "$2" "$rundir/bells.$n_iter.in" "$hc" "$sock" bells
	hostile="$hostile $job"
}
count() { set -- $1; echo $#; }
# may_die SLOT DOMAIN: may the executor of DOMAIN die now, its restart backoff staying at most
# BACKOFF_MAX_MS? (oood doubles it after each death, back to 1 s after 60 s up). Sets $kpid and the
# slot's expected backoff.
may_die() {
	[ "$(dev "$2" state)" = ready ] || return 1
	kpid=$(dev "$2" executor_pid)
	up=$(dev "$2" up_ns)
	[ "${kpid:-0}" -gt 0 ] && [ "${up:-0}" -ge 3000000000 ] || return 1
	eval "last=\$bo_$1"
	if [ "$up" -ge 61000000000 ] || [ "$last" -eq 0 ]; then next=1000; else next=$((last * 2)); fi
	[ "$next" -le $BACKOFF_MAX_MS ] || return 1
	eval "bo_$1=$next"
}
garbage() { # garbage SOCKET: malformed datagrams on it
	rseed
	s=$r
	rnd 10
	out=$(timeout 60 env "$tenant_env" "$sc" "$1" garbage "$s" $((r + 3)) 2>&1) || fail "soak_check $1 garbage $s: $out"
}

end=$(($(date +%s) + secs))
while [ "$(date +%s)" -lt "$end" ]; do
	n_iter=$((n_iter + 1))
	reap "$workers"
	workers=$left
	reap "$hostile"
	hostile=$left
	rnd 100
	case $r in
	[0-9] | 1[0-9]) # a new worker
		what="worker"
		if [ "$(count "$workers")" -lt $MAX_WORKERS ]; then
			rseed
			job w /dev/null "$sc" "$sock" worker "$r"
			workers="$workers $job"
			n_worker=$((n_worker + 1))
		fi
		;;
	2[0-9] | 3[0-4]) # SIGKILL a worker mid-work
		what="worker SIGKILL"
		set -- $workers
		if [ $# -gt 0 ]; then
			rnd $#
			shift $r
			kill -9 "$1" 2>/dev/null && n_wkill=$((n_wkill + 1))
		fi
		;;
	3[5-9] | 4[0-4]) # SIGKILL the tenants' executor
		what="executor SIGKILL"
		if may_die dom "$dom" && kill -9 "$kpid" 2>/dev/null; then
			n_xkill=$((n_xkill + 1))
		else
			n_xskip=$((n_xskip + 1))
		fi
		;;
	4[5-7]) # SIGKILL the spare
		what="spare SIGKILL"
		if may_die spare "" && kill -9 "$kpid" 2>/dev/null; then
			n_skill=$((n_skill + 1))
		else
			n_xskip=$((n_xskip + 1))
		fi
		;;
	4[89] | 5[0-9]) # garbage in its own rings
		what="rings"
		if [ "$(count "$hostile")" -lt $MAX_HOSTILE ]; then
			rseed
			job r /dev/null "$sc" "$sock" rings "$r"
			hostile="$hostile $job"
			n_rings=$((n_rings + 1))
		fi
		;;
	6[0-6]) # doorbells blocking and full, then a sync of its own
		what="bells"
		if [ "$(count "$hostile")" -lt $MAX_HOSTILE ]; then
			bells_job 'sync\nsync\n' b
			n_bells=$((n_bells + 1))
		fi
		;;
	6[7-9] | 7[01]) # a kernel that faults: its executor (the checker's) is replaced
		what="fault"
		if [ "$(count "$hostile")" -lt $MAX_HOSTILE ] && may_die dom "$dom"; then
			bells_job 'fault\n' f
			n_fault=$((n_fault + 1))
		else
			n_fskip=$((n_fskip + 1))
		fi
		;;
	7[2-9] | 8[0-3])
		what="garbage on oood.sock"
		garbage "$sock"
		n_garbage=$((n_garbage + 1))
		;;
	8[4-9] | 9[01])
		what="garbage on admin.sock"
		garbage "$rundir/admin.sock"
		n_agarbage=$((n_agarbage + 1))
		;;
	9[2-5] | 9[6-9]) # a reload: oooctl reload or SIGHUP, one in four of a file that does not parse
		what="reload"
		rnd 4
		if [ "$r" = 0 ]; then conf=bad; elif [ "$conf" = a ]; then conf=b; else conf=a; fi
		soak_conf $conf
		rnd 2
		if [ "$r" = 0 ]; then
			out=$(timeout 10 $ctl reload 2>&1)
			rc=$?
			case $conf:$rc in
			bad:1) n_reload_bad=$((n_reload_bad + 1)) ;;
			a:0 | b:0) ;;
			*) fail "oooctl reload of configuration $conf exited $rc: $out" ;;
			esac
			n_reload=$((n_reload + 1))
		else
			g0=$(($(stat_of policy_generation) + $(stat_of reloads_failed)))
			kill -HUP "$daemon"
			for _ in $(seq 100); do
				[ "$(($(stat_of policy_generation) + $(stat_of reloads_failed)))" -gt "$g0" ] && break
				sleep 0.05
			done
			[ "$(($(stat_of policy_generation) + $(stat_of reloads_failed)))" -gt "$g0" ] ||
				fail "oood did not reload on SIGHUP within 5 s"
			n_hup=$((n_hup + 1))
			[ $conf = bad ] && n_hup_bad=$((n_hup_bad + 1))
		fi
		;;
	esac
	kill -0 "$daemon" 2>/dev/null || fail "oood died"
	checker_alive
	t=$(status_ms)
	[ "$t" -gt "$worst" ] && worst=$t worst_what=$what
	[ "$t" -le $STATUS_MAX_MS ] || fail "oooctl status took $t ms (iteration $n_iter)"
	rnd 250
	sleep "$(printf '0.%03d' $((r + 50)))"
done

# the end: the workers left are killed mid-work too, the other abusers end by themselves
for p in $workers; do kill -9 "$p" 2>/dev/null; done
for _ in $(seq 600); do
	reap "$workers"
	workers=$left
	reap "$hostile"
	hostile=$left
	[ -z "$workers$hostile" ] && break
	sleep 0.1
done
if [ -n "$workers$hostile" ]; then
	for p in $workers $hostile; do
		read -r kind o <"$rundir/job.$p.kind"
		echo "$name: pid $p ($kind) still runs: $(cat "$o")"
		for t in "/proc/$p/task"/*; do
			echo "  thread $(basename "$t"): in $(cat "$t/wchan" 2>/dev/null), system call $(cut -d' ' -f1-3 "$t/syscall" 2>/dev/null)"
		done
	done
	fail "abusing tenants did not end within 60 s:$workers$hostile"
fi
soak_conf a
out=$(timeout 10 $ctl reload 2>&1) || fail "the last reload: $out"
# the executors back (a death near the end restarts after its backoff), then the checker stops
for _ in $(seq 600); do
	[ "$(dev "$dom" state)" = ready ] && [ "$(dev "" state)" = ready ] && break
	sleep 0.1
done
[ "$(dev "$dom" state)" = ready ] && [ "$(dev "" state)" = ready ] ||
	fail "the executors are not back: $($ctl devices 2>&1)"
checker_alive
echo stop >&8
exec 8>&-
wait $checker
rc=$?
cat "$rundir/checker.out"
[ $rc -eq 0 ] || fail "the checker exited $rc"
grep -q '^FAIL' "$rundir/checker.out" && fail "the checker failed"
ck=$(grep '^checker ' "$rundir/checker.out")
ck_field() { echo "$ck" | sed -n "s/.* $1 \([0-9.]*\).*/\1/p"; }

# a new tenant's round trips work
out=$(timeout 60 env "$tenant_env" "$hc" "$sock" rounds 50 10000 2>&1) || fail "round trips after the soak: $out"
echo "$name: after the soak: $out"

# settled: no session, no tenant (so no charge), oood's descriptors as before, each executor's too
wait_idle 30 || fail "sessions or tenants left after the soak: $($ctl status 2>&1 | head -30; $ctl sessions 2>&1; $ctl tenants 2>&1)"
[ "$($ctl --json sessions | tr -d ' \n')" = '{"sessions":[]}' ] || fail "oooctl sessions: $($ctl sessions 2>&1)"
[ "$($ctl --json tenants | tr -d ' \n')" = '{"tenants":[]}' ] || fail "oooctl tenants: $($ctl tenants 2>&1)"
for _ in $(seq 100); do
	[ "$(nfds "$daemon")" = "$base_fds" ] && break
	sleep 0.1
done
end_fds=$(nfds "$daemon")
if [ "$end_fds" != "$base_fds" ]; then
	ls -l "/proc/$daemon/fd" 2>/dev/null | sed 's/.* \([0-9]* -> .*\)/\1/' | sort -n >"$rundir/fds.after"
	diff "$rundir/fds.before" "$rundir/fds.after" | sed 's/^/  /'
	fail "oood holds $end_fds descriptors after the soak, $base_fds before"
fi
dom_pid=$(dev "$dom" executor_pid)
spare_pid=$(dev "" executor_pid)
if [ $exec_fds_ok = yes ]; then
	for _ in $(seq 100); do
		[ "$(nfds "$dom_pid")" = "$base_dom_fds" ] && [ "$(nfds "$spare_pid")" = "$base_spare_fds" ] && break
		sleep 0.1
	done
	[ "$(nfds "$dom_pid")" = "$base_dom_fds" ] ||
		fail "the executor of $dom (pid $dom_pid) holds $(nfds "$dom_pid") descriptors, $base_dom_fds before: $(ls -l "/proc/$dom_pid/fd" | tail -n +2)"
	[ "$(nfds "$spare_pid")" = "$base_spare_fds" ] ||
		fail "the spare (pid $spare_pid) holds $(nfds "$spare_pid") descriptors, $base_spare_fds before"
	exec_fds="executors $(nfds "$dom_pid") and $(nfds "$spare_pid") fds (before $base_dom_fds and $base_spare_fds)"
else
	exec_fds="executors' descriptors not counted (their /proc/PID/fd needs root)"
fi
end_rss=$(rss_kb "$daemon")
if grep -qa __asan_report "$build/oood"; then
	echo "$name: VmRSS not bounded under AddressSanitizer (freed memory is held in its quarantine; LeakSanitizer checks at exit)"
else
	[ $((end_rss - base_rss)) -le $RSS_GROWTH_KB ] ||
		fail "oood's VmRSS grew from $base_rss kB to $end_rss kB (more than $RSS_GROWTH_KB kB)"
fi
end_mem_free=$(dev "$dom" mem_free)

# every executor death was the soak's doing: a SIGKILL it sent, or the exit after a kernel it made fault
# (a SIGKILL may find the executor already on its way out of a fault: it then dies of the fault)
log_deaths() { grep "gpu0 ($1): executor " "$rundir/oood.log"; }
other=$(grep 'gpu0 ([^)]*): executor ' "$rundir/oood.log" | grep -v 'killed by signal 9 (Killed)' |
	grep -v 'executor exited with status\|executor failed')
[ -z "$other" ] || fail "an executor died of something the soak did not do: $(echo "$other" | head -5)"
d_dom=$(log_deaths "$dom" | grep -c .)
d_spare=$(log_deaths spare | grep -c .)
kills_dom=$(log_deaths "$dom" | grep -c 'killed by signal 9')
[ "$kills_dom" -le "$n_xkill" ] || fail "$kills_dom deaths of $dom's executor by SIGKILL in oood's log; the soak sent $n_xkill"
[ $((d_dom - kills_dom)) -le "$n_fault" ] ||
	fail "$dom's executor exited $((d_dom - kills_dom)) times of itself; the soak made $n_fault kernels fault"
[ "$d_dom" -le $((n_xkill + n_fault)) ] || fail "$dom's executor died $d_dom times; the soak killed it $n_xkill times and faulted $n_fault"
[ "$d_spare" -eq "$n_skill" ] || fail "the spare died $d_spare times; the soak killed it $n_skill times"
[ "$(dev "$dom" restarts)" -eq "$d_dom" ] || fail "$dom's executor: $(dev "$dom" restarts) restarts, $d_dom deaths in the log"
[ "$(dev "" restarts)" -eq "$d_spare" ] || fail "the spare: $(dev "" restarts) restarts, $d_spare deaths in the log"
failed=$(stat_of reloads_failed)
[ "$failed" -eq $((n_reload_bad + n_hup_bad)) ] ||
	fail "$failed reloads failed; the soak made $((n_reload_bad + n_hup_bad)) of a file that does not parse"

echo "$name: seed $seed, $secs s, $n_iter iterations: workers $n_worker started ($n_wdone done, $n_wkill SIGKILLed mid-work)," \
	"executor SIGKILLs $n_xkill (spare $n_skill), faulting kernels $n_fault ($n_faulted faulted; deaths deferred for the backoff: $((n_xskip + n_fskip)))," \
	"rings abusers $n_rings, doorbell abusers $n_bells, garbage runs $n_garbage on oood.sock and $n_agarbage on admin.sock," \
	"reloads $n_reload (bad $n_reload_bad), SIGHUPs $n_hup (bad $n_hup_bad)"
echo "$name: checker: $(ck_field rounds) rounds, $(ck_field verified) verified; $(ck_field commands) commands, $(ck_field completed) completed," \
	"$(ck_field lost) lost to $(ck_field resets) resets ($(ck_field faults) with a neighbour's OOO_EFAULT; $(ck_field refused) rounds refused" \
	"while the executor was replaced); slowest sync $(ck_field max_sync_ms) ms"
echo "$name: executor deaths: $dom $d_dom, spare $d_spare; slowest oooctl status $worst ms (after a $worst_what); proto errors $(stat_of proto_errors)"
echo "$name: oood: $end_fds fds (before $base_fds); VmRSS $end_rss kB (before $base_rss kB); $exec_fds; mem_free $end_mem_free (before $base_mem_free)"
gpu_stop
echo "$name: soak of $secs s (seed $seed): ok"
