#!/bin/sh
# deps.sh: install the Debian packages ooo needs to build and test, if missing.
# Runs apt-get as root (or through sudo). Exits non-zero if it cannot.
set -eu
PKGS="make gcc pkg-config liburing-dev libcmocka-dev libinih-dev nettle-dev clang libclang-rt-14-dev llvm libbpf-dev libelf-dev zlib1g-dev bpftool linux-libc-dev"
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
