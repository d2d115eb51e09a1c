#!/bin/sh
# test_install.sh BUILD: `make install` into a staging DESTDIR, then build a
# tenant program with the installed header, library and pkg-config file and
# run it against the installed oood. Exit 0 pass, 1 fail.
set -eu
build=${1:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(mktemp -d /tmp/ooo-install-XXXXXX)
rundir=$(mktemp -d /tmp/ooo-install-run-XXXXXX)
daemon=
cleanup() {
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
	rm -rf "$stage" "$rundir"
}
trap cleanup EXIT
fail() { echo "test_install: FAIL: $*"; exit 1; }

make -s -C "$top" BUILD="$build" install DESTDIR="$stage" PREFIX=/usr SYSCONFDIR=/etc >/dev/null ||
	fail "make install"
for f in usr/sbin/oood usr/sbin/ooo-k8s-plugin usr/bin/oooctl usr/bin/ooo-bench usr/lib/libooo.so.0 usr/lib/libooo.so usr/lib/libooo.a \
	usr/include/ooo/ooo.h usr/include/ooo/proto.h usr/lib/pkgconfig/ooo.pc etc/ooo/oood.conf \
	usr/lib/systemd/system/oood.service usr/share/man/man8/oood.8 usr/share/man/man8/oooctl.8 usr/share/man/man8/ooo-k8s-plugin.8 \
	usr/share/man/man5/oood.conf.5 usr/share/man/man1/ooo-run.1 usr/share/man/man1/ooo-bench.1 \
	usr/share/man/man1/ooo-jit.1 usr/share/man/man3/libooo.3 usr/include/ooo/shm.h; do
	[ -e "$stage/$f" ] || fail "missing $f"
done
grep -q '^ExecStart=/usr/sbin/oood' "$stage/usr/lib/systemd/system/oood.service" || fail "unit ExecStart"
grep -q '^ExecReload=/usr/bin/oooctl reload$' "$stage/usr/lib/systemd/system/oood.service" || fail "unit ExecReload"
# the library exports only ooo_* symbols
bad=$(nm -D --defined-only "$stage/usr/lib/libooo.so.0" | awk '$2 ~ /^[TDBRW]$/ && $3 !~ /^ooo_/ {print $3}')
[ -z "$bad" ] || fail "libooo exports non-ooo symbols: $bad"
# the installed default configuration is what the daemon embeds
"$stage/usr/sbin/oood" -n -c "$stage/etc/ooo/oood.conf" >/dev/null || fail "installed oood.conf does not check"
# pkg-config works against the staged tree
flags=$(PKG_CONFIG_SYSROOT_DIR="$stage" PKG_CONFIG_LIBDIR="$stage/usr/lib/pkgconfig" \
	pkg-config --cflags --libs ooo) || fail "pkg-config"
cat >"$stage/tenant.c" <<'C'
#include <stdio.h>
#include <ooo/ooo.h>
int main(int argc, char **argv)
{
	ooo_session *s = ooo_open(argv[1]);
	if (!s) {
		fprintf(stderr, "ooo_open: %s\n", ooo_strerror(-errno));
		return 1;
	}
	int r = ooo_ping(s);
	printf("session %llu class %s ping %d\n", (unsigned long long)ooo_session_id(s), ooo_session_class(s), r);
	ooo_close(s);
	return r != 0;
}
C
sed -i '1i #include <errno.h>' "$stage/tenant.c"
# a sanitizer build of the library needs the sanitizer runtime in the program too
san=
nm -D "$stage/usr/lib/libooo.so.0" | grep -q __asan_ && san="-fsanitize=address,undefined"
# shellcheck disable=SC2086
cc $san -o "$stage/tenant" "$stage/tenant.c" $flags -Wl,-rpath,"$stage/usr/lib" || fail "build a tenant with pkg-config"
"$stage/usr/sbin/oood" -f --rundir "$rundir" 2>"$rundir/log" &
daemon=$!
for _ in $(seq 100); do [ -S "$rundir/oood.sock" ] && break; sleep 0.05; done
"$stage/tenant" "$rundir/oood.sock" | grep -q 'class default ping 0' || fail "tenant against the installed oood"
"$stage/usr/bin/oooctl" --rundir "$rundir" status >/dev/null || fail "installed oooctl"
echo "test_install: installed tree, pkg-config, tenant build and run: OK"
