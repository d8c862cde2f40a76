"""Checks the cachebook kernel's conformance with ipykernel's behaviour.

Run by jupyter/e2e_test.go (the kernelspec "cachebook" must be on
JUPYTER_PATH), or by hand. Prints one JSON object; the Go test asserts.

- run_all: TRIES times, a failing cell and three SELECTs sent back to back
  with the default stop_on_error, as a notebook's "Run all" sends them;
  the statuses of the four replies, in order of the requests.
- counts: the execution_count of the replies to a normal, a silent, a
  store_history=False and a normal execution (ipykernel: n, n, n, n+1).
- history: history_request tail and range after those.
- complete_none: a completion that matches nothing.
"""
import json
import sys

from jupyter_client.manager import KernelManager

TRIES = int(sys.argv[1]) if len(sys.argv) > 1 else 10
# A second argument names another kernel to compare with: python3
# (ipykernel) runs the same requests in Python.
KERNEL = sys.argv[2] if len(sys.argv) > 2 else "cachebook"
PY = KERNEL != "cachebook"
out = {}


def q(s):
    """The cell's code: SQL, or the same in Python."""
    if not PY:
        return s
    if s.startswith("SELEC "):
        return "raise ValueError(1)"
    return "print(" + s[len("SELECT "):] + ")"


km = KernelManager(kernel_name=KERNEL)
km.start_kernel()
kc = km.client()
kc.start_channels()
kc.wait_for_ready(timeout=60)


def replies(ids, timeout=30):
    """The shell replies to ids, in the order of ids."""
    got = {}
    while len(got) < len(ids):
        m = kc.get_shell_msg(timeout=timeout)
        mid = m["parent_header"].get("msg_id")
        if mid in ids:
            got[mid] = m["content"]
    return [got[i] for i in ids]


def run_one(code, **kw):
    return replies([kc.execute(code, **kw)])[0]


tries = []
for i in range(TRIES):
    ids = [kc.execute(q("SELEC 1"))] + [kc.execute(q("SELECT %d" % (i * 10 + j))) for j in range(3)]
    tries.append(replies(ids))
out["run_all"] = {
    "tries": len(tries),
    "stopped": sum(all(r["status"] == "aborted" for r in t[1:]) for t in tries),
    "statuses": [[r["status"] for r in t] for t in tries],
    "aborted_reply": tries[0][1],
}
# A cell sent after the client saw the error runs.
out["after_error"] = run_one(q("SELECT 'after'"))

base = run_one(q("SELECT 'normal 1'"))
silent = run_one(q("SELECT 'silent'"), silent=True)
nohist = run_one(q("SELECT 'no history'"), store_history=False)
normal = run_one(q("SELECT 'normal 2'"))
out["counts"] = [r.get("execution_count") for r in (base, silent, nohist, normal)]


def history(**kw):
    mid = kc.history(**kw)
    while True:
        m = kc.get_shell_msg(timeout=30)
        if m["parent_header"].get("msg_id") == mid:
            return m["content"]


out["history_tail"] = history(hist_access_type="tail", n=2)
out["history_range"] = history(hist_access_type="range", session=0, start=1, stop=3)
out["history_search"] = history(hist_access_type="search", pattern="*normal*")

mid = kc.complete(q("SELECT zzzzzz"), len(q("SELECT zzzzzz")))
while True:
    m = kc.get_shell_msg(timeout=30)
    if m["parent_header"].get("msg_id") == mid:
        out["complete_none"] = m["content"]
        break

kc.stop_channels()
km.shutdown_kernel(now=False)
print(json.dumps(out))
