#!/bin/sh
# bench/profile.sh OUTDIR WORKLOAD T [ooo-bench args]: one ooo point of
# WORKLOAD with T tenants, profiled while it runs. Writes OUTDIR/profile.txt:
# the bench's table, the scheduler's counters over 2 s of the measured window
# (oooctl sched --json, rates from the executor's own timestamps), starting
# once the window has opened and the processes have been found in /proc (a
# second or two with many tenants), the CPU time of the executor, oood and
# the tenants over the same interval (from /proc, in cores), and how long
# the executor's threads and the tenants waited on run queues for a CPU, and
# their involuntary context switches (/proc/PID/task/*/schedstat, status). The
# measured window must last 5 s or more. BUILD (default build) holds
# ooo-bench, oood, oooctl.
# Default args: --duration 6 --warmup 1.
set -eu
out=${1:?usage: bench/profile.sh OUTDIR WORKLOAD T [ooo-bench args]}
wl=${2:?workload}
t=${3:?tenants}
shift 3
build=${BUILD:-build}
[ $# -eq 0 ] && set -- --duration 6 --warmup 1
libcuda=libcuda.so.1
[ -e /usr/local/nvidia/lib64/libcuda.so.1 ] && libcuda=/usr/local/nvidia/lib64/libcuda.so.1
mkdir -p "$out"
rd=$(mktemp -d /tmp/ooo-prof-XXXXXX)
f=$out/profile.txt
hz=$(getconf CLK_TCK)

# the pids of the processes whose command line matches the pattern $1 (one
# scan of /proc: slow with many processes, so done once, before the interval)
pids() {
	pat=$1 l=
	for p in /proc/[0-9]*; do
		c=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) || continue
		# shellcheck disable=SC2254 # the pattern is a glob on purpose
		case $c in
		$pat) l="$l ${p#/proc/}" ;;
		esac
	done
	echo "$l"
}

# "pid ticks" (utime+stime) of each of the processes $* still there: fields
# after the command: state is 1, utime 12, stime 13
ticks() {
	for p in "$@"; do
		s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		echo "$p $(echo "${s##*) }" | awk '{ print $12 + $13 }')"
	done
}

# "pid run_ns wait_ns nvcsw" of each of the processes $* still there, summed
# over its threads: time on a CPU and waiting on a run queue
# (/proc/PID/task/TID/schedstat) and involuntary context switches
# (nonvoluntary_ctxt_switches): with many tenants on few CPUs, who waits for
# a CPU
sched_of() {
	for p in "$@"; do
		[ -d "/proc/$p/task" ] || continue
		awk -v p="$p" 'FILENAME ~ /schedstat$/ { r += $1; w += $2; next }
			/^nonvoluntary_ctxt_switches:/ { n += $2 } END { print p, r + 0, w + 0, n + 0 }' \
			"/proc/$p/task/"*/schedstat "/proc/$p/task/"*/status 2>/dev/null
	done
}

# the sums gained in columns 2..4 between two sched_of lists $1 and $2, over
# the pids in both: "run_ns wait_ns nvcsw"
gained3() {
	printf '%s\n%s\n%s\n' "$1" "--" "$2" | awk '$1 == "--" { second = 1; next }
		NF == 4 && !second { r[$1] = $2; w[$1] = $3; n[$1] = $4; next }
		NF == 4 && ($1 in r) { dr += $2 - r[$1]; dw += $3 - w[$1]; dn += $4 - n[$1] } END { print dr + 0, dw + 0, dn + 0 }'
}

# the ticks gained between two ticks lists $1 and $2, over the pids in both
# (a process that ended in between counts nothing)
gained() {
	printf '%s\n%s\n%s\n' "$1" "--" "$2" | awk '$1 == "--" { second = 1; next } NF == 2 && !second { a[$1] = $2; next }
		NF == 2 && ($1 in a) { d += $2 - a[$1] } END { print d + 0 }'
}

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: ${OOO_COMMIT:-unknown}"
	echo "host: $(uname -n), kernel $(uname -r), $(nproc) cpus"
	echo "command: $build/ooo-bench $wl --mode ooo --tenants $t --libcuda $libcuda --rundir $rd $*"
	echo
} >"$f"
# a preloaded bench/sampler.c counts from the same mark
OOO_SAMPLER_START=$rd/measuring OOO_BENCH_MARK=$rd/measuring "$build/ooo-bench" "$wl" --mode ooo --tenants "$t" --libcuda "$libcuda" --rundir "$rd" -q "$@" >"$out/bench.txt" 2>&1 &
bp=$!
# into the measured window (the bench creates the mark when it opens, after
# every tenant's set-up and the warm-up), then the pids (one scan)
i=0
while [ ! -e "$rd/measuring" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
pe=$(pids '*--executor*') po=$(pids '*oood -f*') pb=$(pids '*ooo-bench*--tenant 3 4*')
# shellcheck disable=SC2086 # the pid lists split into words on purpose
e0=$(ticks $pe) o0=$(ticks $po) b0=$(ticks $pb)
se0=$(sched_of $pe) sb0=$(sched_of $pb)
t0=$(date +%s.%N)
"$build/oooctl" --rundir "$rd" --json sched --interval 2000 >"$out/sched.json" 2>&1 || true
t1=$(date +%s.%N)
# shellcheck disable=SC2086
e1=$(ticks $pe) o1=$(ticks $po) b1=$(ticks $pb)
se1=$(sched_of $pe) sb1=$(sched_of $pb)
ge=$(gained "$e0" "$e1") go=$(gained "$o0" "$o1") gb=$(gained "$b0" "$b1")
gse=$(gained3 "$se0" "$se1") gsb=$(gained3 "$sb0" "$sb1")
# shellcheck disable=SC2086
nb=$(echo $pb | wc -w)
wait $bp || true
{
	cat "$out/bench.txt"
	echo
	awk -v t0="$t0" -v t1="$t1" 'BEGIN { printf "cpu over %.2f s (cores):\n", t1 - t0 }'
	awk -v e="$ge" -v o="$go" -v b="$gb" -v hz="$hz" -v t0="$t0" -v t1="$t1" \
		'BEGIN { d = t1 - t0; printf "  executor %.2f  oood %.2f  tenants %.2f\n", e / hz / d, o / hz / d, b / hz / d }'
	# waiting for a CPU: a serving thread that waits delays every tenant; a tenant that waits, its own requests
	echo "$gse" "$gsb" | awk -v t0="$t0" -v t1="$t1" -v nb="$nb" '{ d = (t1 - t0) * 1e9
		printf "run-queue wait (share of the interval, summed over threads), involuntary switches/s:\n"
		printf "  executor %.3f, %.0f/s  tenants %.3f (%.4f each, %d), %.0f/s\n", $2 / d, $3 * 1e9 / d,
			$5 / d, nb ? $5 / d / nb : 0, nb, $6 * 1e9 / d }'
	echo
	echo "oooctl sched --json --interval 2000:"
	cat "$out/sched.json"
} >>"$f"
rm -rf "$rd"
cat "$f"
