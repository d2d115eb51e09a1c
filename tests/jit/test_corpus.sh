#!/bin/sh
# test_corpus.sh [BUILD]: check the PTX JIT (BUILD/ooo-jit) against the
# kernel corpus in tests/jit/kernels (see tests/jit/README.md).
#
#  1. compile every kernels/*.cu to BUILD/tests/jit/ptx/NAME.ptx
#     (nvcc -ptx -arch=sm_90 -O3, skipped when the .ptx is newer), and lint
#     the spec lines against the PTX (parameter count and sizes, limits)
#  2. ooo-jit inspect: each kernel fusible or not as its spec line says
#  3. ooo-jit print, then ptxas on the result, for every file
#  4. ooo-jit fuse --check F:K, F:K*2, F:K*16 for every fusible kernel, and
#     F:K*16 writes the same PTX as F:K
#  5. heterogeneous sets (sliding windows of 2..8 fusible kernels sorted by
#     name) fuse; a set holding a rejected kernel fails and names it
#  6. ooo-jit fuse of a rejected kernel alone exits 1 with its reason
#  7. ooo-jit fence of every kernel (fusible or not): either a reason
#     (exit 1), or PTX that ptxas accepts and that ooo-jit fence-check
#     proves guarded; the same PTX with one guard's mask removed fails
#     the check
#  8. ooo-jit fence-all of every file (what a fenced executor loads): ptxas
#     accepts the result, fence-check proves it when a kernel was fenced,
#     each kernel not fenced is named with its reason, and each fenced copy
#     the JIT finds fusible fuses x4 into PTX that ptxas accepts
#
# Needs the CUDA toolkit at ${CUDA_HOME:-/usr/local/cuda} (no GPU); exits 77
# without nvcc. Prints "test_corpus: FAIL: ..." per failed check, then one
# line "N passed, N failed". Work files go to BUILD/tests/jit/ (run.PID/ is
# removed after a run without failures).
set -u

tab=$(printf '\t')

