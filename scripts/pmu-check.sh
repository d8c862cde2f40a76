#!/usr/bin/env bash
# pmu-check.sh: the first run of cachebook on a machine with a real PMU.
# It checks the cache model against the hardware, like with like.
#
# On bare metal (or a VM with a virtual PMU) it generates a hits table
# (ROWS rows, default 2M, shuffled), runs
#   SELECT count(*) FROM (SELECT UserID, count(*) FROM hits GROUP BY UserID)
# naive and radix on one thread with --counters=both, the model's hardware
# prefetcher on (prefetch=stride, every set simulated) because the real
# one cannot be switched off, and compares misses per row:
#
#   measured event (kind)             modelled count               tolerance
#   L1-dcache-load-misses (loads)     l1_load_misses (loads)       ±35 %
#   LLC-load-misses (loads)           dram_lines_read_by_loads     ±50 %
#   fills-from-dram (AMD, demand      dram_lines_read (demand,     ±35 %
#     loads and stores)                 loads and stores)
#   mem_load_retired.l3_miss (Intel,  dram_lines_read_by_loads     ±35 %
#     retired loads)
#
# The L1 tolerance is wider than the DRAM one's sampling error because the
# real L1 prefetchers fill L1 itself, which the model's do not; LLC-load-
# misses is a generic event whose meaning varies by CPU. A vendor row that
# does not apply to this CPU is skipped; every other event that is
# unavailable, or was multiplexed (counted for less than all of the run),
# is a failure, named in the table. Parallel runs at THREADS threads check
# that every worker counted cycles and instructions.
#
# It prints one table and exits 0 only if every row passed; any failed
# query stops it with the query's error and exit status 1. Under 5 minutes
# on a current machine at the default size.
#
# Usage: scripts/pmu-check.sh   (env: ROWS, THREADS="1 2 4 8", KEEP=dir;
# FORCE=1 runs the queries even where no PMU is found, to test the script:
# then every measured row fails as unavailable)
set -uo pipefail

ROWS=${ROWS:-2000000}
THREADS=${THREADS:-"1 2 4 8"}
fail() { echo "pmu-check: FAIL: $*" >&2; exit 1; }

cd "$(dirname "$0")/.." || exit 1

# Can this machine count at all?
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
mkdir -p "$tmp" || fail "cannot make $tmp"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
echo "pmu-check: PMU:${pmu:- none}, perf_event_paranoid=$paranoid, $(nproc) CPUs, $ROWS rows, work dir $tmp" >&2

go build -o "$tmp/cachebook" ./cmd/cachebook || fail "go build failed"
cb="$tmp/cachebook"
if [ ! -e "$tmp/data/hits.parquet" ]; then
	"$cb" gen --rows "$ROWS" --out "$tmp/data" >&2 || fail "generating $ROWS rows failed"
fi

