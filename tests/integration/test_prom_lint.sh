#!/bin/sh
# test_prom_lint.sh BUILD: checks BUILD/tests/tools/prom_lint, the strict
# Prometheus text format 0.0.4 linter (tests/tools/prom_lint.c).  Valid
# expositions must exit 0 with "prom_lint: ok: F families, S samples"; each
# invalid one must exit 1 with one "prom_lint: line N: reason" line naming
# the expected line and reason.  Prints "N passed, N failed" last.
set -u
build=${1:-build}
name=test_prom_lint
bin=$build/tests/tools/prom_lint
if [ ! -x "$bin" ]; then
	echo "$name: SKIP: $bin not built"
	exit 77
fi
tmp=$(mktemp -d /tmp/ooo-prom-lint-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
passed=0 failed=0

flunk() {
	failed=$((failed + 1))
	echo "$name: FAIL: $1"
	sed "s/^/$name:   stderr: /" "$tmp/err"
}

# good DESC [OKLINE]: stdin is a valid exposition; OKLINE, when given, is
# what prom_lint must print
good() {
	cat >"$tmp/in"
	"$bin" "$tmp/in" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		flunk "$1: exit $rc, want 0"
	elif [ $# -ge 2 ] && [ "$(cat "$tmp/out")" != "$2" ]; then
		flunk "$1: printed '$(cat "$tmp/out")', want '$2'"
	elif ! grep -q '^prom_lint: ok: [0-9]* families, [0-9]* samples$' "$tmp/out"; then
		flunk "$1: no ok line"
	else
		passed=$((passed + 1))
	fi
}

# bad DESC 'N: reason': stdin is invalid; prom_lint must exit 1, print
# nothing on stdout and one stderr line starting "prom_lint: line N: reason"
bad() {
	cat >"$tmp/in"
	"$bin" "$tmp/in" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	msg=$(cat "$tmp/err")
	if [ "$rc" -ne 1 ]; then
		flunk "$1: exit $rc, want 1"
	elif [ -s "$tmp/out" ]; then
		flunk "$1: printed on stdout: $(cat "$tmp/out")"
	elif [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
		flunk "$1: want exactly one stderr line"
	else
		case $msg in
		"prom_lint: line $2"*) passed=$((passed + 1)) ;;
		*) flunk "$1: want 'prom_lint: line $2...'" ;;
		esac
	fi
}

# ---- valid input ----------------------------------------------------------

good 'full exposition' 'prom_lint: ok: 8 families, 26 samples' <<'EOF'
# A comment that is neither HELP nor TYPE.
#HELPnot a directive either
# HELP ooo_requests_total Requests handled, by "op" \\ with a \n newline.
# TYPE ooo_requests_total counter
ooo_requests_total{op="launch",gpu="0"} 1027 1395066363000
ooo_requests_total{gpu="0",op="alloc",} 3 1395066363000
ooo_requests_total{op="free"} 0

# TYPE ooo_temp gauge
ooo_temp{gpu="0"} -3.5e1
ooo_temp{gpu="1"} NaN
ooo_temp{gpu="2"} +Inf
ooo_temp{gpu="3"} -Inf
# HELP ooo_latency_seconds Launch latency.
# TYPE ooo_latency_seconds histogram
ooo_latency_seconds_bucket{gpu="0",le="0.005"} 1
ooo_latency_seconds_bucket{gpu="0",le="0.01"} 4
ooo_latency_seconds_bucket{gpu="0",le="+Inf"} 4
ooo_latency_seconds_sum{gpu="0"} 0.021
ooo_latency_seconds_count{gpu="0"} 4
ooo_latency_seconds_bucket{le="0.005",gpu="1"} 0
ooo_latency_seconds_bucket{le="0.01",gpu="1"} 0
ooo_latency_seconds_bucket{le="+Inf",gpu="1"} 2
ooo_latency_seconds_sum{gpu="1"} 7.5
ooo_latency_seconds_count{gpu="1"} 2
# TYPE rpc_duration_seconds summary
rpc_duration_seconds{quantile="0.01"} 3102
rpc_duration_seconds{quantile="0.5"} 4773
rpc_duration_seconds{quantile="0.99"} 76656
rpc_duration_seconds_sum 1.7560473e+07
rpc_duration_seconds_count 2693
msdos_file_access_time_seconds{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\""} 1.458255915e9
metric_without_timestamp_and_labels 12.47
something_weird{problem="division by zero"} +Inf -3982045
empty_labels{} 1
EOF

good 'format documentation example' 'prom_lint: ok: 6 families, 20 samples' <<'EOF'
# HELP http_requests_total The total number of HTTP requests.
# TYPE http_requests_total counter
http_requests_total{method="post",code="200"} 1027 1395066363000
http_requests_total{method="post",code="400"}    3 1395066363000

# Escaping in label values:
msdos_file_access_time_seconds{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\""} 1.458255915e9

# Minimalistic line:
metric_without_timestamp_and_labels 12.47

# A weird metric from before the epoch:
something_weird{problem="division by zero"} +Inf -3982045

# A histogram, which has a pretty complex representation in the text format:
# HELP http_request_duration_seconds A histogram of the request duration.
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{le="0.05"} 24054
http_request_duration_seconds_bucket{le="0.1"} 33444
http_request_duration_seconds_bucket{le="0.2"} 100392
http_request_duration_seconds_bucket{le="0.5"} 129389
http_request_duration_seconds_bucket{le="1"} 133988
http_request_duration_seconds_bucket{le="+Inf"} 144320
http_request_duration_seconds_sum 53423
http_request_duration_seconds_count 144320

# Finally a summary, which has a complex representation, too:
# HELP rpc_duration_seconds A summary of the RPC duration in seconds.
# TYPE rpc_duration_seconds summary
rpc_duration_seconds{quantile="0.01"} 3102
rpc_duration_seconds{quantile="0.05"} 3272
rpc_duration_seconds{quantile="0.5"} 4773
rpc_duration_seconds{quantile="0.9"} 9001
rpc_duration_seconds{quantile="0.99"} 76656
rpc_duration_seconds_sum 1.7560473e+07
rpc_duration_seconds_count 2693
EOF

good 'empty input' 'prom_lint: ok: 0 families, 0 samples' </dev/null
printf '\n  \n\t\n# just a comment\n' | good 'blank lines and comments only' 'prom_lint: ok: 0 families, 0 samples'

good 'value and timestamp forms' 'prom_lint: ok: 16 families, 16 samples' <<'EOF'
v1 1.
v2 .5
v3 1e3
v4 -1.5E-3
v5 +3
v6 Inf
v7 -Infinity
v8 nan
v9 1e-400
v10 007
v11 0 -1
v12 0 9223372036854775807
v13 0 -9223372036854775808
v14 1.7976931348623157e308
v15 -0
v16 NaN 0
EOF

printf 'a\t1\t\t1700000000000\nb  \t 2\n  c 3\n\td{x="1"}\t4\n' |
	good 'tabs and runs of blanks as separators, leading blanks' 'prom_lint: ok: 4 families, 4 samples'
printf 'a { x = "1" , y="2" } 1\nb {} 2\n' |
	good 'blanks around label tokens (as the Go parser)' 'prom_lint: ok: 2 families, 2 samples'

good 'HELP forms, metadata-only family, unicode' 'prom_lint: ok: 4 families, 2 samples' <<'EOF'
# HELP a 
# HELP b
# TYPE b gauge
b 1
# HELP c Back\\slash, new\nline, "quotes" and {braces} are plain text.
# TYPE c untyped
c{name="Grüße ✓ 日本"} 2
# HELP unused Metadata without samples.
# TYPE unused counter
EOF

good 'summary and histogram with labels; counter NaN, +Inf' 'prom_lint: ok: 4 families, 18 samples' <<'EOF'
# TYPE s summary
s{op="a",quantile="0"} 1
s{op="a",quantile="0.5"} NaN
s{op="a",quantile="1"} 3
s_sum{op="a"} -4
s_count{op="a"} 3
s{op="b",quantile="0.5"} 2
s_count{op="b"} 1
# TYPE h histogram
h_bucket{le="-1",op="x"} 0
h_bucket{le="0",op="x"} 0
h_bucket{le="1e3",op="x"} 5.5
h_bucket{op="x",le="Inf"} 5.5
h_count{op="x"} 5.5
h_bucket{le="+Inf",op="y"} 0
h_count{op="y"} 0
h_sum{op="y"} 0
# TYPE c counter
c{a="1"} NaN
c{a="2"} +Inf
# TYPE h_sum_other gauge
h_sum_other 1
EOF

good 'counter/summary suffixes are their own untyped families' 'prom_lint: ok: 3 families, 3 samples' <<'EOF'
# TYPE x counter
x 1
x_count 1
x_bucket{le="1"} 1
EOF

# large input: no fixed limits on series, labels or line length below 1 MiB
awk 'BEGIN {
	print "# TYPE big counter"
	for (i = 0; i < 20000; i++) printf "big{i=\"%d\",j=\"x\"} %d\n", i, i
	print "# TYPE big_h histogram"
	for (i = 0; i < 500; i++) {
		for (b = 1; b <= 20; b++) printf "big_h_bucket{s=\"%d\",le=\"%d\"} %d\n", i, b, b
		printf "big_h_bucket{s=\"%d\",le=\"+Inf\"} 20\nbig_h_count{s=\"%d\"} 20\n", i, i
	}
	printf "wide{"
	for (i = 0; i < 4000; i++) printf "l%d=\"%d\",", i, i
	printf "} 1\n"
	# exactly 1 MiB without the newline: the longest line allowed
	v = "v"; while (length(v) < 1048576) v = v v
	printf "long{v=\"%s\"} 1\n", substr(v, 1, 1048576 - 12)
}' </dev/null | good 'large input' 'prom_lint: ok: 4 families, 31002 samples'

