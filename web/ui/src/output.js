// Renderers for cell outputs: result tables, plans, errors, streams and the
// per-cell counters panel.
import { h, fmtNs, fmtCount, fmtBytes, NUMERIC } from "./util.js";

// renderStatement renders one entry of a result bundle's "statements".
export function renderStatement(st) {
  const box = h("div.result");
  if (!st.columns || st.columns.length === 0) {
    box.append(h("div.message", `${st.message || "OK"}  (${fmtNs(st.elapsed_ns)})`));
    return box;
  }
  const table = h(
    "table.grid",
    h(
      "thead",
      h(
        "tr",
        st.columns.map((c) =>
          h(
            "th",
            { class: NUMERIC.has(c.type) ? "num" : null, title: c.type },
            h("span.colname", c.name),
            h("span.coltype", c.type.toLowerCase()),
          ),
        ),
      ),
    ),
    h(
      "tbody",
      st.rows.map((r) =>
        h(
          "tr",
          r.map((v, i) =>
            h("td", { class: [NUMERIC.has(st.columns[i].type) ? "num" : "", v === null ? "null" : ""].join(" ").trim() || null }, v === null ? "NULL" : v),
          ),
        ),
      ),
    ),
  );
  const shown = st.rows.length;
  const foot = st.truncated
    ? `${fmtCount(st.row_count)} rows (showing the first ${fmtCount(shown)})`
    : `${fmtCount(st.row_count)} row${st.row_count === 1 ? "" : "s"}`;
  box.append(h("div.tablewrap", table), h("div.rowcount", `${foot} · ${fmtNs(st.elapsed_ns)}`));
  if (st.plan) box.append(renderPlan(st.plan));
  return box;
}

// renderPlan shows the executed plan as a collapsible tree with per-operator
// rows, time and phases.
export function renderPlan(plan) {
  const det = h("details.plan", h("summary", "plan"));
  const walk = (n, depth) => {
    const line = h(
      "div.planline",
      { style: `padding-left:${depth * 1.2}em` },
      h("b", n.name),
      ` rows=${fmtCount(n.rows)} time=${fmtNs(n.time_ns)}`,
      n.detail && n.detail.length ? h("span.detail", " · " + n.detail.join(" · ")) : null,
    );
    det.append(line);
    for (const p of n.phases || []) {
      det.append(h("div.planphase", { style: `padding-left:${(depth + 1) * 1.2}em` }, `${p.name}: ${fmtCount(p.rows)} rows in ${fmtNs(p.time_ns)}`));
    }
    // Modelled (counters=model) misses of this operator: labelled as such.
    for (const m of n.modelled || []) {
      det.append(h("div.planphase.modelled", { style: `padding-left:${(depth + 1) * 1.2}em` }, m));
    }
    for (const c of n.children || []) walk(c, depth + 1);
  };
  walk(plan, 0);
  return det;
}

// renderError renders an error output; SQL positions are also marked in the
// editor by the cell.
export function renderError(e) {
  const box = h("div.error", h("div.ename", e.ename || "Error"));
  if (e.traceback && e.traceback.length) box.append(h("pre", e.traceback.join("\n")));
  else box.append(h("pre", e.evalue || e.message || ""));
  return box;
}

// REFERENCE_LABEL starts the line a lesson's reference outputs begin with
// (lessons.Machine.Label): the figures below it come from a reference run
// on another machine, until this cell runs here.
const REFERENCE_LABEL = "reference run on ";

// renderStream renders stdout/stderr text; a reference run's label is
// shown as a banner.
export function renderStream(name, text) {
  if (name !== "stderr" && text && text.startsWith(REFERENCE_LABEL)) {
    return h("div.reference-label", { title: "saved with the lesson; running the cell replaces it" }, text.trim());
  }
  return h("pre.stream." + (name === "stderr" ? "stderr" : "stdout"), text);
}

// COUNTER_ROWS are the derived metrics of a perf.Report
// (docs/measurement-json.md §4) the panel always lists, greyed out with the
// reason when the host cannot count them.
const COUNTER_ROWS = [
  ["ipc", "IPC (instructions per cycle)", (v) => v.toFixed(2)],
  ["l1d-mpki", "L1d misses / 1000 instructions", (v) => v.toFixed(1)],
  ["l2-fills-pki", "loads filled from L2 / 1000 instr", (v) => v.toFixed(1)],
  ["l3-fills-pki", "loads filled from L3 / 1000 instr", (v) => v.toFixed(1)],
  ["dram-fills-pki", "loads filled from DRAM / 1000 instr", (v) => v.toFixed(1)],
  ["llc-mpki", "LLC misses / 1000 instructions", (v) => v.toFixed(1)],
  ["backend-bound-pct", "backend stall %", (v) => v.toFixed(0) + " %"],
  ["backend-bound-memory-pct", "stalled on memory %", (v) => v.toFixed(0) + " %"],
  ["dram-bytes", "DRAM bytes (demand loads)", (v) => fmtBytes(v)],
];

