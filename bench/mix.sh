#!/bin/sh
# bench/mix.sh OUTDIR [ooo-bench args]: where the mix's latency-critical
# tenant's time goes, in one call on the GPU machine (root: --critical-class
# runs the critical tenant with a supplementary group). Five points of
# ooo-bench --mode ooo, each through bench/profile.sh (the executor's
# counters over 2 s of the measured window, and the CPU of the executor,
# oood and the tenants), in OUTDIR/NAME/profile.txt:
#   alone      mix, T=1, --critical-class: the critical tenant alone
#   mix        mix, T=32, --critical-class: with 31 best-effort tenants
#              (class bench), the critical one in a class of its own
#   mix-sleep  the same with --wait-spin-us 0: best-effort tenants sleep on
#              their completion doorbell at once instead of spinning 1 ms
#   be         spin, T=31: the best-effort tenants alone
#   be-sleep   spin, T=31, --wait-spin-us 0
# Then OUTDIR/summary.txt: each point's result rows, CPU, and per tenant
# class the executor's command stages (submit, queue, run, notify: p50 /
# p99, oooctl sched's per-class rows). Default args: --slo-us 500
# --duration 6 --warmup 1 (profile.sh needs 5 s or more measured).
# BUILD (default build) holds ooo-bench, oood, oooctl.
set -eu
out=${1:?usage: bench/mix.sh OUTDIR [ooo-bench args]}
shift
[ $# -eq 0 ] && set -- --slo-us 500 --duration 6 --warmup 1
here=$(dirname "$0")
mkdir -p "$out"
sum=$out/summary.txt
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "host: $(uname -n), kernel $(uname -r), $(nproc) cpus"
	if command -v nvidia-smi >/dev/null 2>&1; then
		echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
	fi
	echo "args: $*"
} >"$sum"

point() {
	name=$1
	shift
	echo "== $name: $*" >>"$sum"
	if ! sh "$here/profile.sh" "$out/$name" "$@" >/dev/null 2>&1; then
		echo "   (profile.sh failed: see $out/$name)" >>"$sum"
		return 0
	fi
	grep -E '^(mix|spin) +ooo ' "$out/$name/profile.txt" >>"$sum" || true
	grep -A1 '^cpu over' "$out/$name/profile.txt" | tail -1 >>"$sum" || true
	python3 - "$out/$name/sched.json" >>"$sum" 2>/dev/null <<'EOF' ||
import json, sys
d = json.load(open(sys.argv[1]))
for g in d.get("gpus", []):
    iv = g.get("interval") or g.get("cumulative") or {}
    def us(v):
        return "-" if v is None else "%.0f" % (v / 1000.0)
    if not iv.get("commands_per_s"):
        continue  # an executor without tenants (a spare)
    print("   executor %s (%s):" % (g.get("index"), g.get("domain") or "-"))
    for c in iv.get("classes", []):
        st = " ".join("%s %s/%s" % (s, us(c.get("command_%s_p50_ns" % s)), us(c.get("command_%s_p99_ns" % s)))
                      for s in ("submit", "queue", "run", "notify"))
        print("   class %-12s launches/s %8.0f  lat mean %7.1f us  stages p50/p99 us: %s"
              % (c.get("name") or "(other)", c.get("launches_per_s") or 0, c.get("lat_mean_us") or 0, st))
    print("   executor: busy ns/command %s, passes/s %s, commands/s %s" %
          (iv.get("ns_per_command"), iv.get("loops_per_s"), iv.get("commands_per_s")))
EOF
		echo "   (no per-class stages: $out/$name/sched.json does not parse)" >>"$sum"
}

point alone mix 1 --critical-class "$@"
point mix mix 32 --critical-class "$@"
point mix-sleep mix 32 --critical-class --wait-spin-us 0 "$@"
point be spin 31 "$@"
point be-sleep spin 31 --wait-spin-us 0 "$@"
cat "$sum"
