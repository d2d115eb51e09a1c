#!/bin/sh
# deps.sh [SET]: install the Debian packages of SET, if missing.
#   build  what building oood, oooctl and the libraries needs (make run);
#          clang, llvm and bpftool make the eBPF skeletons oood embeds; libnghttp2,
#          protobuf-c and protoc-c make ooo-k8s-plugin's gRPC (linked statically)
#   test   build, cmocka for the test programs, pkg-config (test_install), python3 and its Prometheus
#          client (the real scrape parser of test_metrics_http.sh), python3's grpcio and protobuf
#          (the fake kubelet of test_k8s_plugin.sh) (make test, make asan)
#   fuzz   build, and clang's libFuzzer and sanitizer runtimes (make fuzz)
#   all    every set (the default: make deps)
# No set needs the CUDA toolkit: its declarations are in daemon/exec.
# Runs apt-get as root (or through sudo). Exits non-zero if it cannot.
set -eu
BUILD_PKGS="make gcc liburing-dev libinih-dev nettle-dev clang llvm libbpf-dev libelf-dev zlib1g-dev bpftool linux-libc-dev \
	libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler"
case ${1:-all} in
build) PKGS=$BUILD_PKGS ;;
test) PKGS="$BUILD_PKGS libcmocka-dev python3 python3-prometheus-client python3-grpcio python3-protobuf pkg-config" ;;
fuzz) PKGS="$BUILD_PKGS libclang-rt-14-dev" ;;
all) PKGS="$BUILD_PKGS libcmocka-dev python3 python3-prometheus-client python3-grpcio python3-protobuf libclang-rt-14-dev pkg-config" ;;
*)
	echo "usage: deps.sh [build|test|fuzz|all]" >&2
	exit 2
	;;
esac
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing:$missing"
if [ "$(id -u)" -eq 0 ]; then SUDO=""
elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"
else echo "deps: need root to install:$missing" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || { echo "deps: apt-get update failed" >&2; exit 1; }
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null || {
	echo "deps: apt-get install failed for:$missing" >&2; exit 1; }