// SOFTWARE_ROWS are events every Linux host counts.
const SOFTWARE_ROWS = [
  ["task-clock", "CPU time", (v) => fmtNs(v)],
  ["cpus-utilized", "CPUs utilized", (v) => v.toFixed(2)],
  // Only with baseline=N (kernel/baseline.go): estimated from the cell's own timings.
  ["waiting-on-memory", "… of which waiting on memory (est.)", (v) => (100 * v).toFixed(0) + " %", true],
  ["page-faults", "page faults", (v) => fmtCount(Math.round(v))],
  ["context-switches", "context switches", (v) => fmtCount(Math.round(v))],
];

// metricOf finds a derived metric or an event value by name in a report
// section ({events, derived}); it returns {value} or {reason}.
function metricOf(sec, name) {
  if (!sec) return { reason: "" };
  for (const d of sec.derived || []) if (d.name === name && typeof d.value === "number") return { value: d.value };
  for (const e of sec.events || []) {
    if (e.name !== name) continue;
    if (e.available === false) return { reason: (e.reason && e.reason.message) || "not available" };
    if (typeof e.value === "number") return { value: e.value };
  }
  return { reason: "" };
}

// renderCounters renders the counters panel of a cell from a perf.Report.
// Counters the host cannot read are greyed out with the reason.
export function renderCounters(m, where) {
  const box = h("div.counters", h("div.paneltitle", m && m.live ? "perf counters (live)" : "perf counters"));
  if (where === "wasm") {
    box.append(h("div.unavail", "Counters are server-only: WebAssembly in a browser cannot read hardware performance counters."));
    return box;
  }
  if (!m) {
    box.append(h("div.unavail", "No counters collected: tick \u201ccounters\u201d on this cell (attribute counters=on) to measure them."));
    return box;
  }
  const av = m.availability || {};
  const hwReason = (av.hardware && av.hardware.available === false && av.hardware.reason && av.hardware.reason.message) || "";
  const rawReason = (av.raw && av.raw.available === false && av.raw.reason && av.raw.reason.message) || "";
  const workers = (m.workers || []).slice(0, 8);
  // Worker 0 is the statement's own thread (planning, the final merge, the
  // result); workers 1..n are the parallel GROUP BY threads.
  const head = h(
    "tr",
    h("th", ""),
    h("th.num", "total"),
    workers.map((w) =>
      w.worker === 0
        ? h("th.num", { title: "the statement's own thread: scan set-up, the final merge, sorting and building the result" }, "main")
        : h("th.num", { title: `parallel GROUP BY worker ${w.worker}` }, `worker ${w.worker}`),
    ),
  );
  const row = ([key, label, fmt]) => {
    const t = metricOf(m.total, key);
    const ok = t.value !== undefined;
    const why = t.reason || (key.includes("fills") || key.includes("backend") || key === "dram-bytes" ? rawReason || hwReason : hwReason) || "not counted on this CPU";
    return h(
      "tr",
      { class: ok ? null : "off", title: ok ? null : why },
      h("td", label),
      h("td.num", ok ? fmt(t.value) : "n/a"),
      workers.map((w) => {
        const x = metricOf(w, key);
        return h("td.num", x.value !== undefined ? fmt(x.value) : "–");
      }),
    );
  };
  const shown = SOFTWARE_ROWS.filter(([key, , , optional]) => !optional || metricOf(m.total, key).value !== undefined);
  box.append(h("table.countertable", h("thead", head), h("tbody", COUNTER_ROWS.map(row), shown.map(row))));
  const lines = [];
  if (hwReason) lines.push(`Hardware counters unavailable: ${hwReason}`);
  if (rawReason && rawReason !== hwReason) lines.push(`CPU-specific counters unavailable: ${rawReason}`);
  // The recipe names the CPU-specific events used; without hardware
  // counters there is nothing it applies to.
  if (av.recipe && !hwReason) lines.push(`recipe ${av.recipe}${av.recipe_note ? " (" + av.recipe_note + ")" : ""}`);
  if (m.wall_ns) lines.push(`wall ${fmtNs(m.wall_ns)}`);
  for (const l of lines) box.append(h("div.unavail", l));
  return box;
}