# --- one job of steps 3 to 6, run by xargs: --job N -------------------------
# The job's words are the lines of $OOOJ_WORK/jobs/N; it writes one line per
# check to $OOOJ_WORK/res/N: "PASS what" or "FAIL what: why".
if [ "${1:-}" = "--job" ]; then
	n=$2
	work=$OOOJ_WORK
	jit=$OOOJ_JIT
	res=$work/res/$n
	log=$work/log/$n
	set --
	while IFS= read -r line; do
		set -- "$@" "$line"
	done <"$work/jobs/$n"
	kind=$1
	shift
	: >"$res"
	# run a command with a time limit when timeout(1) exists: OOOJ_LIMIT
	# seconds, less when the whole run's OOOJ_DEADLINE (epoch) comes first
	limit() {
		t=$OOOJ_LIMIT
		now=$(date +%s 2>/dev/null) || now=
		case $OOOJ_DEADLINE:$now in
		0:* | *: | *:*[!0-9]*) ;;
		*)
			left=$((OOOJ_DEADLINE - now))
			if [ $left -le 0 ]; then
				echo "not run: past the time limit of the whole test" >&2
				return 125
			fi
			[ $left -ge "$t" ] || t=$left
			;;
		esac
		if command -v timeout >/dev/null 2>&1; then
			timeout -k 5 "$t" "$@"
		else
			"$@"
		fi
	}
	pass() { echo "PASS $1" >>"$res"; }
	# fail WHAT RC LOGFILE: the first non-empty line of the log says why
	fail() {
		why=$(grep -v '^[[:space:]]*$' "$3" 2>/dev/null | head -n 1 | cut -c1-300)
		echo "FAIL $1: exit $2${why:+: $why} (log $3)" >>"$res"
	}
	case $kind in
	print) # print PTX BASE
		out=$work/out/$2.print.ptx
		limit "$jit" print "$1" >"$out" 2>"$log.print"
		rc=$?
		if [ $rc -ne 0 ]; then
			fail "ooo-jit print $2" $rc "$log.print"
		else
			limit "$OOOJ_PTXAS" -arch=sm_90 "$out" -o /dev/null >"$log.ptxas" 2>&1
			rc=$?
			if [ $rc -eq 0 ]; then pass "print $2 + ptxas"; else fail "ptxas on ooo-jit print $2 ($out)" $rc "$log.ptxas"; fi
		fi
		;;
	homo) # homo PTX KERNEL TAG
		for mult in 1 2 16; do
			m="$1:$2" what=$3
			[ $mult -eq 1 ] || m="$m*$mult" what="$3*$mult"
			out=$work/out/$3.x$mult.ptx
			rm -f "$out"
			limit "$jit" fuse --check "$m" -o "$out" >"$log.$mult" 2>&1
			rc=$?
			if [ $rc -eq 0 ] && [ -s "$out" ]; then
				pass "fuse --check $what"
			else
				[ $rc -ne 0 ] || echo "exited 0 but wrote no $out" >"$log.$mult"
				fail "fuse --check $what" $rc "$log.$mult"
			fi
		done
		if [ -s "$work/out/$3.x1.ptx" ] && [ -s "$work/out/$3.x16.ptx" ] &&
			cmp -s "$work/out/$3.x1.ptx" "$work/out/$3.x16.ptx"; then
			pass "fuse $3*16 = fuse $3"
		else
			echo "FAIL fuse $3*16 wrote other PTX than fuse $3 (or one is missing): $work/out/$3.x1.ptx $work/out/$3.x16.ptx" >>"$res"
		fi
		;;
	set) # set NAME MEMBER...
		name=$1
		shift
		out=$work/out/$name.ptx
		rm -f "$out"
		limit "$jit" fuse --check "$@" -o "$out" >"$log" 2>&1
		rc=$?
		if [ $rc -eq 0 ] && [ -s "$out" ]; then
			pass "fuse --check set $name"
		else
			[ $rc -ne 0 ] || echo "exited 0 but wrote no $out" >"$log"
			fail "fuse --check set $name ($*)" $rc "$log"
		fi
		;;
	mixed) # mixed NAME REJECTED_KERNEL MEMBER...
		name=$1 bad=$2
		shift 2
		limit "$jit" fuse --check "$@" -o "$work/out/$name.ptx" >"$log" 2>&1
		rc=$?
		if [ $rc -eq 0 ]; then
			echo "FAIL fuse of set $name with rejected $bad exited 0 ($*)" >>"$res"
		elif [ $rc -ge 124 ]; then
			fail "fuse of set $name with rejected $bad" $rc "$log"
		elif grep -qF -- "$bad" "$log"; then
			pass "fuse of set $name with rejected $bad fails"
		else
			fail "fuse of set $name failed without naming $bad" $rc "$log"
		fi
		;;
	fence) # fence PTX KERNEL TAG
		out=$work/out/$3.fenced.ptx
		limit "$jit" fence "$1" "$2" >"$out" 2>"$log"
		rc=$?
		if [ $rc -eq 1 ] && grep -q "cannot be fenced" "$log"; then
			pass "fence $3 refused with a reason ($(head -c 200 "$log" | tr '\n' ' '))"
		elif [ $rc -ne 0 ]; then
			fail "fence $3" $rc "$log"
		elif ! limit "$OOOJ_PTXAS" -arch=sm_90 -o /dev/null "$out" >"$log" 2>&1; then
			fail "ptxas on fenced $3" 1 "$log"
		elif ! limit "$jit" fence-check "$out" >"$log" 2>&1; then
			fail "fence-check of fenced $3" 1 "$log"
		else
			pass "fence $3: ptxas accepts it, fence-check proves it"
			if grep -q "lop3.b32 %ooo_fn, %ooo_fh, %ooo_fo, %ooo_fbh, 0xea;" "$out"; then
				awk 'done != 1 && /lop3.b32 %ooo_fn, %ooo_fh, %ooo_fo, %ooo_fbh, 0xea;/ { done = 1; next } { print }' "$out" >"$out.broken"
				if limit "$jit" fence-check "$out.broken" >"$log" 2>&1; then
					echo "FAIL fence-check accepted $3 with a guard removed" >>"$res"
				else
					pass "fence-check refuses $3 with a guard removed"
				fi
			fi
		fi
		;;
	fenceall) # fenceall PTX TAG
		out=$work/out/$2.fenceall.ptx
		limit "$jit" fence-all "$1" >"$out" 2>"$log"
		rc=$?
		n=$(sed -n 's/^ooo-jit: fence-all: \([0-9]*\) of \([0-9]*\) kernels fenced$/\1 \2/p' "$log")
		set -- $n
		if [ $rc -ne 0 ] || [ -z "$n" ]; then
			fail "fence-all $2" $rc "$log"
		elif [ $(($2 - $1)) -ne $(grep -vc '^ooo-jit: fence-all:' "$log") ]; then
			fail "fence-all: $(($2 - $1)) kernels not fenced, but not each named with a reason" 1 "$log"
		elif ! limit "$OOOJ_PTXAS" -arch=sm_90 -o /dev/null "$out" >"$log.ptxas" 2>&1; then
			fail "ptxas on fence-all output" 1 "$log.ptxas"
		elif [ "$1" -gt 0 ] && ! limit "$jit" fence-check "$out" >"$log.check" 2>&1; then
			fail "fence-check of fence-all output" 1 "$log.check"
		else
			pass "fence-all: $1 of $2 kernels fenced in one module, ptxas accepts it, fence-check proves it"
			# the fenced copies fuse (the window from each member's descriptor): ptxas accepts the fused kernel
			for fk in $(limit "$jit" inspect "$out" 2>/dev/null | sed -n 's/^kernel \([^:]*_ooo_fenced\): fusible$/\1/p'); do
				if ! limit "$jit" fuse --check -o "$out.$fk.fused.ptx" "$out:$fk*4" >"$log.fuse" 2>&1; then
					fail "fuse of fenced $fk x4" 1 "$log.fuse"
				elif grep -q "or.b32 %[a-z0-9_]*ooo_fv\|xor.b32 %[a-z0-9_]*ooo_fx" "$out.$fk.fused.ptx"; then
					# the fused form of the violation flag (daemon/jit/fence.c): a predicate, never the 32-bit flag
					fail "fuse of fenced $fk x4 kept a 32-bit violation flag" 1 "$out.$fk.fused.ptx"
				else
					pass "fuse of fenced $fk x4: ptxas accepts it, its violation flag in the fused form"
				fi
			done
		fi
		;;
	alone) # alone PTX KERNEL REASON TAG
		limit "$jit" fuse "$1:$2" -o "$work/out/$4.reject.ptx" >"$log" 2>&1
		rc=$?
		if [ $rc -ne 1 ]; then
			fail "fuse of rejected $4 should exit 1" $rc "$log"
		elif grep -qiF -- "$3" "$log"; then
			pass "fuse of rejected $4 fails"
		else
			fail "fuse of rejected $4: no \"$3\" in its message" $rc "$log"
		fi
		;;
	*)
		echo "FAIL job $n: unknown kind $kind" >>"$res"
		;;
	esac
	exit 0
