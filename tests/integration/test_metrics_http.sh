#!/bin/sh
# test_metrics_http.sh BUILD: oood's [metrics] listener on the stand-in driver (tests/fakecuda). A
# private oood listens on a free loopback port; python3 scrapes it with urllib and parses the text with
# the Prometheus client's own parser (prometheus_client.parser, Debian's python3-prometheus-client):
# its families must be those of `oooctl metrics`, and tests/tools/prom_lint must pass it too. Then
# the refusals (404, 405 with Allow, 400, 413, 431, 505), HTTP/1.0, the connection limit (16 silent
# connections, a 17th gets 503), a silent and a half-sent connection closed at the 5 s deadline, a
# reload that changes listen (a warning, the listener kept), and a second oood that cannot bind the
# port does not start. Exit 77 without python3's prometheus_client (make deps).
set -u
build=${1:-build}
name=test_metrics_http
here=$(dirname "$0")
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c 'import prometheus_client.parser' 2>/dev/null; then
	echo "$name: SKIP: $py has no prometheus_client (python3-prometheus-client: make deps)"
	exit 77
fi
. "$here/../gpu/lib.sh"
. "$here/fakecuda_lib.sh"

# a loopback port free now (another process could take it before oood binds: then gpu_start fails)
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
gpu_mps="[mps]\nenabled = no\n[metrics]\nlisten = 127.0.0.1:$port\n"
gpu_start ''
grep -q "metrics: serving http://127.0.0.1:$port/metrics" "$rundir/oood.log" || fail "oood does not say it serves metrics"
$ctl metrics >"$rundir/ctl.txt" || fail "oooctl metrics failed"

# the checks, in python: each prints "ok: WHAT" or raises
"$py" - "$port" "$rundir/ctl.txt" "$rundir/http.txt" >"$rundir/py.out" 2>&1 <<'EOF'
import socket, sys, time, urllib.error, urllib.request
from concurrent.futures import ThreadPoolExecutor
from prometheus_client.parser import text_string_to_metric_families

port, ctl_file, http_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
url = "http://127.0.0.1:%d" % port


def check(cond, what):
    if not cond:
        raise SystemExit("FAIL: " + what)


def families(text):
    return {f.name: f for f in text_string_to_metric_families(text)}


