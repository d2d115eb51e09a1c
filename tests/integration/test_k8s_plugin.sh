#!/bin/sh
# test_k8s_plugin.sh BUILD: ooo-k8s-plugin against a fake kubelet (fake_kubelet.py: Debian's python3-grpcio
# and python3-protobuf, the messages from the descriptor set BUILD/gen/k8s/deviceplugin.desc) and a
# private oood on the stand-in driver (as test_fakecuda.sh), so the devices listing is oood's own:
# Register (version, resource, endpoint), GetDevicePluginOptions, ListAndWatch (1 GPU x 4 slots,
# Healthy), GetPreferredAllocation, Allocate (the socket's mount and the envs; a foreign ID refused),
# PreStartContainer, an unknown method, kubelet's restart (its sockets removed and made again: a new
# Register), oood stopped (every slot Unhealthy), SIGTERM (exit 0, socket removed). Then
# `oooctl cdi`'s spec, read by python3's json. Exit 77 when python3 cannot import grpc (make deps).
set -u
build=${1:-build}
name=test_k8s_plugin
here=$(dirname "$0")
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c 'import grpc, google.protobuf.message_factory' 2>/dev/null; then
	echo "$name: SKIP: $py cannot import grpc and google.protobuf (python3-grpcio, python3-protobuf: make deps)"
	exit 77
fi
for f in "$build/ooo-k8s-plugin" "$build/gen/k8s/deviceplugin.desc"; do
	[ -e "$f" ] || { echo "$name: FAIL: $f is not built"; exit 1; }
done
. "$here/../gpu/lib.sh"
. "$here/fakecuda_lib.sh"
gpu_start ''
kdir=$(mktemp -d /tmp/ooo-k8s-XXXXXX)
trap 'rm -rf "$kdir"' EXIT

# oooctl cdi while oood runs: a device per GPU and "all", each with the socket's mount and OOO_SOCKET
$ctl cdi --output "$kdir/ooo.json" || fail "oooctl cdi --output failed"
"$py" - "$kdir/ooo.json" "$rundir/oood.sock" <<'PY' || fail "oooctl cdi: the spec is not what was expected"
import json, sys
spec = json.load(open(sys.argv[1]))
sock = sys.argv[2]
assert spec["cdiVersion"] == "0.6.0" and spec["kind"] == "ooo.dev/gpu", spec
assert [d["name"] for d in spec["devices"]] == ["gpu0", "all"], spec["devices"]
edits = [spec["containerEdits"]] + [d["containerEdits"] for d in spec["devices"]]
assert spec["containerEdits"]["env"] == ["OOO_SOCKET=" + sock], spec["containerEdits"]
assert spec["containerEdits"]["mounts"] == [{"hostPath": sock, "containerPath": sock, "options": ["bind"]}], spec
PY
ok "oooctl cdi --output: cdiVersion 0.6.0, kind ooo.dev/gpu, devices gpu0 and all, the socket's mount and env"

"$py" "$here/fake_kubelet.py" "$build/gen/k8s/deviceplugin.desc" "$kdir" "$build/ooo-k8s-plugin" "$rundir" \
	"$daemon" >"$kdir/out" 2>&1
rc=$?
sed "s/^/$name: /" "$kdir/out"
if [ $rc -ne 0 ]; then
	sed 's/^/  plugin | /' "$kdir/plugin.log" | tail -30
	fail "the fake kubelet's checks failed"
fi
passed=$((passed + $(grep -c '^ok: ' "$kdir/out")))
wait "$daemon" || fail "oood exited with $? after SIGTERM"
rm -rf "$rundir"
echo "$passed passed, 0 failed"
