"""Executes exported lessons with the real nbclient and the cachebook kernel.

usage: nbclient_e2e.py OUT_DIR LESSON.ipynb...

Measurement cells keep their exported magic line; the test appends small
sizes to it (later attributes win), so that a lesson runs in seconds on the
test's 20,000-row table. Each executed notebook is written to OUT_DIR.
Prints one JSON object per notebook on one line each.
"""
import json
import os
import sys
import time

import nbformat
from nbclient import NotebookClient

# Small sizes per cell kind (and experiment): attributes appended to the
# magic line.
SMALL = {
    "latency": "max=1M sample=1ms reps=1",
    "bandwidth": "bytes=4M reps=1",
    "sweep": "rows=20000 groups=100,1000,10000 reps=1",
    "experiment false-sharing": "duration=5ms reps=1",
    "experiment lock-contention": "ops=5000",
    "experiment parallel-merge": "rows=20000 groups=1000",
    "experiment zeroing": "size=1MiB allocs=2 live=1",
    "experiment sum-rewrite": "",
    "experiment c2c": "duration=5ms reps=1",
    "experiment substring": "limit=20000 reps=1",
    "experiment page-reuse": "size=1MiB rounds=2",
    "experiment stride": "size=1MiB sample=1ms reps=1",
    "experiment associativity": "counts=4,8 sample=1ms reps=1",
    "experiment mlp": "size=1MiB chains=1,8 sample=1ms reps=1",
    "cachesim": "",
}
# Experiments and kinds not listed run with the lesson's own sizes; a new
# one that is slow belongs here.


def shrink(src):
    first, _, rest = src.partition("\n")
    if not first.startswith("%%"):
        return src
    words = first[2:].split()
    key = words[0]
    if key == "experiment" and len(words) > 1:
        key = "experiment " + words[1]
    extra = SMALL.get(key, "")
    if key == "sql" and any(w.startswith("reps=") for w in words[1:]):
        # SQL timed in rounds: two (alternated, with a median and a
        # spread) instead of up to five, as the Go lesson tests run them.
        extra = "reps=2"
    if extra:
        first = first + " " + extra
    return first + ("\n" + rest if rest else "")


out_dir = sys.argv[1]
for path in sys.argv[2:]:
    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.source = shrink(c.source)
    t0 = time.monotonic()
    client = NotebookClient(nb, kernel_name="cachebook", timeout=120, startup_timeout=30, allow_errors=False)
    err = None
    try:
        client.execute()
    except Exception as e:  # CellExecutionError and friends: report, do not hide
        err = "%s: %s" % (type(e).__name__, str(e)[:2000])
    elapsed = time.monotonic() - t0
    mimes = {}
    types = {}
    errors = 0
    code = 0
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        code += 1
        for o in c.get("outputs", []):
            types[o.output_type] = types.get(o.output_type, 0) + 1
            if o.output_type == "error":
                errors += 1
            for m in o.get("data", {}):
                mimes[m] = mimes.get(m, 0) + 1
    dst = os.path.join(out_dir, os.path.basename(path))
    nbformat.write(nb, dst)
    print(json.dumps({"notebook": os.path.basename(path), "cells": len(nb.cells), "code_cells": code,
                      "errors": errors, "exception": err, "output_types": types, "mimes": mimes,
                      "seconds": round(elapsed, 2), "executed": dst}))
    sys.stdout.flush()