def raw(data, timeout=10.0):
    """Send data on a new connection and read until the server closes it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out


def status(resp):
    return int(resp.split(b" ", 2)[1]) if resp.startswith(b"HTTP/1.1 ") else None


# a scrape, parsed by the real parser, with the families of oooctl metrics
with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
    check(r.status == 200, "GET /metrics: %d" % r.status)
    ctype = r.headers["Content-Type"]
    check(ctype == "text/plain; version=0.0.4; charset=utf-8", "Content-Type %r" % ctype)
    check(r.headers["Connection"] == "close", "Connection %r" % r.headers["Connection"])
    body = r.read().decode()
check(int(r.headers["Content-Length"]) == len(body.encode()), "Content-Length")
open(http_file, "w").write(body)
http = families(body)
ctl = families(open(ctl_file).read())
check(set(http) == set(ctl), "families differ: only over HTTP %s, only in oooctl %s"
      % (sorted(set(http) - set(ctl)), sorted(set(ctl) - set(http))))
check(len(http) > 40, "only %d families" % len(http))
up = [s.value for s in http["ooo_up"].samples]
check(up == [1.0], "ooo_up %r" % up)
gpus = {s.labels["state"]: s.value for s in http["ooo_gpus"].samples}
check(gpus.get("ready") == 1.0, "ooo_gpus %r" % gpus)
diff = [n for n in http if (http[n].type, http[n].documentation) != (ctl[n].type, ctl[n].documentation)]
check(not diff, "types or help differ: %s" % diff)
print("ok: a scrape parses (%d families, the same as oooctl metrics)" % len(http))

# refusals
for path, method, want in (("/", "GET", 404), ("/metrics/x", "GET", 404), ("/metrics", "POST", 405),
                           ("/metrics", "HEAD", 405)):
    try:
        urllib.request.urlopen(urllib.request.Request(url + path, method=method), timeout=10)
        check(False, "%s %s answered 200" % (method, path))
    except urllib.error.HTTPError as e:
        check(e.code == want, "%s %s: %d, want %d" % (method, path, e.code, want))
        if want == 405:
            check(e.headers["Allow"] == "GET", "405 without Allow: GET")
print("ok: 404 for other paths, 405 with Allow: GET for other methods")
for data, want, what in ((b"GARBAGE\r\n\r\n", 400, "malformed request line"),
                         (b"GET /metrics HTTP/1.1\r\n\r\n", 400, "HTTP/1.1 without Host"),
                         (b"GET /metrics HTTP/1.0\r\nBad Field\r\n\r\n", 400, "a field without a colon"),
                         (b"GET /metrics HTTP/2.0\r\n\r\n", 505, "HTTP/2.0"),
                         (b"GET /metrics HTTP/1.0\r\nContent-Length: 4\r\n\r\nbody", 413, "a body"),
                         (b"GET /metrics HTTP/1.0\r\nX: " + b"a" * 9000 + b"\r\n\r\n", 431, "a 9 KB head"),
                         (b"GET /metrics HTTP/1.0\r\n" + b"X: y\r\n" * 65 + b"\r\n", 431, "65 fields")):
    got = status(raw(data))
    check(got == want, "%s: %r, want %d" % (what, got, want))
print("ok: 400 for malformed heads, 505, 413 for a body, 431 for oversize heads")
resp = raw(b"GET /metrics HTTP/1.0\r\n\r\n")
check(status(resp) == 200 and b"\r\n\r\n# HELP ooo_up " in resp, "HTTP/1.0 GET: %r" % resp[:80])
print("ok: HTTP/1.0, the connection closed after the response")

# the connection limit: 16 silent connections hold every slot, a 17th is refused with 503 at once
held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(16)]
time.sleep(0.5)
t0 = time.monotonic()
resp = raw(b"")
check(status(resp) == 503, "17th connection: %r" % resp[:80])
check(time.monotonic() - t0 < 2, "the 503 took %.1f s" % (time.monotonic() - t0))
for s in held:
    s.close()
time.sleep(0.5)
with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
    check(r.status == 200, "after the 16 closed: %d" % r.status)
print("ok: 16 connections at once, a 17th gets 503; served again once they close")


# a silent connection and one that sends half a head are closed at the deadline (5 s, checked every 250 ms)
def silent(data):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    t0 = time.monotonic()
    if data:
        s.sendall(data)
    try:
        got = s.recv(4096)
    except ConnectionResetError:
        got = b""
    s.close()
    return time.monotonic() - t0, got


with ThreadPoolExecutor(2) as ex:
    res = list(ex.map(silent, (b"", b"GET /metrics HTTP/1.1\r\nHost: x\r\n")))
for (dt, got), what in zip(res, ("silent", "half a head")):
    check(got == b"", "%s connection got %r" % (what, got[:60]))
    check(4.5 <= dt <= 7.0, "%s connection closed after %.2f s, want about 5" % (what, dt))
print("ok: a silent connection and a half-sent head are closed at the deadline (%.2f s, %.2f s)"
      % (res[0][0], res[1][0]))
EOF
rc=$?
sed "s/^/$name: /" "$rundir/py.out"
[ $rc -eq 0 ] || fail "the HTTP checks failed (exit $rc)"
passed=$((passed + $(grep -c '^ok: ' "$rundir/py.out")))
# what the client's parser lets through, the strict linter may not (ordering, duplicates, histogram shape)
out=$("$build/tests/tools/prom_lint" "$rundir/http.txt" 2>&1) || fail "prom_lint on the scraped text: $out"
ok "the scraped text passes prom_lint: $out"

# oood answered its own sockets all along
$ctl status >/dev/null || fail "oooctl status failed after the scrapes"

# a reload that changes listen: a warning, the running listener kept
sed -i "s/^listen = .*/listen = 127.0.0.1:1/" "$rundir/oood.conf"
$ctl reload >/dev/null || fail "oooctl reload failed"
grep -q "\[metrics\] listen = 127.0.0.1:1 applies when oood next starts; still serving 127.0.0.1:$port" "$rundir/oood.log" ||
	fail "no warning about the changed listen: $(grep -i metrics "$rundir/oood.log" | tail -3)"
"$py" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=10).read()" ||
	fail "the listener went away at the reload"
ok "a reload that changes listen warns and keeps the listener"

# a second oood cannot bind the port: it does not start
other=$(mktemp -d /tmp/ooo-metrics-XXXXXX)
printf '[daemon]\nexecutor = no\n[mps]\nenabled = no\n[telemetry]\nenabled = no\n[metrics]\nlisten = 127.0.0.1:%s\n[class default]\nmatch_uid = *\n' \
	"$port" >"$other/oood.conf"
if timeout 30 "$build/oood" -f -c "$other/oood.conf" --rundir "$other" 2>"$other/log"; then
	fail "a second oood on the same port started: $(tail -3 "$other/log")"
fi
grep -q "\[metrics\] listen = 127.0.0.1:$port: Address already in use" "$other/log" ||
	fail "the second oood does not say why it stopped: $(tail -3 "$other/log")"
rm -rf "$other"
ok "an oood that cannot bind [metrics] listen does not start"

fake_stop
echo "$passed passed, 0 failed"