q="SELECT count(*) FROM (SELECT UserID, count(*) FROM hits GROUP BY UserID)"
: >"$tmp/out.jsonl"
run() { # name, counters mode, settings
	local name=$1 mode=$2 set=$3 f=${1//\//_}
	local out="$tmp/$f.json" err="$tmp/$f.err"
	echo "pmu-check: $name" >&2
	if ! "$cb" query --data "$tmp/data" --format json --counters="$mode" --geometry "prefetch=stride" "$set; $q" >"$out" 2>"$err"; then
		cat "$err" >&2
		fail "the $name query failed (its error is above)"
	fi
	while IFS= read -r l; do printf '%s\t%s\n' "$name" "$l"; done <"$out" >>"$tmp/out.jsonl"
}
run "naive/1" both "SET group_by = 'naive'; SET threads = 1"
run "radix/1" both "SET group_by = 'radix'; SET threads = 1"
for t in $THREADS; do
	run "parallel/$t" on "SET group_by = 'parallel'; SET threads = $t"
done

python3 - "$tmp/out.jsonl" "$ROWS" <<'PY'
import json, sys

rows_in = int(sys.argv[2])
runs = {}
for line in open(sys.argv[1]):
    name, _, js = line.rstrip("\n").partition("\t")
    try:
        obj = json.loads(js)
    except ValueError:
        continue
    r = runs.setdefault(name, {})
    if obj.get("counters", {}).get("workers"):
        r["counters"] = obj["counters"]
    for m in obj.get("model", {}).get("queries", []):
        if m.get("modelled"):
            r["model"] = m
    if obj.get("columns"):
        r["ms"] = obj.get("elapsed_ms")

cpu = {}
for r in runs.values():
    if "counters" in r:
        cpu = r["counters"].get("availability", {}).get("cpu", {})
        break
vendor = cpu.get("vendor", "")

# (measured event, what it counts, modelled field, what that counts, tolerance, applies)
checks = [
    ("L1-dcache-load-misses", "loads", "l1_load_misses", "loads", 0.35, True),
    ("LLC-load-misses", "loads", "dram_lines_read_by_loads", "loads", 0.50, True),
    ("fills-from-dram", "demand loads+stores", "dram_lines_read", "demand loads+stores", 0.35, vendor == "AuthenticAMD"),
    ("mem_load_retired.l3_miss", "retired loads", "dram_lines_read_by_loads", "loads", 0.35, vendor == "GenuineIntel"),
]

def event(readings, name):
    for e in readings.get("events", []):
        if e["name"] == name:
            return e
    return None

failures = []
table = []
for name in ("naive/1", "radix/1"):
    r = runs.get(name, {})
    c, m = r.get("counters"), r.get("model")
    if c is None or m is None:
        failures.append("%s: %s" % (name, "no counter report" if c is None else "no model report"))
        continue
    n = m.get("rows") or rows_in
    for ev, what, field, mwhat, tol, applies in checks:
        if not applies:
            continue
        mod = m["total"].get(field)
        e = event(c["total"], ev)
        status, meas = "ok", None
        if e is None or not e.get("available"):
            why = (e or {}).get("reason", {}).get("message", "not in the counter report")
            status = "FAIL unavailable: " + why
        elif e.get("scaled") or e.get("coverage_pct", 100) < 100:
            meas = e["value"]
            status = "FAIL multiplexed: counted %d%% of the run" % e.get("coverage_pct", 0)
        else:
            meas = e["value"]
            if mod is None or mod <= 0:
                status = "FAIL: the model has no %s" % field
            else:
                dev = meas / mod - 1
                if abs(dev) > tol:
                    status = "FAIL: %+.0f%% is outside ±%.0f%%" % (100 * dev, 100 * tol)
                else:
                    status = "ok (%+.0f%%)" % (100 * dev)
        if not status.startswith("ok"):
            failures.append("%s %s: %s" % (name, ev, status))
        per = lambda x: "-" if x is None else "%.4f" % (x / n)
        table.append((name, ev + " (" + what + ")", per(meas), field + " (" + mwhat + ")", per(mod), "±%.0f%%" % (100 * tol), status))

for name, r in sorted(runs.items()):
    if not name.startswith("parallel/"):
        continue
    c = r.get("counters")
    if c is None:
        failures.append(name + ": no counter report")
        continue
    good = 0
    for w in c["workers"]:
        wc, wi = event(w, "cycles"), event(w, "instructions")
        if wc and wi and wc.get("available") and wi.get("available") and wc["value"] > 0 and wi["value"] > 0:
            good += 1
    status = "ok" if good == len(c["workers"]) else "FAIL: %d of %d workers lack cycles or instructions" % (len(c["workers"]) - good, len(c["workers"]))
    if not status.startswith("ok"):
        failures.append(name + ": " + status)
    table.append((name, "cycles, instructions per worker", "%d of %d" % (good, len(c["workers"])), "-", "-", "all", status))

head = ("query", "measured event", "per row", "modelled", "per row", "tolerance", "verdict")
widths = [max(len(str(row[i])) for row in table + [head]) for i in range(len(head))]
for row in [head] + table:
    print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())
print("CPU: %s %s; model: engine/cachesim, every set simulated, prefetch=stride on both sides (the real prefetchers stay on)" % (vendor or "unknown", cpu.get("brand", "")))
if failures:
    print("pmu-check: FAIL: %d problem(s):\n  %s" % (len(failures), "\n  ".join(failures)), file=sys.stderr)
    sys.exit(1)
print("pmu-check: OK", file=sys.stderr)
PY