# check DESC RC WANT: one pass when the exit status RC is WANT
check() {
	if [ "$2" -eq "$3" ]; then
		passed=$((passed + 1))
	else
		flunk "$1: exit $2, want $3"
	fi
}

# stdin and "-" read the same as a file; usage and I/O errors exit 2
printf 'a 1\n' | "$bin" >"$tmp/out" 2>"$tmp/err"
check 'stdin' $? 0
[ "$(cat "$tmp/out")" = 'prom_lint: ok: 1 families, 1 samples' ]
check 'stdin ok line' $? 0
printf 'a 1\nb{\n' | "$bin" - >"$tmp/out" 2>"$tmp/err"
check 'stdin via -' $? 1
grep -q '^prom_lint: line 2: ' "$tmp/err"
check 'stdin via - error line' $? 0
"$bin" "$tmp/no-such-file" >"$tmp/out" 2>"$tmp/err"
check 'missing file' $? 2
"$bin" a b </dev/null >"$tmp/out" 2>"$tmp/err"
check 'two arguments' $? 2
"$bin" --bogus </dev/null >"$tmp/out" 2>"$tmp/err"
check 'unknown option' $? 2

# ---- invalid input: lines ---------------------------------------------------

printf 'a 1\nb 2' | bad 'no newline at the end' '2: last line does not end with a newline'
printf 'a 1\r\n' | bad 'carriage return' '1: carriage return'
printf 'a 1\nb{x="\000"} 1\n' | bad 'NUL byte' '2: NUL byte'
printf 'a{x="\377"} 1\n' | bad 'invalid UTF-8' '1: invalid UTF-8'
printf 'a{x="\300\200"} 1\n' | bad 'overlong UTF-8' '1: invalid UTF-8'
awk 'BEGIN { v = "v"; while (length(v) <= 1048576) v = v v; printf "a{v=\"%s\"} 1\n", v }' </dev/null |
	bad 'line over 1 MiB' '1: line longer than 1048576 bytes'

