#!/bin/sh
# bench/profile.sh OUTDIR WORKLOAD T [ooo-bench args]: one ooo point of
# WORKLOAD with T tenants, profiled while it runs. Writes OUTDIR/profile.txt:
# the bench's table, the scheduler's counters over the middle of the measured
# window (oooctl sched --json, rates from the executor's own timestamps), and
# the CPU time of the executor, oood and the tenants over the same interval
# (from /proc, in cores). The measured window must last 3 s or more. BUILD (default build) holds ooo-bench, oood, oooctl.
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

# utime+stime (ticks) of the processes $* (one read of each stat file; a
# process gone meanwhile counts nothing): fields after the command: state is
# 1, utime 12, stime 13
ticks() {
	[ $# -eq 0 ] && { echo 0; return; }
	for p in "$@"; do cat "/proc/$p/stat" 2>/dev/null; done | awk '{ sub(/^.*\) /, ""); s += $12 + $13 } END { print s + 0 }'
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
pe=$(pids '*--executor*') po=$(pids '*oood -f*') pb=$(pids '*ooo-bench*--tenant*')
# shellcheck disable=SC2086 # the pid lists split into words on purpose
e0=$(ticks $pe) o0=$(ticks $po) b0=$(ticks $pb)
t0=$(date +%s.%N)
"$build/oooctl" --rundir "$rd" --json sched --interval 2000 >"$out/sched.json" 2>&1 || true
t1=$(date +%s.%N)
# shellcheck disable=SC2086
e1=$(ticks $pe) o1=$(ticks $po) b1=$(ticks $pb)
wait $bp || true
{
	cat "$out/bench.txt"
	echo
	awk -v t0="$t0" -v t1="$t1" 'BEGIN { printf "cpu over %.2f s (cores):\n", t1 - t0 }'
	awk -v e=$((e1 - e0)) -v o=$((o1 - o0)) -v b=$((b1 - b0)) -v hz="$hz" -v t0="$t0" -v t1="$t1" \
		'BEGIN { d = t1 - t0; printf "  executor %.2f  oood %.2f  tenants %.2f\n", e / hz / d, o / hz / d, b / hz / d }'
	echo
	echo "oooctl sched --json --interval 2000:"
	cat "$out/sched.json"
} >>"$f"
rm -rf "$rd"
cat "$f"
