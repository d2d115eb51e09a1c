#!/bin/sh
# test_bundle.sh BUILD: the executor's coalescer on a real GPU. Launches that
# oood may bundle into fused launches must give the same bytes as launches it
# cannot bundle, for every fusible kernel of the JIT corpus
# (tests/jit/kernels/*.cu; PTX from nvcc, or from BUILD/tests/jit/ptx when
# that exists): BUILD/tests/gpu/bundle_check against a private oood, K = 8
# sessions per kernel, one launch at a time (the reference) against all 8
# submitted back to back (5 rounds), every buffer compared bit for bit.
# Run three times: with the default configuration (fuse = yes), where
# `oooctl sched` must then count fused launches (else the comparison never
# saw a bundle and proves nothing); with fuse = no, where it must count
# none; and with 4 launches per session and round back to back, which oood
# chains in one fused bundle (`oooctl sched` must count chained launches);
# all runs must pass, on the same kernels.
# Environment: BUNDLE_TIMEOUT_S (seconds for each bundle_check run, default 120).
set -u
build=${1:-build}
name=test_bundle
. "$(dirname "$0")/lib.sh"
gpu_require
gpu_require_nvcc
here=$(dirname "$0")
corpus=$here/../jit/kernels
check=$build/tests/gpu/bundle_check
limit=${BUNDLE_TIMEOUT_S:-120}
[ -x "$check" ] || { echo "$name: FAIL: $check is not built"; exit 1; }
tmp=$(mktemp -d /tmp/ooo-bundle-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failed=0
bad() {
	echo "$name: FAIL: $*"
	failed=1
}

# 1. the corpus's PTX, as test_jit.sh makes it
if [ -d "$build/tests/jit/ptx" ] && ls "$build/tests/jit/ptx"/*.ptx >/dev/null 2>&1; then
	ptxdir=$build/tests/jit/ptx
	echo "$name: PTX of the corpus from $ptxdir"
else
	ptxdir=$tmp/ptx
	mkdir -p "$ptxdir"
	ls "$corpus"/*.cu >/dev/null 2>&1 || { echo "$name: FAIL: no kernels in $corpus"; exit 1; }
	# shellcheck disable=SC2016 # expanded by the inner sh
	find "$corpus" -maxdepth 1 -name '*.cu' -print0 | xargs -0 -r -P "$(nproc 2>/dev/null || echo 4)" -I{} sh -c \
		'b=$(basename "$3" .cu); "$1" -ptx -arch=sm_90 -O3 -o "$2/$b.ptx" "$3" 2>"$2/$b.log" ||
		 { echo "nvcc failed on $3:"; cat "$2/$b.log"; }' _ "$nvcc" "$ptxdir" {}
	echo "$name: compiled $(find "$ptxdir" -name '*.ptx' | wc -l) corpus files with nvcc"
fi
# the list for bundle_check: each .cu of the corpus with its PTX
: >"$tmp/list"
for cu in "$corpus"/*.cu; do
	[ -f "$cu" ] || continue
	b=$(basename "$cu" .cu)
	if [ -s "$ptxdir/$b.ptx" ]; then
		printf '%s %s\n' "$ptxdir/$b.ptx" "$cu" >>"$tmp/list"
	else
		bad "no PTX for $cu"
	fi
done
[ -s "$tmp/list" ] || { echo "$name: FAIL: no PTX to run"; exit 1; }

# bundle_start FUSE: gpu_start of lib.sh with `fuse = FUSE` in [daemon] (lib.sh
# writes that section itself, and oood refuses a second [daemon])
bundle_start() {
	rundir=$(mktemp -d /tmp/ooo-gpu-XXXXXX)
	chmod 755 "$rundir"
	printf "[daemon]\nlibcuda = %s\nfuse = %s\n${OOO_GPU_DAEMON_KEYS:-}[class default]\nmatch_uid = *\nmax_sessions = 200\nmax_queues = 1024\n" \
		"$libcuda" "$1" >"$rundir/oood.conf"
	"$build/oood" -f -c "$rundir/oood.conf" --rundir "$rundir" 2>"$rundir/oood.log" &
	daemon=$!
	ctl="$build/oooctl --rundir $rundir"
	sock="$rundir/oood.sock"
	wait_ready || fail "fuse = $1: executor never became ready: $(field reason)"
}

# sched_sum KEY FILE: "KEY" summed over the GPUs of `oooctl --json sched` output
# (only keys that appear once in a GPU's counters: not "launches")
sched_sum() {
	sed -n "s/^ *\"$1\": \([0-9][0-9]*\),*\$/\1/p" "$2" | awk '{ s += $1 } END { print s + 0 }'
}
sched_max() {
	sed -n "s/^ *\"$1\": \([0-9][0-9]*\),*\$/\1/p" "$2" | awk '$1 > m { m = $1 } END { print m + 0 }'
}

# sched_counters FUSE: the executors' counters after the run; fuse = yes must
# show fused launches, fuse = no none. The executors report about once a second.
sched_counters() {
	f=$1
	if ! $ctl sched --help >/dev/null 2>&1; then
		echo "$name: fuse = $f: NOTE: this oooctl has no 'sched' command: the fused launches cannot be counted," \
			"so this run would pass even if oood never bundled a launch"
		return 0
	fi
	out=$tmp/sched.$f.json
	fused=0
	if [ "$f" = no ]; then
		sleep 1.5 # what a report would take to come, if the executor sent any
	fi
	for _ in $(seq 40); do
		if ! $ctl --json sched --interval 0 >"$out" 2>"$out.err"; then
			bad "fuse = $f: oooctl --json sched --interval 0 failed: $(cat "$out.err")"
			return 1
		fi
		fused=$(sched_sum fused_launches "$out")
		[ "$fused" -gt 0 ] || [ "$f" = no ] && break
		sleep 0.2
	done
	echo "$name: fuse = $f: oooctl sched: $fused fused launches in $(sched_sum fused_bundles "$out") fused bundles" \
		"(at most $(sched_max max_members "$out") members), $(sched_sum direct_launches "$out") direct launches," \
		"$(sched_sum retried "$out") retried unfused; JIT: $(sched_sum compiles "$out") compiles," \
		"$(sched_sum failures "$out") failures"
	if [ "$f" = chain ]; then
		chained=$(sched_sum chained_launches "$out")
		echo "$name: chain: $chained launches ran chained behind their queue's previous launch in a fused bundle"
		[ "$chained" -gt 0 ] || bad "chain: oooctl sched counts no chained launch: the chains were never tested"
	fi
	if [ "$f" != no ] && [ "$fused" -eq 0 ]; then
		sed 's/^/  | /' "$out"
		bad "fuse = yes: oooctl sched counts no fused launch: the results were compared without a single bundled launch, which proves nothing"
	elif [ "$f" = no ] && [ "$fused" -ne 0 ]; then
		bad "fuse = no: oooctl sched counts $fused fused launches: fuse = no was not applied"
	fi
}

# run_pass FUSE [LAUNCHES]: a private oood with fuse = FUSE, bundle_check against it, each session
# submitting LAUNCHES launches a round (default 1); the pass's files and rc_* are named FUSE, or
# "chain" with LAUNCHES
run_pass() {
	f=$1
	nl=${2:-1}
	[ "$nl" -gt 1 ] && f=chain
	echo "== $name: fuse = $1, $nl launch(es) per session and round"
	bundle_start "$1"
	timeout -k 5 "$limit" "$check" -s "$sock" -l "$nl" @"$tmp/list" >"$tmp/check.$f" 2>&1
	rc=$?
	cat "$tmp/check.$f"
	case $rc in
	0) ;;
	124 | 137) bad "fuse = $f: bundle_check ran past $limit s" ;;
	*) bad "fuse = $f: bundle_check exited $rc" ;;
	esac
	sched_counters "$f"
	if grep -q 'runs unfused\|not coalesced' "$rundir/oood.log"; then
		echo "$name: fuse = $f: oood says:"
		grep 'runs unfused\|not coalesced' "$rundir/oood.log" | sort | uniq -c | sed 's/^/  | /'
	fi
	if [ "$rc" -ne 0 ]; then
		echo "$name: fuse = $f: the end of oood's log:"
		tail -40 "$rundir/oood.log" | sed 's/^/  | /'
	fi
	gpu_stop
	eval "rc_$f=\$rc"
	grep '^ok: ' "$tmp/check.$f" | sort >"$tmp/ok.$f"
}

run_pass yes
run_pass no
# a queue's launches back to back: oood chains them in one fused bundle (chain_launches, default yes),
# and a kernel whose output feeds its next launch shows whether they ran in order
run_pass yes 4

# every pass must pass, on the same kernels
# shellcheck disable=SC2154 # rc_yes, rc_no and rc_chain are set by run_pass through eval
if [ "$rc_yes" -eq 0 ] && [ "$rc_no" -eq 0 ] && [ "$rc_chain" -eq 0 ]; then
	if cmp -s "$tmp/ok.yes" "$tmp/ok.no" && cmp -s "$tmp/ok.yes" "$tmp/ok.chain"; then
		echo "$name: fuse = yes, fuse = no and chains all pass, on the same $(wc -l <"$tmp/ok.yes") kernels"
	else
		bad "the passes passed different kernels: yes/no: $(diff "$tmp/ok.yes" "$tmp/ok.no" | grep '^[<>]' | tr '\n' ' ')" \
			"yes/chain: $(diff "$tmp/ok.yes" "$tmp/ok.chain" | grep '^[<>]' | tr '\n' ' ')"
	fi
else
	bad "bundle_check exit: fuse = yes $rc_yes, fuse = no $rc_no, chains $rc_chain (all must pass)"
fi
[ "$failed" -eq 0 ] || exit 1
echo "test_bundle: OK"