# ---- invalid input: HELP and TYPE -------------------------------------------

bad 'unknown type' '1: unknown metric type' <<'EOF'
# TYPE a countr
EOF
bad 'type in upper case' '1: unknown metric type' <<'EOF'
# TYPE a COUNTER
EOF
printf '# TYPE a counter \n' | bad 'blank after the type' '1: unknown metric type'
bad 'TYPE without type' '1: TYPE line for a without a type' <<'EOF'
# TYPE a
EOF
bad 'HELP without name' '1: HELP line without a valid metric name' <<'EOF'
# HELP
EOF
bad 'HELP with bad name' '1: invalid character' <<'EOF'
# HELP a-b text
EOF
bad 'second HELP' '2: second HELP line for a' <<'EOF'
# HELP a one
# HELP a two
a 1
EOF
bad 'second TYPE' '3: second TYPE line for a' <<'EOF'
# TYPE a gauge
# HELP a help
# TYPE a gauge
a 1
EOF
bad 'TYPE after the first sample' '2: TYPE line for a after its samples' <<'EOF'
a 1
# TYPE a counter
EOF
bad 'HELP after the first sample' '3: HELP line for a after its samples' <<'EOF'
# TYPE a counter
a 1
# HELP a late
EOF
bad 'bad escape in HELP' '1: invalid escape \" in HELP text' <<'EOF'
# HELP a say \"hi\"
EOF
bad 'lone backslash ending HELP' '1: HELP text ends with a lone backslash' <<'EOF'
# HELP a trailing \
EOF

