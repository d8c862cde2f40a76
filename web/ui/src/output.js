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

// renderStream renders stdout/stderr text.
export function renderStream(name, text) {
  return h("pre.stream." + (name === "stderr" ? "stderr" : "stdout"), text);
}

// Counter rows of the counters panel: [key, label, format]. Each value is
// read from the measurement JSON (docs/measurement-json.md) by key.
const COUNTER_ROWS = [
  ["ipc", "IPC (instructions per cycle)", (v) => v.toFixed(2)],
  ["l1d_mpki", "L1d misses / 1000 instr", (v) => v.toFixed(1)],
  ["l2_mpki", "L2 misses / 1000 instr", (v) => v.toFixed(1)],
  ["l3_mpki", "L3 (LLC) misses / 1000 instr", (v) => v.toFixed(1)],
  ["stall_pct", "backend stall %", (v) => v.toFixed(0) + " %"],
  ["dram_bytes", "DRAM bytes", (v) => fmtBytes(v)],
];

// renderCounters renders the counters panel of a cell from measurement JSON.
// Counters the host cannot read are greyed out with the reason.
export function renderCounters(m, where) {
  const box = h("div.counters", h("div.paneltitle", "perf counters"));
  if (where === "wasm") {
    box.append(h("div.unavail", "Counters are server-only: a browser has no access to hardware performance counters."));
    return box;
  }
  if (!m) {
    box.append(h("div.unavail", "no counters were collected for this run"));
    return box;
  }
  const metrics = m.metrics || m.derived || m;
  const unavailable = m.unavailable || {};
  const reason = m.reason || m.unavailable_reason || (m.available === false ? "perf counters are not available on this host" : "");
  const workers = m.workers || m.per_worker || [];
  const head = h("tr", h("th", ""), h("th.num", "total"), workers.map((w) => h("th.num", `w${w.worker ?? w.id ?? ""}`)));
  const body = COUNTER_ROWS.map(([key, label, fmt]) => {
    const v = metrics[key];
    const why = (typeof unavailable === "object" && unavailable[key]) || reason;
    const ok = typeof v === "number" && isFinite(v);
    return h(
      "tr",
      { class: ok ? null : "off", title: ok ? null : why || "not measured" },
      h("td", label),
      h("td.num", ok ? fmt(v) : "n/a"),
      workers.map((w) => {
        const wv = (w.metrics || w)[key];
        return h("td.num", typeof wv === "number" && isFinite(wv) ? fmt(wv) : "n/a");
      }),
    );
  });
  box.append(h("table.countertable", h("thead", head), h("tbody", body)));
  if (reason) box.append(h("div.unavail", reason));
  if (m.note) box.append(h("div.note", m.note));
  return box;
}
