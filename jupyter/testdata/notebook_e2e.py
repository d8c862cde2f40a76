"""Runs "Run all" in the classic Jupyter Notebook (6.x) with the cachebook kernel.

Run by jupyter/e2e_test.go (the kernelspec "cachebook" must be on
JUPYTER_PATH): starts `python3 -m notebook` on a notebook of a failing cell
(SELEC 1) and three SELECTs, opens it in headless Chromium, and TRIES times
clears the outputs and runs all cells through the Notebook's own
Jupyter.notebook.execute_all_cells(), driven over the Chrome DevTools
protocol. Prints one JSON object: for each try, each cell's outputs and
prompt; stopped counts the tries where none of the three later cells ran.
The e2e test needs Debian's python3-notebook (6.x) and Chromium.

usage: notebook_e2e.py DIR CHROMIUM [TRIES]
With NOTEBOOK_SCREENSHOT=FILE.png it saves the page after the last try.
"""
import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

from tornado.websocket import websocket_connect

DIR, CHROMIUM = sys.argv[1], sys.argv[2]
TRIES = int(sys.argv[3]) if len(sys.argv) > 3 else 10
TOKEN = "cachebook-e2e"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def code(src):
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": src}


nb = {"nbformat": 4, "nbformat_minor": 4,
      "metadata": {"kernelspec": {"name": "cachebook", "display_name": "cachebook (SQL)", "language": "sql"},
                   "language_info": {"name": "sql"}},
      "cells": [code("SELEC 1"), code("SELECT 2 AS two"), code("SELECT 3 AS three"), code("SELECT 4 AS four")]}
with open(os.path.join(DIR, "runall.ipynb"), "w") as f:
    json.dump(nb, f)

port, cdp_port = free_port(), free_port()
server = subprocess.Popen([sys.executable, "-m", "notebook", "--no-browser", "--port=%d" % port, "--ip=127.0.0.1",
                           "--NotebookApp.token=" + TOKEN, "--notebook-dir=" + DIR, "--allow-root"],
                          stdout=subprocess.DEVNULL, stderr=open(os.path.join(DIR, "notebook.log"), "w"))
chrome = None
try:
    base = "http://127.0.0.1:%d" % port
    for _ in range(300):
        try:
            urllib.request.urlopen(base + "/api?token=" + TOKEN, timeout=1)
            break
        except Exception:
            time.sleep(0.1)
    chrome = subprocess.Popen([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--remote-debugging-port=%d" % cdp_port, "--user-data-dir=" + os.path.join(DIR, "chrome"),
                               base + "/notebooks/runall.ipynb?token=" + TOKEN],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ws_url = None
    for _ in range(300):
        try:
            targets = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json" % cdp_port, timeout=1))
            pages = [t for t in targets if t.get("type") == "page" and "runall" in t.get("url", "")]
            if pages:
                ws_url = pages[0]["webSocketDebuggerUrl"]
                break
        except Exception:
            pass
        time.sleep(0.1)
    if ws_url is None:
        raise SystemExit("no Chromium page")

    async def main():
        ws = await websocket_connect(ws_url, max_message_size=1 << 26)
        seq = 0

        async def call(method, params):
            nonlocal seq
            seq += 1
            ws.write_message(json.dumps({"id": seq, "method": method, "params": params}))
            while True:
                m = json.loads(await ws.read_message())
                if m.get("id") == seq:
                    return m.get("result", {})

        async def evaluate(expr):
            r = await call("Runtime.evaluate", {"expression": expr, "awaitPromise": True, "returnByValue": True})
            if "exceptionDetails" in r:
                raise RuntimeError(json.dumps(r["exceptionDetails"])[:500])
            return r.get("result", {}).get("value")

        async def until(expr, timeout=60):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if await evaluate(expr):
                    return True
                await asyncio.sleep(0.05)
            return False

        ready = ("typeof Jupyter !== 'undefined' && !!Jupyter.notebook && !!Jupyter.notebook.kernel && "
                 "Jupyter.notebook.kernel.is_connected() && Jupyter.notebook.kernel_busy === false")
        if not await until(ready, 120):
            raise SystemExit("the Notebook's kernel did not connect")
        tries = []
        for _ in range(TRIES):
            await evaluate("Jupyter.notebook.clear_all_output(); Jupyter.notebook.execute_all_cells(); true")
            # Every cell's reply is in when none runs any more.
            await until("Jupyter.notebook.get_cells().every(c => !c.element.hasClass('running'))", 60)
            await asyncio.sleep(0.5)  # outputs come on iopub, which may lag the replies
            cells = await evaluate("""Jupyter.notebook.get_cells().map(c => ({
                prompt: c.input_prompt_number === undefined ? null : c.input_prompt_number,
                outputs: c.output_area.outputs.map(o => o.output_type)}))""")
            tries.append(cells)
        if os.environ.get("NOTEBOOK_SCREENSHOT"):
            await call("Emulation.setDeviceMetricsOverride", {"width": 1000, "height": 700, "deviceScaleFactor": 1, "mobile": False})
            await asyncio.sleep(0.5)
            shot = await call("Page.captureScreenshot", {"format": "png"})
            with open(os.environ["NOTEBOOK_SCREENSHOT"], "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        ws.close()
        return tries

    tries = asyncio.run(main())
    # A later cell ran if it shows an output or a prompt of its own (an
    # aborted one shows none, or, before the fix, the failed cell's).
    stopped = sum(1 for t in tries if "error" in t[0]["outputs"] and
                  all(not c["outputs"] and c["prompt"] in (None, t[0]["prompt"]) for c in t[1:]))
    print(json.dumps({"tries": len(tries), "stopped": stopped, "cells": tries}))
finally:
    if chrome:
        chrome.kill()
    server.terminate()
    server.wait(timeout=30)