# ---- invalid input: families ------------------------------------------------

bad 'family samples not contiguous' '3: lines of family a are not contiguous' <<'EOF'
a{x="1"} 1
b 1
a{x="2"} 1
EOF
bad 'metadata separated from samples' '3: lines of family a are not contiguous' <<'EOF'
# TYPE a gauge
# TYPE b gauge
a 1
EOF
bad 'histogram sample with the bare family name' '2: sample h of histogram h' <<'EOF'
# TYPE h histogram
h 1
EOF

# ---- invalid input: sample syntax -------------------------------------------

bad 'metric name starting with a digit' "1: invalid character '1' at the start" <<'EOF'
1a 1
EOF
bad 'bad character in metric name' "1: invalid character '-' in metric name" <<'EOF'
a-b 1
EOF
bad 'label name starting with a digit' "1: invalid character '1' where a label name belongs" <<'EOF'
a{1x="y"} 1
EOF
bad 'bad character in label name' "1: invalid character ':' in label name" <<'EOF'
a{x:y="z"} 1
EOF
bad 'reserved label name' '1: label name __name__ is reserved' <<'EOF'
a{__name__="a"} 1
EOF
bad 'unquoted label value' '1: label value of x is not double-quoted' <<'EOF'
a{x=y} 1
EOF
bad 'bad escape in label value' '1: invalid escape \t in label value' <<'EOF'
a{x="a\tb"} 1
EOF
bad 'unterminated label value' '1: unterminated label value for x' <<'EOF'
a{x="abc} 1
EOF
bad 'unterminated label set' "1: expected ',' or '}'" <<'EOF'
a{x="1" 1
EOF
bad 'duplicate label name' '1: label x appears twice' <<'EOF'
a{x="1",y="2",x="3"} 1
EOF
bad 'lone comma in braces' "1: invalid character ',' where a label name belongs" <<'EOF'
a{,} 1
EOF
bad 'double trailing comma' "1: invalid character ',' where a label name belongs" <<'EOF'
a{x="1",,} 1
EOF
bad 'missing value' '1: missing value' <<'EOF'
a{x="1"}
EOF
bad 'no blank before the value' "1: expected a space or tab after '}', not '1'" <<'EOF'
a{x="1"}1
EOF
bad 'comma as decimal point' '1: value "1,5" is not a valid float' <<'EOF'
a 1,5
EOF
bad 'hex value' '1: value "0x1p3" is not a valid float' <<'EOF'
a 0x1p3
EOF
bad 'underscore in value' '1: value "1_000" is not a valid float' <<'EOF'
a 1_000
EOF
bad 'signed NaN' '1: value "+NaN" is not a valid float' <<'EOF'
a +NaN
EOF
bad 'exponent without digits' '1: value "1e" is not a valid float' <<'EOF'
a 1e
EOF
bad 'value overflow' '1: value "1e400" is not a representable float' <<'EOF'
a 1e400
EOF
bad 'float timestamp' '1: timestamp "1.5" is not a 64-bit integer' <<'EOF'
a 1 1.5
EOF
bad 'timestamp with a plus sign' '1: timestamp "+5" is not a 64-bit integer' <<'EOF'
a 1 +5
EOF
bad 'timestamp overflow' '1: timestamp "9223372036854775808" is not a 64-bit integer' <<'EOF'
a 1 9223372036854775808
EOF
bad 'text after the timestamp' '1: unexpected text after the timestamp' <<'EOF'
a 1 2 3
EOF
printf 'a 1 \n' | bad 'trailing blank after the value' '1: trailing whitespace after the value'
printf 'a 1 2\t\n' | bad 'trailing blank after the timestamp' '1: trailing whitespace after the timestamp'
bad 'duplicate series, labels reordered' '3: duplicate series a{x="1",y="2"}' <<'EOF'
a{x="1",y="2"} 1
a{x="2",y="2"} 1
a{y="2",x="1"} 2
EOF
bad 'duplicate series without labels' '2: duplicate series a{}' <<'EOF'
a 1
a{} 2
EOF

# ---- invalid input: type rules ----------------------------------------------

bad 'negative counter' '2: counter c has negative value -1' <<'EOF'
# TYPE c counter
c -1
EOF
bad 'counter at -Inf' '2: counter c has negative value' <<'EOF'
# TYPE c counter
c -Inf
EOF
bad 'bucket without le' '2: histogram bucket h_bucket has no le label' <<'EOF'
# TYPE h histogram
h_bucket{x="1"} 1
EOF
bad 'bucket le not a float' '2: le label value "big" is not a valid float' <<'EOF'
# TYPE h histogram
h_bucket{le="big"} 1
EOF
bad 'le not increasing' '3: histogram bucket le=1 does not increase' <<'EOF'
# TYPE h histogram
h_bucket{le="2"} 1
h_bucket{le="1"} 1
h_bucket{le="+Inf"} 1
h_count 1
EOF
bad 'le repeated in another spelling' '3: histogram bucket le=1 does not increase' <<'EOF'
# TYPE h histogram
h_bucket{le="1"} 1
h_bucket{le="1.0"} 1
EOF
bad 'bucket counts decreasing' '3: histogram bucket count 1 is less than' <<'EOF'
# TYPE h histogram
h_bucket{le="1"} 2
h_bucket{le="2"} 1
h_bucket{le="+Inf"} 2
h_count 2
EOF
bad 'bucket after +Inf' '4: histogram bucket le=5 does not increase' <<'EOF'
# TYPE h histogram
h_bucket{le="1"} 2
h_bucket{le="+Inf"} 2
h_bucket{le="5"} 2
h_count 2
EOF
bad 'no +Inf bucket' '4: histogram h{} has no le="+Inf" bucket' <<'EOF'
# TYPE h histogram
h_bucket{le="1"} 2
h_sum 2
h_count 2
# TYPE next gauge
next 1
EOF
bad 'no +Inf bucket in the second label set (at the end)' '7: histogram h{a="2"} has no le="+Inf" bucket' <<'EOF'
# TYPE h histogram
h_bucket{a="1",le="+Inf"} 2
h_count{a="1"} 2
h_bucket{a="2",le="1"} 2
h_bucket{a="2",le="10"} 3
h_sum{a="2"} 2
h_count{a="2"} 3
EOF
bad '+Inf bucket differs from _count' '3: histogram h{}: le="+Inf" bucket 2 differs from _count 3' <<'EOF'
# TYPE h histogram
h_bucket{le="+Inf"} 2
h_count 3
EOF
bad 'no _count' '3: histogram h{} has no h_count' <<'EOF'
# TYPE h histogram
h_bucket{le="+Inf"} 2
h_sum 3
EOF
bad 'only _sum, no buckets' '2: histogram h{} has no le="+Inf" bucket' <<'EOF'
# TYPE h histogram
h_sum 3
EOF
bad 'le label on _sum' '3: h_sum must not have an le label' <<'EOF'
# TYPE h histogram
h_bucket{le="+Inf"} 2
h_sum{le="+Inf"} 3
h_count 2
EOF
bad 'negative bucket count' '2: histogram bucket count -1 is negative or NaN' <<'EOF'
# TYPE h histogram
h_bucket{le="+Inf"} -1
EOF
bad 'NaN histogram count' '3: histogram count nan is negative or NaN' <<'EOF'
# TYPE h histogram
h_bucket{le="+Inf"} 1
h_count NaN
EOF
bad 'summary sample without quantile' '2: summary sample s has no quantile label' <<'EOF'
# TYPE s summary
s{x="1"} 1
EOF
bad 'quantile out of range' '2: summary quantile 1.5 is not within [0, 1]' <<'EOF'
# TYPE s summary
s{quantile="1.5"} 1
EOF
bad 'quantiles not increasing' '3: summary quantile 0.5 does not increase' <<'EOF'
# TYPE s summary
s{quantile="0.9"} 1
s{quantile="0.5"} 1
EOF
bad 'quantile label on _count' '2: s_count must not have a quantile label' <<'EOF'
# TYPE s summary
s_count{quantile="0.5"} 1
EOF
bad 'negative summary count' '2: summary count -2 is negative or NaN' <<'EOF'
# TYPE s summary
s_count -2
EOF

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
