#!/bin/sh
# bench/ping.sh OUTDIR [ooo-bench args]: run `ooo-bench ping` against a
# private oood and write OUTDIR/ping.json and OUTDIR/ping.txt with the run's
# context (host, CPU, kernel, driver, commit, command line).
# Set OOO_COMMIT to the commit being measured; BUILD to the build dir.
set -eu
out=${1:?usage: bench/ping.sh OUTDIR [ooo-bench ping args]}
shift
build=${BUILD:-build}
args=${*:---sessions 1,32 --seconds 5}
mkdir -p "$out"
rundir=$(mktemp -d /tmp/ooo-bench-XXXXXX)
"$build/oood" -f --rundir "$rundir" 2>"$out/oood.log" &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$rundir"' EXIT
for _ in $(seq 100); do [ -S "$rundir/oood.sock" ] && break; sleep 0.05; done
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: ${OOO_COMMIT:-unknown}"
	echo "host: $(uname -n), kernel $(uname -r), $(nproc) cpus"
	echo "cpu: $(sed -n 's/^model name\t*: //p' /proc/cpuinfo | head -1)"
	if command -v nvidia-smi >/dev/null 2>&1; then
		echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
	fi
	echo "command: $build/ooo-bench ping --rundir $rundir $args --json"
} >"$out/ping.txt"
# One measured run; the table below is made from its JSON.
# shellcheck disable=SC2086
OOO_COMMIT=${OOO_COMMIT:-unknown} "$build/ooo-bench" ping --rundir "$rundir" $args --json >"$out/ping.json"
if command -v python3 >/dev/null 2>&1; then
	python3 - "$out/ping.json" >>"$out/ping.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("%-13s %8s %12s %10s %10s %10s" % ("mode", "sessions", "rtt/s", "p50_us", "p99_us", "p99.9_us"))
for r in d["results"]:
    print("%-13s %8d %12.0f %10.2f %10.2f %10.2f" % (r["mode"], r["sessions"], r["rtt_per_s"], r["p50_us"], r["p99_us"], r["p999_us"]))
PY
fi
cat "$out/ping.txt"
