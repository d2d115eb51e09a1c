#!/bin/sh
# test_cuda_abi.sh [BUILD]: compare ooo's own CUDA declarations
# (daemon/exec/cuda_api.h, nvrtc_api.h) with the toolkit's cuda.h and
# nvrtc.h in $CUDA_HOME/include (default /usr/local/cuda): every value,
# enum and typedef size and signedness, handle type, struct size and
# alignment, and every member's offset and size, at run time; every
# prototype at compile time (it is declared a second time after the
# toolkit's header, where a different signature is a compile error).
# Exits 77 (skip) without the toolkit's headers, 0 when all agree, 1 with
# a line per difference otherwise.
#
# How: awk reads our header (its layout rules are at the top of
# cuda_api.h) into a list of checks; sed makes a copy of it with every
# CUDA name prefixed abi_, so one program can include both that copy and
# the toolkit's header and compare X with abi_X. Every CUDA name the
# header declares must be in the list, so a declaration the awk does not
# understand fails the test rather than going unchecked.
set -u
build=${1:-build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
CC=${CC:-cc}
inc=$CUDA_HOME/include
me=test_cuda_abi
if [ ! -r "$inc/cuda.h" ]; then
	echo "$me: skip: no CUDA toolkit headers ($inc/cuda.h missing; set CUDA_HOME)"
	exit 77
fi
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$build/tests/cuda_abi
mkdir -p "$out" || exit 1

# The names each header declares: what the abi_ copy renames.
cuda_names='CU[A-Za-z0-9_]*|cu[A-Z][A-Za-z0-9_]*|cuuint64_t'
nvrtc_names='_?nvrtc[A-Z][A-Za-z]*|NVRTC_[A-Z_]+'

# checks HEADER: one check per line, from our header's declarations:
#   V NAME [SINCE]        a value (enumerator or #define)
#   E TYPE                an enum type
#   T TYPE                a scalar typedef
#   H TYPE TAG            a handle: pointer to struct TAG
#   S TYPE prefix|whole TAG  a struct (prefix: ours is the driver's first members)
#   F TYPE MEMBER [SINCE] a struct member (MEMBER may be a.b)
#   P NAME                a prototype (checked by the compiler)
checks() {
	awk '
	function since(s) { return match(s, /since [0-9]+/) ? " " substr(s, RSTART + 6, RLENGTH - 6) : "" }
	{
		line = $0
		if (incomment) {
			if (!sub(/.*\*\//, "", line)) next
			incomment = 0
		}
		note = ""
		while (match(line, /\/\*.*\*\//)) { note = note substr(line, RSTART, RLENGTH); line = substr(line, 1, RSTART - 1) substr(line, RSTART + RLENGTH) }
		if (match(line, /\/\*/)) { note = note substr(line, RSTART); line = substr(line, 1, RSTART - 1); incomment = 1 }
		gsub(/^[ \t]+|[ \t]+$/, "", line)
		if (line == "") next
	}
	enum {
		if (line ~ /^}/) { t = line; gsub(/[};[:space:]]/, "", t); print "E " t; enum = 0; next }
		n = line; sub(/[ \t]*=.*/, "", n); print "V " n since(note); next
	}
	depth > 0 {
		if (line ~ /^(struct|union)[ \t]*{$/) { depth++; buf[depth] = ""; next }
		if (line ~ /^}/) {
			name = line; gsub(/[};[:space:]]/, "", name)
			if (depth == 1) {
				print "S " name " " (prefix ? "prefix" : "whole") " " tag
				nf = split(buf[1], f, "\n")
				for (i = 1; i <= nf; i++) if (f[i] != "") print "F " name " " f[i]
				depth = 0; next
			}
			nf = split(buf[depth], f, "\n"); depth--
			if (name != "") buf[depth] = buf[depth] name "\n"
			for (i = 1; i <= nf; i++) if (f[i] != "") buf[depth] = buf[depth] (name != "" ? name "." : "") f[i] "\n"
			next
		}
		m = line; sub(/\[.*\]/, "", m); sub(/;$/, "", m); sub(/.*[ \t*]/, "", m)
		buf[depth] = buf[depth] m since(note) "\n"; next
	}
	line ~ /^typedef enum/ { enum = 1; next }
	line ~ /^typedef struct [A-Za-z0-9_]+ {$/ { depth = 1; buf[1] = ""; prefix = (note ~ /abi: prefix/); tag = $3; next }
	line ~ /^typedef struct [A-Za-z0-9_]+ \*[A-Za-z0-9_]+;$/ { sub(/;.*/, "", line); split(line, w, /[ *]+/); print "H " w[4] " " w[3]; next }
	line ~ /^typedef [^(]*;$/ { sub(/;$/, "", line); n = split(line, w, /[ \t]+/); print "T " w[n]; next }
	line ~ /^#define (CU|NVRTC)/ { split(line, w, /[ \t]+/); print "V " w[2] since(note); next }
	line ~ /^[A-Za-z_ ]+[ *][A-Za-z0-9_]+\(/ { sub(/\(.*/, "", line); n = split(line, w, /[ \t*]+/); print "P " w[n]; next }
	' "$1"
}

# gen HEADER NAMES: the abi_ copy of HEADER in $out, and the C lines of its checks in $out/HEADER.c
gen() {
	h=$1 names=$2 base=$(basename "$1")
	sed -E -e "s/\\b($names)\\b/abi_\\1/g" -e 's/\bOOO_([A-Z_]+)\b/ABI_OOO_\1/g' "$h" >"$out/abi_$base" || return 1
	checks "$h" >"$out/$base.checks" || return 1
	# every name the header declares (comments aside) must have a check
	${CC} -fpreprocessed -dD -E -P "$h" | grep -oE "\\b($names)\\b" | sort -u >"$out/$base.names"
	awk '{ print $2; if ($1 == "H") print $3; if ($1 == "S") print $4 }' "$out/$base.checks" | sort -u >"$out/$base.checked"
	missing=$(comm -23 "$out/$base.names" "$out/$base.checked")
	if [ -n "$missing" ]; then
		echo "$me: $base declares names this test does not check (layout rules: cuda_api.h):" $missing
		return 1
	fi
	awk >"$out/$base.c" '
	function gate(v) { if (v != "") print "#if CUDA_VERSION >= " v; }
	function ungate(v) { if (v != "") print "#endif" }
	$1 == "V" { gate($3); printf "\tEQ(\"%s\", (intptr_t)(%s), (intptr_t)(abi_%s));\n", $2, $2, $2; ungate($3) }
	$1 == "E" || $1 == "T" {
		printf "\tEQ(\"sizeof(%s)\", sizeof(%s), sizeof(abi_%s));\n", $2, $2, $2
		printf "\tEQ(\"signedness of %s\", (%s)-1 > (%s)0, (abi_%s)-1 > (abi_%s)0);\n", $2, $2, $2, $2, $2
	}
	$1 == "T" { printf "\tSO(\"%s is the same type as ours\", __builtin_types_compatible_p(%s, __typeof__(*(abi_%s *)0)));\n", $2, $2, $2 }
	$1 == "H" { printf "\tSO(\"%s is a struct %s *\", __builtin_types_compatible_p(%s, struct %s *));\n", $2, $3, $2, $3 }
	$1 == "S" {
		op = $3 == "prefix" ? "LE" : "EQ"
		printf "\t%s(\"sizeof(%s)\", sizeof(%s), sizeof(abi_%s));\n", op, $2, $2, $2
		printf "\tEQ(\"_Alignof(%s)\", _Alignof(%s), _Alignof(abi_%s));\n", $2, $2, $2
	}
	$1 == "F" {
		gate($4)
		printf "\tEQ(\"offsetof(%s, %s)\", offsetof(%s, %s), offsetof(abi_%s, %s));\n", $2, $3, $2, $3, $2, $3
		printf "\tEQ(\"sizeof(%s.%s)\", sizeof(((%s *)0)->%s), sizeof(((abi_%s *)0)->%s));\n", $2, $3, $2, $3, $2, $3
		ungate($4)
	}
	' "$out/$base.checks"
}

c=$out/cuda_abi.c
nvrtc=0
[ -r "$inc/nvrtc.h" ] && nvrtc=1
gen "$src/daemon/exec/cuda_api.h" "$cuda_names" || { echo "$me: FAIL"; exit 1; }
if [ $nvrtc = 1 ]; then
	gen "$src/daemon/exec/nvrtc_api.h" "$nvrtc_names" || { echo "$me: FAIL"; exit 1; }
else
	echo "$me: note: no $inc/nvrtc.h: nvrtc_api.h is not checked"
fi
{
	cat <<EOF
/* generated by tests/unit/test_cuda_abi.sh: ours (abi_*) against the toolkit's */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cuda.h>
#include "abi_cuda_api.h"
/* our prototypes again, with the toolkit's types: a different signature does not compile */
#define OOO_CUDA_API_H
#include "$src/daemon/exec/cuda_api.h"
EOF
	if [ $nvrtc = 1 ]; then
		cat <<EOF
#include <nvrtc.h>
#include "abi_nvrtc_api.h"
#define OOO_NVRTC_API_H
#include "$src/daemon/exec/nvrtc_api.h"
EOF
	fi
	cat <<'EOF'
static int checked, differ;
/* the toolkit's value a, ours b */
#define CMP(what, a, b, ok)                                                                    \
	do {                                                                                   \
		long long a_ = (long long)(a), b_ = (long long)(b);                            \
		checked++;                                                                     \
		if (!(ok)) {                                                                   \
			printf("test_cuda_abi: %s: ours %lld, the toolkit's %lld\n", what, b_, a_); \
			differ++;                                                              \
		}                                                                              \
	} while (0)
#define EQ(what, a, b) CMP(what, a, b, a_ == b_)
#define LE(what, a, b) CMP(what, a, b, b_ <= a_)
/* a statement about the toolkit's header */
#define SO(what, cond)                                                                         \
	do {                                                                                   \
		checked++;                                                                     \
		if (!(cond)) {                                                                 \
			printf("test_cuda_abi: not so in the toolkit's header: %s\n", what);  \
			differ++;                                                              \
		}                                                                              \
	} while (0)
int main(void)
{
EOF
	cat "$out/cuda_api.h.c"
	[ $nvrtc = 0 ] || cat "$out/nvrtc_api.h.c"
	cat <<'EOF'
	printf("test_cuda_abi: CUDA_VERSION %d: %d checks, %d differ\n", CUDA_VERSION, checked, differ);
	return differ != 0;
}
EOF
} >"$c"
if ! ${CC} -std=gnu11 -Wall -Werror -I"$out" -I"$inc" -o "$out/cuda_abi" "$c"; then
	echo "$me: FAIL: our declarations do not compile against the toolkit's (above)"
	exit 1
fi
"$out/cuda_abi" || { echo "$me: FAIL"; exit 1; }
echo "$me: ok"
