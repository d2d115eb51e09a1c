# SPDX-License-Identifier: MIT
"""fake_kubelet.py DESC KDIR PLUGIN RUNDIR OOOD_PID: kubelet's side of the device-plugin API v1beta1,
for tests/integration/test_k8s_plugin.sh, with Debian's python3-grpcio and python3-protobuf.

The messages come from DESC, the descriptor set that protoc-c made from tools/k8s-plugin/deviceplugin.proto
(no generated Python code). Serves Registration on KDIR/kubelet.sock, starts PLUGIN against it and the
private oood of RUNDIR, and calls the plugin as kubelet does. Each check prints "ok: WHAT"; the first
that fails raises (exit 1). Every wait is bounded.
"""
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, message_factory

desc, kdir, plugin, rundir, oood_pid = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
fds = descriptor_pb2.FileDescriptorSet()
with open(desc, "rb") as f:
    fds.ParseFromString(f.read())
msgs = message_factory.GetMessages(list(fds.file))
M = {name.split(".", 1)[1]: cls for name, cls in msgs.items()}
SLOTS = 4
RESOURCE = "ooo.dev/gpu"
ENDPOINT = "ooo-gpu.sock"
kubelet_sock = os.path.join(kdir, "kubelet.sock")
plugin_sock = os.path.join(kdir, ENDPOINT)
tenant_sock = os.path.join(rundir, "oood.sock")
registers = queue.Queue()


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok: " + what, flush=True)


def kubelet():
    """Registration on kubelet.sock: each Register request goes to `registers`."""

    def register(req, ctx):
        registers.put(req)
        return M["Empty"]()

    h = grpc.method_handlers_generic_handler("v1beta1.Registration", {
        "Register": grpc.unary_unary_rpc_method_handler(
            register, request_deserializer=M["RegisterRequest"].FromString,
            response_serializer=M["Empty"].SerializeToString)})
    s = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    s.add_generic_rpc_handlers((h,))
    s.add_insecure_port("unix:" + kubelet_sock)
    s.start()
    return s


def wait_register(what):
    try:
        req = registers.get(timeout=15)
    except queue.Empty:
        raise AssertionError("no Register within 15 s " + what)
    check(req.version == "v1beta1" and req.resource_name == RESOURCE and req.endpoint == ENDPOINT
          and req.options.get_preferred_allocation_available,
          "Register %s: version %s, resource %s, endpoint %s" % (what, req.version, req.resource_name, req.endpoint))
    check(os.path.exists(plugin_sock), "the plugin's socket exists at Register")


def rpc(ch, method, req, resp, stream=False):
    f = ch.unary_stream if stream else ch.unary_unary
    return f("/v1beta1.DevicePlugin/" + method, request_serializer=req.SerializeToString,
             response_deserializer=M[resp].FromString)


def watch(ch):
    """ListAndWatch in a thread: its responses go to the returned queue."""
    q = queue.Queue()
    call = rpc(ch, "ListAndWatch", M["Empty"](), "ListAndWatchResponse", stream=True)(M["Empty"](), timeout=60)

    def run():
        try:
            for r in call:
                q.put(r)
        except grpc.RpcError as e:
            q.put(e)

    threading.Thread(target=run, daemon=True).start()
    return call, q


def next_list(q, what):
    try:
        r = q.get(timeout=15)
    except queue.Empty:
        raise AssertionError("no ListAndWatch response within 15 s: " + what)
    if isinstance(r, Exception):
        raise AssertionError("ListAndWatch ended: %s (%s)" % (r, what))
    return [(d.ID, d.health) for d in r.devices]


ids = ["gpu0-slot%d" % i for i in range(SLOTS)]
server = kubelet()
log = open(os.path.join(kdir, "plugin.log"), "w")
proc = subprocess.Popen([plugin, "--kubelet-dir", kdir, "--rundir", rundir, "--slots-per-gpu", str(SLOTS),
                         "--poll-ms", "200", "--timeout", "2000", "-v"], stderr=log)