fi

# --- setup -------------------------------------------------------------------
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
kernels=$here/kernels
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ -x "$cuda/bin/nvcc" ]; then
	nvcc=$cuda/bin/nvcc
elif command -v nvcc >/dev/null 2>&1; then
	nvcc=$(command -v nvcc)
	cuda=$(cd "$(dirname "$nvcc")/.." && pwd)
else
	echo "test_corpus: SKIP: no nvcc"
	exit 77
fi
PATH=$cuda/bin:$PATH
CUDA_HOME=$cuda
export PATH CUDA_HOME
ptxas=$cuda/bin/ptxas
[ -x "$ptxas" ] || ptxas=$(command -v ptxas) || {
	echo "test_corpus: SKIP: nvcc ($nvcc) but no ptxas"
	exit 77
}

jobs=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
case $jobs in '' | *[!0-9]*) jobs=2 ;; esac

top=$build/tests/jit
ptxdir=$top/ptx
# one work directory per run, so that runs on one BUILD do not collide;
# kept when a check fails
work=$top/run.$$
mkdir -p "$ptxdir" || exit 1
rm -rf "$work"
mkdir -p "$work/jobs" "$work/res" "$work/log" "$work/out" "$work/compile" || exit 1
work=$(cd "$work" && pwd)
ptxdir=$(cd "$ptxdir" && pwd)
jit=$build/ooo-jit
case $jit in /*) ;; *) jit=$(pwd)/$jit ;; esac

passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() {
	echo "test_corpus: FAIL: $*"
	failed=$((failed + 1))
}
finish() {
	[ "$failed" -ne 0 ] || rm -rf "$work"
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

# --- 1. compile --------------------------------------------------------------
set -- "$kernels"/*.cu
if [ ! -f "$1" ]; then
	bad "no kernels in $kernels"
	finish
fi
: >"$work/compile.lst"
for cu in "$@"; do
	base=$(basename "$cu" .cu)
	ptx=$ptxdir/$base.ptx
	if [ -f "$ptx" ] && [ -z "$(find "$cu" -newer "$ptx")" ]; then
		continue
	fi
	rm -f "$ptx"
	echo "$cu" >>"$work/compile.lst"
done
# each compile writes NAME.ptx.tmpPID and renames it, so a killed run leaves no
# half-written PTX that looks newer than its source
# shellcheck disable=SC2016 # expanded by the inner sh
tr '\n' '\0' <"$work/compile.lst" | xargs -0 -r -n 1 -P "$jobs" sh -c '
	b=$(basename "$4" .cu)
	if "$1" -ptx -arch=sm_90 -O3 "$4" -o "$2/$b.ptx.tmp$$" >"$3/$b.log" 2>&1; then
		mv "$2/$b.ptx.tmp$$" "$2/$b.ptx"
	else
		rm -f "$2/$b.ptx.tmp$$"
	fi' sh "$nvcc" "$ptxdir" "$work/compile"

# --- spec lint (awk over FILE.ptx, then FILE.cu) -----------------------------
# Prints one record per spec line: S<TAB>kernel<TAB>expect<TAB>reason<TAB>status,
# and one C<TAB>status for the file (every .entry has a spec line). status is
# "ok" or why not; reason is "-" for fusible kernels.
# shellcheck disable=SC2016 # an awk program
lint='
function err(s) { if (why == "") why = s }
function isint(s) { return s ~ /^[0-9]+$/ }
function dims(v, what, lo, hi,   n, a, i, p) {
	n = split(v, a, ",")
	if (n < 1 || n > 3) { err(what " needs 1 to 3 numbers"); return }
	p = 1
	for (i = 1; i <= n; i++) {
		if (!isint(a[i]) || a[i] + 0 < 1) { err(what " " v ": not positive integers"); return }
		p *= a[i]
	}
	if (p < lo || p > hi) err(what " " v ": " p " not in " lo ".." hi)
}
function tsize(t) {
	if (t == "u8") return 1
	if (t == "f16" || t == "bf16") return 2
	if (t == "f32" || t == "i32" || t == "u32") return 4
	if (t == "f64" || t == "i64" || t == "u64") return 8
	return 0
}
function param(p, k,   a, n, sz) {
	n = split(p, a, ":")
	if (a[1] == "in" || a[1] == "out" || a[1] == "inout") {
		if (n != 3 || !tsize(a[2]) || !isint(a[3]) || a[3] + 0 < 1) { err("bad buffer " p); return 0 }
		if (a[3] * tsize(a[2]) > 4194304) err("buffer " p " over 4 MiB")
		return -8
	}
	if (a[1] == "idx") {
		if (n != 4 || a[2] !~ /^(i32|u32|i64|u64|u8)$/ || !isint(a[3]) || a[3] + 0 < 1 || !isint(a[4]) || a[4] + 0 < 1) { err("bad index buffer " p); return 0 }
		if (a[3] * tsize(a[2]) > 4194304) err("buffer " p " over 4 MiB")
		return -8
	}
	if (a[1] == "raw") {
		if (n != 2 || a[2] !~ /^([0-9a-fA-F][0-9a-fA-F])+$/) { err("bad raw " p); return 0 }
		return length(a[2]) / 2
	}
	if (n != 2) { err("bad parameter " p); return 0 }
	if (a[1] ~ /^i(32|64)$/ && a[2] ~ /^-?[0-9]+$/) return tsize(a[1])
	if (a[1] ~ /^u(32|64)$/ && a[2] ~ /^[0-9]+$/) return tsize(a[1])
	if (a[1] ~ /^f(32|64)$/ && a[2] ~ /^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/) return tsize(a[1])
	err("bad parameter " p)
	return 0
}
FNR == NR {
	if (match($0, /^[ \t]*(\.visible[ \t]+|\.weak[ \t]+)?\.entry[ \t]+/)) {
		cur = substr($0, RSTART + RLENGTH)
		sub(/[ \t(].*$/, "", cur)
		nent++
		ent[nent] = cur
		np[cur] = 0
		rest = $0
		sub(/^[^(]*/, "", rest)
		if (rest ~ /\)/) cur = ""
		next
	}
	if (cur != "") {
		if ($0 ~ /^[ \t]*\)/) { cur = ""; next }
		if ($0 ~ /\.param/) {
			sz = 0
			if (match($0, /\.[usbf](8|16|32|64)([ \t,]|$)/))
				sz = substr($0, RSTART + 2, RLENGTH - 2) / 8
			sz = int(sz)
			if (match($0, /\[[0-9]+\]/))
				sz *= substr($0, RSTART + 1, RLENGTH - 2)
			np[cur]++
			psz[cur, np[cur]] = sz
			if ($0 ~ /\)/) cur = ""
		}
	}
	next
}
/^[ \t]*\/\/[ \t]*ooo-jit:/ {
	line = $0
	sub(/^[ \t]*\/\/[ \t]*ooo-jit:[ \t]*/, "", line)
	why = ""
	reason = ""
	kernel = ""
	expect = ""
	delete kv
	if (match(line, /(^|[ \t])reason=/)) {
		reason = substr(line, RSTART + RLENGTH)
		sub(/[ \t]+$/, "", reason)
		line = substr(line, 1, RSTART - 1)
		if (reason == "") err("empty reason")
		if (reason ~ /\t/) err("tab in reason")
	}
	n = split(line, f, /[ \t]+/)
	for (i = 1; i <= n; i++) {
		if (f[i] == "") continue
		eq = index(f[i], "=")
		if (eq < 2) { err("not key=value: " f[i]); continue }
		key = substr(f[i], 1, eq - 1)
		if (key in kv) err("repeated " key)
		kv[key] = substr(f[i], eq + 1)
	}
	kernel = ("kernel" in kv) ? kv["kernel"] : ""
	expect = ("expect" in kv) ? kv["expect"] : ""
	if (kernel == "") { err("no kernel="); kernel = "?" }
	else if (!(kernel in np)) err("no .entry " kernel " in the PTX")
	if (kernel in seen) err("second spec line for " kernel)
	seen[kernel] = 1
	if (expect == "reject") {
		if (reason == "") err("expect=reject needs reason=")
		for (key in kv) if (key != "kernel" && key != "expect") err("unexpected " key "= for a rejected kernel")
	} else if (expect == "fusible") {
		if (reason != "") err("reason= for a fusible kernel")
		reason = "-"
		for (key in kv) if (key !~ /^(kernel|expect|grid|block|smem|params)$/) err("unknown key " key "=")
		if (!("grid" in kv) || !("block" in kv) || !("smem" in kv) || !("params" in kv)) err("expect=fusible needs grid= block= smem= params=")
		else {
			dims(kv["grid"], "grid", 1, 64)
			dims(kv["block"], "block", 32, 512)
			if (!isint(kv["smem"]) || kv["smem"] + 0 > 49152) err("smem " kv["smem"] " not in 0..49152")
			np2 = 0
			if (kv["params"] != "") np2 = split(kv["params"], ps, ";")
			if (kernel in np) {
				if (np2 != np[kernel]) err(np2 " params, the PTX has " np[kernel])
				else for (i = 1; i <= np2; i++) {
					s = param(ps[i], kernel)
					if (s < 0 && psz[kernel, i] != 8) err("param " i " (" ps[i] ") is a pointer, the PTX has " psz[kernel, i] " bytes")
					else if (s > 0 && s != psz[kernel, i]) err("param " i " (" ps[i] ") has " s " bytes, the PTX " psz[kernel, i])
				}
			}
		}
	} else {
		err("expect=" expect ": not fusible or reject")
		expect = "?"
	}
	printf "S\t%s\t%s\t%s\t%s\n", kernel, expect, (reason == "" ? "-" : reason), (why == "" ? "ok" : why)
}
END {
	why = ""
	for (i = 1; i <= nent; i++)
		if (!(ent[i] in seen)) { if (why != "") why = why ", "; why = why ent[i] }
	printf "C\t%s\n", (why == "" ? "ok" : "no spec line for " why)
}'

