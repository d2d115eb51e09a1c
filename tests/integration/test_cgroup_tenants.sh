#!/bin/sh
# test_cgroup_tenants.sh BUILD: tenants by pod, with real cgroups v2 (root only). Two cgroups named
# as kubelet's systemd driver names pods' (kubepods-burstable-pod1111_2222.slice and
# kubepods-besteffort-pod3333_4444.slice) under a cgroup of the test's own; a private oood on the
# stand-in driver (tests/fakecuda) whose class "pods" has match_cgroup for them and tenant_by = pod,
# max_sessions = 1 and mem_limit = 64M. One tenant in each pod holds 48 MiB: both are admitted into
# "pods" as two tenants of uid 0 (one tenant would be over 64M), oooctl tenants and sessions show
# their pod UIDs; a second process in the first pod is refused (that pod's max_sessions); a process
# in a cgroup outside the pattern goes to the next class. The cgroups are removed at exit. Skips (77)
# unless run as root with a cgroup2 mount it can create cgroups in.
set -u
build=${1:-build}
name=test_cgroup_tenants
here=$(dirname "$0")

. "$here/../gpu/lib.sh"
. "$here/fakecuda_lib.sh"

if [ "$(id -u)" != 0 ]; then
	echo "$name: SKIP: needs root, to create cgroups"
	exit 77