try:
    wait_register("at start")
    ch = grpc.insecure_channel("unix:" + plugin_sock)
    opt = rpc(ch, "GetDevicePluginOptions", M["Empty"](), "DevicePluginOptions")(M["Empty"](), timeout=10)
    check(opt.get_preferred_allocation_available and not opt.pre_start_required,
          "GetDevicePluginOptions: preferred allocation available, no PreStartContainer")
    call, q = watch(ch)
    devs = next_list(q, "the first list")
    check(devs == [(i, "Healthy") for i in ids], "ListAndWatch: 1 GPU x %d slots, all Healthy: %s" % (SLOTS, devs))

    req = M["PreferredAllocationRequest"]()
    c = req.container_requests.add()
    c.available_deviceIDs.extend(ids)
    c.must_include_deviceIDs.append("gpu0-slot2")
    c.allocation_size = 2
    r = rpc(ch, "GetPreferredAllocation", req, "PreferredAllocationResponse")(req, timeout=10)
    got = list(r.container_responses[0].deviceIDs)
    check(len(got) == 2 and "gpu0-slot2" in got and set(got) <= set(ids),
          "GetPreferredAllocation: 2 of 4 with gpu0-slot2 included: %s" % got)

    req = M["AllocateRequest"]()
    req.container_requests.add().devices_ids.append("gpu0-slot0")
    req.container_requests.add().devices_ids.extend(["gpu0-slot1", "gpu0-slot3"])
    r = rpc(ch, "Allocate", req, "AllocateResponse")(req, timeout=10)
    check(len(r.container_responses) == 2, "Allocate: one response per container")
    for cr in r.container_responses:
        check(len(cr.mounts) == 1 and cr.mounts[0].host_path == tenant_sock
              and cr.mounts[0].container_path == tenant_sock,
              "Allocate: oood's socket mounted at the same path (%s)" % tenant_sock)
        check(dict(cr.envs) == {"OOO_SOCKET": tenant_sock, "CUDA_VISIBLE_DEVICES": "none"},
              "Allocate: envs %s" % dict(cr.envs))
    req = M["AllocateRequest"]()
    req.container_requests.add().devices_ids.append("nvidia0")
    try:
        rpc(ch, "Allocate", req, "AllocateResponse")(req, timeout=10)
        raise AssertionError("Allocate of a foreign ID succeeded")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "Allocate of a foreign ID: %s: %s" % (e.code(), e.details()))
    r = rpc(ch, "PreStartContainer", M["PreStartContainerRequest"](), "PreStartContainerResponse")(
        M["PreStartContainerRequest"](), timeout=10)
    check(r is not None, "PreStartContainer answers")
    try:
        ch.unary_unary("/v1beta1.DevicePlugin/Nope")(b"", timeout=10)
        raise AssertionError("an unknown method succeeded")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.UNIMPLEMENTED, "an unknown method: UNIMPLEMENTED")

    # kubelet restarts: it removes the plugins' sockets and makes a new kubelet.sock
    call.cancel()
    ch.close()
    server.stop(0).wait(10)
    for p in (kubelet_sock, plugin_sock):
        if os.path.exists(p):
            os.unlink(p)
    server = kubelet()
    wait_register("after kubelet's restart")

    ch = grpc.insecure_channel("unix:" + plugin_sock)
    call, q = watch(ch)
    devs = next_list(q, "after the restart")
    check(devs == [(i, "Healthy") for i in ids], "ListAndWatch on the new socket: all Healthy")
    os.kill(oood_pid, signal.SIGTERM)
    devs = next_list(q, "after oood stopped")
    check(devs == [(i, "Unhealthy") for i in ids], "oood stopped: ListAndWatch sends all %d Unhealthy" % SLOTS)
    call.cancel()
    ch.close()

    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=10)
    check(rc == 0 and not os.path.exists(plugin_sock), "SIGTERM: exit 0 (%d), socket removed" % rc)
finally:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    server.stop(0)
    log.close()