: >"$work/fusible.lst"
: >"$work/reject.lst"
: >"$work/files.lst"
for cu in "$kernels"/*.cu; do
	base=$(basename "$cu" .cu)
	ptx=$ptxdir/$base.ptx
	if [ ! -f "$ptx" ]; then
		why=$(grep -v '^[[:space:]]*$' "$work/compile/$base.log" 2>/dev/null | head -n 1 | cut -c1-300)
		bad "compile $base.cu${why:+: $why} (log $work/compile/$base.log)"
		continue
	fi
	ok
	echo "$base" >>"$work/files.lst"
	awk "$lint" "$ptx" "$cu" >"$work/spec.$base" || bad "lint $base.cu: awk failed"
	while IFS="$tab" read -r tag k e r st; do
		if [ "$tag" = C ]; then # C<TAB>status: the status is in k
			if [ "$k" = ok ]; then ok; else bad "spec $base.cu: $k"; fi
			continue
		fi
		if [ "$st" = ok ]; then ok; else bad "spec $base.cu:$k: $st"; fi
		case $e in
		fusible) printf '%s\t%s\t%s\n' "$k" "$base" "$r" >>"$work/fusible.lst" ;;
		reject) printf '%s\t%s\t%s\n' "$k" "$base" "$r" >>"$work/reject.lst" ;;
		esac
	done <"$work/spec.$base"
done

if [ ! -x "$jit" ]; then
	bad "no $jit: build it first"
	finish
fi

# --- 2. inspect --------------------------------------------------------------
# ooo-jit inspect prints "kernel NAME: fusible" or "kernel NAME: not fusible:
# REASON", then indented detail lines.
while IFS= read -r base; do
	ptx=$ptxdir/$base.ptx
	out=$work/out/$base.inspect
	if command -v timeout >/dev/null 2>&1; then
		timeout -k 5 60 "$jit" inspect "$ptx" >"$out" 2>"$out.err"
	else
		"$jit" inspect "$ptx" >"$out" 2>"$out.err"
	fi
	rc=$?
	for lst in fusible reject; do
		while IFS="$tab" read -r k b r; do
			[ "$b" = "$base" ] || continue
			verdict=$(awk -v p="kernel $k: " 'index($0, p) == 1 { v = substr($0, length(p) + 1); sub(/[ \t\r]+$/, "", v); print v; exit }' "$out")
			if [ -z "$verdict" ]; then
				why=$(head -n 1 "$out.err" | cut -c1-300)
				bad "inspect $base:$k: no \"kernel $k:\" line (exit $rc${why:+: $why})"
			elif [ $lst = fusible ]; then
				if [ "$verdict" = fusible ]; then ok; else bad "inspect $base:$k: expected fusible, got \"$verdict\""; fi
			else
				case $verdict in
				"not fusible: "*)
					if printf '%s\n' "${verdict#not fusible: }" | grep -qiF -- "$r"; then
						ok
					else
						bad "inspect $base:$k: reason \"${verdict#not fusible: }\" lacks \"$r\""
					fi
					;;
				*) bad "inspect $base:$k: expected not fusible ($r), got \"$verdict\"" ;;
				esac
			fi
		done <"$work/$lst.lst"
	done
done <"$work/files.lst"

# --- 3 to 6: jobs run in parallel --------------------------------------------
njob=0
# job KIND WORD...: one word per line of the job file
job() {
	njob=$((njob + 1))
	printf '%s\n' "$@" >"$work/jobs/$njob"
}
while IFS= read -r base; do
	job print "$ptxdir/$base.ptx" "$base"
done <"$work/files.lst"
while IFS="$tab" read -r k b r; do
	job homo "$ptxdir/$b.ptx" "$k" "$b.$k"
done <"$work/fusible.lst"
for lst in fusible reject; do
	while IFS="$tab" read -r k b r; do
		job fence "$ptxdir/$b.ptx" "$k" "$b.$k"
	done <"$work/$lst.lst"
done
while IFS= read -r base; do
	job fenceall "$ptxdir/$base.ptx" "$base"
done <"$work/files.lst"

# heterogeneous sets: sliding windows over the fusible kernels sorted by name
LC_ALL=C sort -t "$tab" -k1,1 -k2,2 "$work/fusible.lst" >"$work/fusible.sorted"
nf=$(wc -l <"$work/fusible.sorted")
size=2
while [ $size -le 8 ]; do
	start=0
	while [ $((start + size)) -le "$nf" ]; do
		set -- set "w$size.$start"
		while IFS="$tab" read -r k b r; do
			set -- "$@" "$ptxdir/$b.ptx:$k"
		done <<EOF
$(sed -n "$((start + 1)),$((start + size))p" "$work/fusible.sorted")
EOF
		job "$@"
		start=$((start + 5))
	done
	size=$((size + 1))
done

# each rejected kernel inside a set of fusible ones, and alone
i=0
while IFS="$tab" read -r k b r; do
	i=$((i + 1))
	if [ "$nf" -ge 2 ]; then
		f1=$(sed -n "$(((i * 7) % nf + 1))p" "$work/fusible.sorted")
		f2=$(sed -n "$(((i * 7 + 3) % nf + 1))p" "$work/fusible.sorted")
		job mixed "mixed.$b.$k" "$k" "$ptxdir/$(echo "$f1" | cut -f2).ptx:$(echo "$f1" | cut -f1)" \
			"$ptxdir/$b.ptx:$k" "$ptxdir/$(echo "$f2" | cut -f2).ptx:$(echo "$f2" | cut -f1)"
	fi
	job alone "$ptxdir/$b.ptx" "$k" "$r" "$b.$k"
done <"$work/reject.lst"

# a command may run OOOJ_LIMIT seconds; the jobs stop starting commands
# OOOJ_BUDGET seconds from now (a hung JIT fails fast instead of for hours)
OOOJ_LIMIT=${OOOJ_LIMIT:-60}
now=$(date +%s 2>/dev/null) || now=
case $now in '' | *[!0-9]*) now=0 ;; esac
OOOJ_DEADLINE=$((now + ${OOOJ_BUDGET:-900}))
[ "$now" -ne 0 ] || OOOJ_DEADLINE=0
OOOJ_WORK=$work OOOJ_JIT=$jit OOOJ_PTXAS=$ptxas
export OOOJ_WORK OOOJ_JIT OOOJ_PTXAS OOOJ_LIMIT OOOJ_DEADLINE
if [ $njob -gt 0 ]; then
	seq_n=1
	while [ $seq_n -le $njob ]; do
		echo $seq_n
		seq_n=$((seq_n + 1))
	done | xargs -n 1 -P "$jobs" sh "$here/test_corpus.sh" --job
fi
n=1
while [ $n -le $njob ]; do
	if [ ! -s "$work/res/$n" ]; then
		bad "job $n ($(head -n 1 "$work/jobs/$n")) left no result"
	else
		while IFS= read -r line; do
			case $line in
			"PASS "*) ok ;;
			"FAIL "*) bad "${line#FAIL }" ;;
			*) bad "job $n: $line" ;;
			esac
		done <"$work/res/$n"
	fi
	n=$((n + 1))
done
finish