fi
# the cgroup2 mount of the whole hierarchy (its root "/"): /sys/fs/cgroup on a pure v2 host,
# /sys/fs/cgroup/unified on a hybrid one. The filesystem type follows the " - " separator.
mnt=$(awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2" && $4 == "/") print $5; break } }' \
	/proc/self/mountinfo | head -1)
if [ -z "$mnt" ]; then
	echo "$name: SKIP: no cgroup2 mount of the whole hierarchy in /proc/self/mountinfo"
	exit 77
fi
# our own cgroup v2 path: the test's cgroups go below it, where we may create them; that is the
# path oood sees too when it shares our cgroup namespace (the mount's root is "/" of it)
self=$(sed -n 's/^0:://p' /proc/self/cgroup)
case $self in /*) ;; *) echo "$name: SKIP: no cgroup v2 line in /proc/self/cgroup"; exit 77 ;; esac
[ "$self" = / ] && self=
rel=$self/ooo-test-$$
base=$mnt$rel
if ! mkdir "$base" 2>/dev/null; then
	echo "$name: SKIP: cannot create a cgroup in $mnt$self (read-only or not delegated)"
	exit 77
fi
pod_a=$base/kubepods-burstable-pod1111_2222.slice
pod_b=$base/kubepods-besteffort-pod3333_4444.slice
other=$base/other.slice
mkdir "$pod_a" "$pod_b" "$other" || { rmdir "$base"; echo "$name: FAIL: cannot create cgroups in $base"; exit 1; }

tenants=
daemon=
rundir=
# at exit: the tenants killed and reaped, oood killed if still running, then the cgroups removed
# (a cgroup can go once its last process has been reaped: retried a bounded number of times)
cleanup() {
	for p in $tenants; do kill -9 "$p" 2>/dev/null; done
	for p in $tenants; do wait "$p" 2>/dev/null; done
	[ -n "$daemon" ] && kill -9 "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
	for d in "$pod_a" "$pod_b" "$other" "$base"; do
		for _ in $(seq 50); do
			[ -d "$d" ] || break
			rmdir "$d" 2>/dev/null && break
			sleep 0.1
		done
		[ -d "$d" ] && echo "$name: could not remove $d: $(tr "\n" " " <"$d/cgroup.procs" 2>/dev/null)"
	done
	[ -n "$rundir" ] && rm -rf "$rundir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

rundir=$(mktemp -d /tmp/ooo-cg-XXXXXX)
chmod 755 "$rundir"
stage_libcuda # sets run_libcuda
# shellcheck disable=SC2154 # run_libcuda: set by stage_libcuda (tests/gpu/lib.sh)
cat >"$rundir/oood.conf" <<EOF
[daemon]
libcuda = $run_libcuda
[mps]
enabled = no
[class pods]
match_cgroup = $rel/kubepods-*.slice
tenant_by = pod
max_sessions = 1
mem_limit = 64M
[class default]
match_uid = *
EOF
"$build/oood" -f -c "$rundir/oood.conf" --rundir "$rundir" 2>"$rundir/oood.log" &
daemon=$!
ctl="$build/oooctl --rundir $rundir"
sock="$rundir/oood.sock"
wait_ready || fail "executor never became ready: $(field reason)"

# in_cgroup DIR OUT ARGS...: buf_check SOCK ARGS... in the background in cgroup DIR (the shell moves
# itself in, then execs it: same pid), output in OUT; its pid is added to $tenants and left in $pid
in_cgroup() {
	cg=$1 out=$2
	shift 2
	# shellcheck disable=SC2016 # expanded by the inner sh
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$build/tests/gpu/buf_check" "$sock" "$@" \
		>"$out" 2>&1 &
	pid=$!
	tenants="$tenants $pid"
}
# wait_line FILE PATTERN: until FILE has a line matching PATTERN, at most 15 s
wait_line() {
	for _ in $(seq 150); do
		grep -q "$2" "$1" && return 0
		sleep 0.1
	done
	return 1
}
# the JSON of an oooctl command, one line without blanks
json() { $ctl --json "$@" | tr -d ' \n'; }

mib48=50331648
in_cgroup "$pod_a" "$rundir/a.out" hold $mib48
pid_a=$pid
wait_line "$rundir/a.out" '^held' || fail "the tenant in pod 1111-2222 holds nothing: $(cat "$rundir/a.out")"
in_cgroup "$pod_b" "$rundir/b.out" hold $mib48
pid_b=$pid
wait_line "$rundir/b.out" '^held' ||
	fail "the tenant in pod 3333-4444 could not hold 48 MiB beside pod 1111-2222's 48 MiB (mem_limit = 64M a tenant): $(cat "$rundir/b.out")"
grep -q "^0::$rel/kubepods-burstable-pod1111_2222.slice\$" "/proc/$pid_a/cgroup" ||
	fail "the tenant is not in its cgroup: $(cat "/proc/$pid_a/cgroup")"
ok "one tenant in each pod's cgroup holds 48 MiB under mem_limit = 64M: one limit each"

t=$(json tenants)
for pod in 1111-2222 3333-4444; do
	echo "$t" | grep -q "{\"uid\":0,\"user\":\"root\",\"gid\":0,\"class\":\"pods\",\"key\":\"$pod\",\"pod\":\"$pod\",\"used\":{[^}]*\"mem_bytes\":$mib48" ||
		fail "oooctl --json tenants has no tenant of uid 0 in class pods for pod $pod holding 48 MiB: $t"
done
[ "$(echo "$t" | grep -o '"class":"pods"' | wc -l)" = 2 ] || fail "not two tenants in class pods: $t"
out=$($ctl tenants)
for pod in 1111-2222 3333-4444; do
	echo "$out" | grep -q "^ *0 .* pods  *$pod  *1/1 " || fail "oooctl tenants shows no row of uid 0, class pods, pod $pod: $out"
done
echo "$out" | head -1 | grep -q ' POD ' || fail "oooctl tenants has no POD column: $out"
out=$($ctl sessions)
echo "$out" | grep -q "^ *[0-9]*  *$pid_a  *0 .* pods  *1111-2222 " || fail "oooctl sessions shows no pod for pid $pid_a: $out"
s=$(json sessions)
echo "$s" | grep -q "\"pid\":$pid_b,[^}]*\"class\":\"pods\",\"key\":\"3333-4444\",\"pod\":\"3333-4444\"" ||
	fail "oooctl --json sessions does not give pid $pid_b's pod: $s"
grep -q "class 'pods' pod 1111-2222 name" "$rundir/oood.log" || fail "oood's log does not name the pod of the session"
ok "oooctl tenants and sessions (text and --json): two tenants of uid 0 in class pods, pods 1111-2222 and 3333-4444"

# a second process in pod 1111-2222: that pod's tenant has its max_sessions = 1, pod 3333-4444's no matter
in_cgroup "$pod_a" "$rundir/a2.out" alloc 1048576
wait "$pid"
grep -q "^error open: .*tenant uid 0 pod 1111-2222 in class 'pods' has its maximum of 1 sessions" "$rundir/a2.out" ||
	fail "a second session in pod 1111-2222 was not refused for its pod's max_sessions: $(cat "$rundir/a2.out")"
ok "a second process in pod 1111-2222 is refused: its pod's max_sessions = 1"

# outside the pattern (a cgroup of the same parent, not kubepods-*.slice): the next class, no pod
in_cgroup "$other" "$rundir/o.out" hold 1048576
pid_o=$pid
wait_line "$rundir/o.out" '^held' || fail "the tenant outside the pods holds nothing: $(cat "$rundir/o.out")"
s=$(json sessions)
echo "$s" | grep -q "\"pid\":$pid_o,[^}]*\"class\":\"default\",\"key\":\"\",\"pod\":\"\"" ||
	fail "the process in $rel/other.slice is not in class default without a pod: $s"
ok "a process in a cgroup outside match_cgroup goes to the next class, with no pod"

for p in $tenants; do kill -9 "$p" 2>/dev/null; done
for p in $tenants; do wait "$p" 2>/dev/null; done
tenants=
for _ in $(seq 100); do
	[ "$(json tenants)" = '{"tenants":[]}' ] && break
	sleep 0.1
done
[ "$(json tenants)" = '{"tenants":[]}' ] || fail "tenants left after their processes were killed: $($ctl tenants)"
gpu_stop
daemon=
rundir=
ok "oood stopped cleanly"
# shellcheck disable=SC2154 # passed: counted by ok (fakecuda_lib.sh)
echo "$passed passed, 0 failed"
