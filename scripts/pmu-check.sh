#!/usr/bin/env bash
# pmu-check.sh: the first run of cachebook on a machine with a real PMU.
#
# On bare metal (or a VM with a virtual PMU) and, ideally, 16+ cores, it
#   1. checks that hardware counters can be opened (PMU present,
#      perf_event_paranoid <= 2, not blocked by a container);
#   2. generates a hits table (ROWS rows, default 20M, shuffled);
#   3. runs SELECT UserID, count(*) ... GROUP BY UserID naive and radix on
#      one thread with --counters=both: measured L1D / LLC misses (and, on
#      AMD Zen, DRAM demand fills) beside the modelled ones for the same
#      query, geometry from sysfs;
#   4. runs the parallel strategy at 1, 2, 4, 8 and 16 threads with
#      --counters and checks cycles, instructions and IPC are non-zero on
#      every worker;
# and prints one table. Under 5 minutes on a 16-core machine; it fails
# with a clear message, and exit status 1, where there is no PMU.
#
# Usage: scripts/pmu-check.sh   (env: ROWS, THREADS="1 2 4 8 16", KEEP=dir;
# FORCE=1 skips step 1, to test the script itself where there is no PMU:
# it then fails at the table, every worker lacking cycles)
set -euo pipefail

ROWS=${ROWS:-20000000}
THREADS=${THREADS:-"1 2 4 8 16"}
fail() { echo "pmu-check: FAIL: $*" >&2; exit 1; }

cd "$(dirname "$0")/.."

# 1. Can this machine count?
pmu=""
for d in cpu cpu_core cpu_atom armv8_pmuv3_0; do
	[ -e "/sys/bus/event_source/devices/$d" ] && pmu="$pmu $d"
done
[ -n "$pmu" ] || [ -n "${FORCE:-}" ] || fail "no hardware PMU: /sys/bus/event_source/devices has no cpu (or cpu_core) entry. This is a VM without a virtual PMU or a container hiding it; run on bare metal, or enable the vPMU (e.g. KVM -cpu host,pmu=on)."
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo missing)
case "$paranoid" in
	-1|0|1|2) ;;
	*) fail "kernel.perf_event_paranoid=$paranoid blocks per-thread counters for non-root; run: sudo sysctl kernel.perf_event_paranoid=2" ;;
esac
command -v go >/dev/null || fail "go is not installed"
command -v python3 >/dev/null || fail "python3 is not installed (it prints the table)"

tmp=${KEEP:-$(mktemp -d)}
mkdir -p "$tmp"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
echo "pmu-check: PMU:$pmu, perf_event_paranoid=$paranoid, $(nproc) CPUs, $ROWS rows, work dir $tmp" >&2

go build -o "$tmp/cachebook" ./cmd/cachebook
cb="$tmp/cachebook"
[ -e "$tmp/data/hits.parquet" ] || "$cb" gen --rows "$ROWS" --out "$tmp/data" >&2

q="SELECT count(*) FROM (SELECT UserID, count(*) FROM hits GROUP BY UserID)"
run() { # name, counters mode, settings
	local name=$1 mode=$2 set=$3
	echo "pmu-check: $name" >&2
	"$cb" query --data "$tmp/data" --format json --counters="$mode" --geometry "sample=1/16" "$set; $q" \
		2>/dev/null | while IFS= read -r l; do printf '%s\t%s\n' "$name" "$l"; done >>"$tmp/out.jsonl"
}
: >"$tmp/out.jsonl"
run "naive/1" both "SET group_by = 'naive'"
run "radix/1" both "SET group_by = 'radix'; SET radix_bits = 12; SET threads = 1"
for t in $THREADS; do
	run "parallel/$t" on "SET group_by = 'parallel'; SET threads = $t"
done

python3 - "$tmp/out.jsonl" <<'PY'
import json, sys

rows = {}
for line in open(sys.argv[1]):
    name, _, js = line.rstrip("\n").partition("\t")
    try:
        obj = json.loads(js)
    except ValueError:
        continue
    r = rows.setdefault(name, {})
    if "counters" in obj and obj["counters"].get("workers"):
        r["counters"] = obj["counters"]
    if "model" in obj:
        for m in obj["model"].get("queries", []):
            if m.get("modelled"):
                r["model"] = m
    if "elapsed_ms" in obj and obj.get("columns"):
        r["ms"] = obj["elapsed_ms"]

def ev(readings, name):
    for e in readings.get("events", []):
        if e["name"] == name and e.get("available"):
            return e["value"]
    return None

def fmt(x):
    return "-" if x is None else ("%.3g" % x if isinstance(x, float) and x < 1000 else "%d" % x)

bad = []
print("%-12s %8s %12s %12s %12s %12s %12s %12s %8s %s" % ("query", "ms", "L1D meas", "L1D model", "LLC meas", "L3 model", "DRAM meas", "DRAM model", "IPC", "workers with cycles/instr/IPC > 0"))
for name, r in rows.items():
    c, m = r.get("counters"), r.get("model", {})
    if c is None:
        bad.append(name + ": no counter report")
        continue
    tot = c["total"]
    cyc, ins = ev(tot, "cycles"), ev(tot, "instructions")
    ipc = ins / cyc if cyc and ins else None
    ok = 0
    for w in c["workers"]:
        wc, wi = ev(w, "cycles"), ev(w, "instructions")
        if wc and wi and wc > 0 and wi > 0:
            ok += 1
        else:
            bad.append("%s: worker %d has cycles=%s instructions=%s" % (name, w["worker"], wc, wi))
    mt = m.get("total", {})
    print("%-12s %8s %12s %12s %12s %12s %12s %12s %8s %d of %d" % (
        name, fmt(r.get("ms")), fmt(ev(tot, "L1-dcache-load-misses")), fmt(mt.get("l1_misses")),
        fmt(ev(tot, "LLC-load-misses")), fmt(mt.get("l3_misses")),
        fmt(ev(tot, "fills-from-dram")), fmt(mt.get("dram_lines_read")),
        fmt(ipc), ok, len(c["workers"])))
print("measured: perf counters of this run (user space); model: engine/cachesim on the sysfs geometry, 1/16 set sampling, prefetch off")
if bad:
    print("pmu-check: FAIL:\n  " + "\n  ".join(bad), file=sys.stderr)
    sys.exit(1)
print("pmu-check: OK", file=sys.stderr)
PY
