"""Drives the cachebook kernel with the real jupyter_client.

Run by jupyter/e2e_test.go: the kernelspec "cachebook" must be on
JUPYTER_PATH. Prints one JSON object with what it saw; the Go test asserts.
"""
import json
import queue
import signal
import sys
import time

import zmq
from jupyter_client.manager import KernelManager
from jupyter_client.session import Session

out = {}


def drain_iopub(kc, msg_id, timeout=60):
    """Collects the iopub messages of one request up to its idle status."""
    msgs = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            m = kc.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        msgs.append(m)
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    return msgs


def shell_reply(kc, msg_id, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        m = kc.get_shell_msg(timeout=max(0.01, deadline - time.monotonic()))
        if m["parent_header"].get("msg_id") == msg_id:
            return m


def run(kc, code, timeout=60):
    msg_id = kc.execute(code)
    reply = shell_reply(kc, msg_id, timeout)
    msgs = drain_iopub(kc, msg_id, timeout)
    return reply, msgs


def summary(msgs):
    s = []
    for m in msgs:
        c = m["content"]
        e = {"type": m["msg_type"]}
        if m["msg_type"] == "status":
            e["state"] = c["execution_state"]
        if "data" in c:
            e["mimes"] = sorted(c["data"])
        if "transient" in c and c["transient"].get("display_id"):
            e["display_id"] = c["transient"]["display_id"]
        if m["msg_type"] == "error":
            e.update(ename=c["ename"], evalue=c["evalue"], traceback=c["traceback"])
        if m["msg_type"] == "execute_input":
            e["execution_count"] = c["execution_count"]
        if m["msg_type"] == "stream":
            e["text"] = c["text"]
        if m["msg_type"] == "execute_result":
            e["text"] = c["data"].get("text/plain", "")
        s.append(e)
    return s


km = KernelManager(kernel_name="cachebook")
t0 = time.monotonic()
km.start_kernel()
kc = km.client()
kc.start_channels()
kc.wait_for_ready(timeout=30)
out["start_s"] = time.monotonic() - t0

# kernel_info
mid = kc.kernel_info()
r = shell_reply(kc, mid, 10)
out["kernel_info"] = r["content"]
out["kernel_info_iopub"] = summary(drain_iopub(kc, mid, 5))

# SQL
r, msgs = run(kc, "SELECT UserID, count(*) AS c FROM hits GROUP BY UserID ORDER BY c DESC LIMIT 3")
out["sql"] = {"reply": r["content"], "iopub": summary(msgs)}

# A failing cell.
r, msgs = run(kc, "SELECT nosuchcolumn\nFROM hits")
out["fail"] = {"reply": r["content"], "iopub": summary(msgs)}

# A measurement cell larger than the kernel's cell-memory cap is refused.
r, msgs = run(kc, "%%experiment parallel-merge rows=17179869184 groups=17179869184")
out["too_big"] = {"reply": r["content"], "iopub": summary(msgs)}

# Magic cell with live displays: a small latency curve.
r, msgs = run(kc, "%%latency min=4K max=256K sample=2ms reps=1", 120)
out["latency"] = {"reply": r["content"], "iopub": summary(msgs)}

# Interrupt a long cell (many heavy statements), through the manager
# (interrupt_mode "message": an interrupt_request on control).
stmt = "SELECT regexp_replace(URL, '^https?://(?:www\\.)?([^/]+)/.*$', '\\1') AS k, count(*) FROM hits GROUP BY k ORDER BY 2 DESC LIMIT 3;"
long_cell = "\n".join([stmt] * 3000)
def interrupt_trial(how):
    """Runs the long cell, interrupts it after 0.5 s and returns the reply
    and the time from the interrupt to the execute_reply, in ms."""
    mid = kc.execute(long_cell)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        m = kc.get_iopub_msg(timeout=10)
        if m["parent_header"].get("msg_id") == mid and m["msg_type"] == "execute_input":
            break
    time.sleep(0.5)
    t = time.monotonic()
    how()
    r = shell_reply(kc, mid, 30)
    ms = (time.monotonic() - t) * 1000
    drain_iopub(kc, mid, 10)
    return r["content"], ms


# Up to three tries each: the bound is on the kernel, not on a loaded
# machine's scheduler; every try is reported.
def trials(how):
    out_ = []
    for _ in range(3):
        reply, ms = interrupt_trial(how)
        out_.append(ms)
        if ms <= 200:
            break
    return reply, out_


reply, lat = trials(km.interrupt_kernel)
out["interrupt"] = {"reply": reply, "latency_ms": min(lat), "tries_ms": lat}
t1 = time.monotonic()
r, msgs = run(kc, "SELECT count(*) FROM hits")
out["after_interrupt"] = {"reply": r["content"], "ms": (time.monotonic() - t1) * 1000, "iopub": summary(msgs)}

# An interrupt aborts every execute request sent before it, however many
# are still in the sockets' buffers ("Run all" of a long notebook), and a
# request sent after it runs.
first = kc.execute(long_cell)
flood = {kc.execute("SELECT 1", stop_on_error=False) for _ in range(300)}
time.sleep(0.5)
km.interrupt_kernel()
after = kc.execute("SELECT 7 AS seven")
statuses, first_reply, after_reply = {}, None, None
deadline = time.monotonic() + 60
while (flood or first_reply is None or after_reply is None) and time.monotonic() < deadline:
    m = kc.get_shell_msg(timeout=max(0.01, deadline - time.monotonic()))
    mid = m["parent_header"].get("msg_id")
    if mid == first:
        first_reply = m["content"]
    elif mid == after:
        after_reply = m["content"]
    elif mid in flood:
        flood.discard(mid)
        statuses[m["content"]["status"]] = statuses.get(m["content"]["status"], 0) + 1
out["interrupt_queue"] = {"first": first_reply, "queued": statuses, "unanswered": len(flood), "after": after_reply}

# SIGINT (what Jupyter sends to kernels without interrupt_mode "message")
# stops the cell too, and does not kill the kernel.
reply, lat = trials(lambda: km.signal_kernel(signal.SIGINT))
out["sigint"] = {"reply": reply, "latency_ms": min(lat), "tries_ms": lat, "alive": km.is_alive()}
# The next execution count, to check that nothing else ran.
r, _ = run(kc, "SELECT 0 AS zero")
out["sigint"]["next"] = r["content"]

# Completion, inspection, is_complete, comm_info.
def req(method, *args, **kw):
    mid = getattr(kc, method)(*args, **kw)
    rep = shell_reply(kc, mid, 10)
    drain_iopub(kc, mid, 5)
    return rep["content"]

out["complete"] = {
    "column": req("complete", "SELECT Us", 9),
    "table": req("complete", "SELECT count(*) FROM hi", 23),
    "set_name": req("complete", "SET gro", 7),
    "set_value": req("complete", "SET group_by = ", 15),
    "magic": req("complete", "%%lat", 5),
    "experiment": req("complete", "%%experiment fal", 16),
}
out["inspect"] = {"table": req("inspect", "SELECT * FROM hits", 16), "function": req("inspect", "regexp_replace(", 5),
                  "setting": req("inspect", "SET group_by = 'radix'", 6)}
out["is_complete"] = {"partial": req("is_complete", "SELECT 1"), "done": req("is_complete", "SELECT 1;"),
                      "string": req("is_complete", "SELECT 'a;")}
out["comm_info"] = req("comm_info")

# Heartbeat: a REQ socket of our own, and the client's own channel.
ctx = zmq.Context.instance()
hb = ctx.socket(zmq.REQ)
hb.linger = 0
hb.connect("tcp://%s:%d" % (km.ip, km.hb_port))
t2 = time.monotonic()
hb.send(b"ping-cachebook")
hb_ok = hb.poll(2000) != 0
out["heartbeat"] = {"echo": hb.recv().decode() if hb_ok else None, "ms": (time.monotonic() - t2) * 1000,
                    "client_beating": kc.hb_channel.is_beating()}
hb.close()

# A message signed with the wrong key: no reply, nothing executed.
bad = Session(key=b"not-the-key", username="intruder")
sh = ctx.socket(zmq.DEALER)
sh.linger = 0
sh.connect("tcp://%s:%d" % (km.ip, km.shell_port))
time.sleep(0.3)
msg = bad.msg("execute_request", content={"code": "SET threads = 1", "silent": False, "store_history": True,
                                           "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
bad.send(sh, msg)
got = sh.poll(1500) != 0
seen = [m for m in summary(drain_iopub(kc, msg["header"]["msg_id"], 1.5))]
# The kernel still answers the real client.
r, msgs = run(kc, "SELECT 42 AS answer")
out["bad_signature"] = {"reply_received": got, "iopub_for_it": seen, "after": r["content"],
                        "after_text": [e.get("text") for e in summary(msgs) if e["type"] == "execute_result"]}
sh.close()

# A second client on the same kernel (a console beside the notebook): each
# gets its own replies, both see every iopub message.
kc2 = km.client()
kc2.start_channels()
kc2.wait_for_ready(timeout=30)
mid2 = kc2.execute("SELECT 7 AS seven")
r2 = shell_reply(kc2, mid2, 30)
seen_by_first = [m["msg_type"] for m in drain_iopub(kc, mid2, 10)]
r1, _ = run(kc, "SELECT 8 AS eight")
out["two_clients"] = {"second": r2["content"], "first_saw": seen_by_first, "first": r1["content"]}
kc2.stop_channels()

# Restart: a new kernel process whose execution count starts again.
pid_before = km.provisioner.process.pid if getattr(km, "provisioner", None) else None
t3 = time.monotonic()
km.restart_kernel(now=False)
kc.wait_for_ready(timeout=30)
out["restart_s"] = time.monotonic() - t3
pid_after = km.provisioner.process.pid if getattr(km, "provisioner", None) else None
r, msgs = run(kc, "SELECT 1 AS one")
out["after_restart"] = {"reply": r["content"], "new_process": pid_before != pid_after}

kc.stop_channels()
t4 = time.monotonic()
km.shutdown_kernel(now=False)
out["shutdown_s"] = time.monotonic() - t4
out["alive_after_shutdown"] = km.is_alive()
print(json.dumps(out))
