// Charts drawn with uPlot: the memory latency curve with cache-level bands
// and the article's reference values, bandwidth bars, the GROUP BY sweep
// and a comparison of a cell's recent runs.
import uPlot, { textScale, onTextScale } from "./projector.js"; // uPlot, scaled with the large-font switch
import { h, fmtNs, fmtBytes } from "./util.js";

// REFERENCE holds typical latencies of a modern desktop CPU, as the
// article quotes them; they are drawn as horizontal bands behind the
// measured curve.
export const REFERENCE = [
  { name: "L1 ≈ 1 ns", lo: 0.8, hi: 1.25, color: "rgba(46,160,67,0.13)" },
  { name: "L2 ≈ 3–4 ns", lo: 3, hi: 4, color: "rgba(31,111,235,0.13)" },
  { name: "L3 ≈ 10–15 ns", lo: 10, hi: 15, color: "rgba(191,135,0,0.15)" },
  { name: "DRAM ≈ 50–100 ns", lo: 50, hi: 100, color: "rgba(207,34,46,0.12)" },
];

// PALETTE is the Okabe–Ito palette (kernel/chart.Palette), safe for
// colour-blind readers; its first three colours also differ in lightness,
// and lines differ in dash too (DASHES), so greyscale keeps them apart.
export const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000"];
const DASHES = [[], [6, 3], [2, 2], [8, 3, 2, 3]];
const dashOf = (i) => DASHES[i % DASHES.length];

// thinLabels returns a uPlot axis values function that labels each split
// with fmt and leaves blank every label that would touch the label before
// it or run past the canvas's edge, measured in the axis's font: at the
// projector size an axis shows fewer labels, never labels run together.
export function thinLabels(fmt) {
  return (u, splits, axisIdx) => {
    const labels = splits.map((v) => (v == null ? "" : fmt(v)));
    const ax = u.axes[axisIdx];
    if (!ax || !ax.font || !u.ctx) return labels;
    // While uPlot first lays the chart out, positions are not final: lay
    // the axes out again once it is ready.
    if (!u.status && !u._thinAgain) {
      u._thinAgain = true;
      requestAnimationFrame(() => u.redraw(false, true));
    }
    const ctx = u.ctx;
    const saved = ctx.font;
    ctx.font = ax.font[0];
    const horiz = ax.side % 2 === 0;
    // The size being laid out (the canvas keeps its old size until uPlot
    // commits the layout), in canvas pixels.
    const limit = (horiz ? u.width : u.height) * (devicePixelRatio || 1);
    const gap = ax.font[1] * 0.6;
    let last = null, first = null;
    const out = labels.map((s, i) => {
      if (!s) return "";
      const pos = u.valToPos(splits[i], ax.scale, true);
      const ext = horiz ? ctx.measureText(s).width : ax.font[1] * 1.2;
      if (!Number.isFinite(pos) || pos - ext / 2 < 0 || pos + ext / 2 > limit) return "";
      if (last && Math.abs(pos - last.pos) < (ext + last.ext) / 2 + gap) return "";
      last = { pos, ext };
      first ??= pos;
      return s;
    });
    ctx.font = saved;
    // How much of the axis the kept labels span (the tests read it: thin,
    // not empty).
    const ends = splits.filter((v) => v != null).map((v) => u.valToPos(v, ax.scale, true));
    const span = Math.abs(ends[ends.length - 1] - ends[0]);
    if (last) u.root.dataset[`labelSpan${axisIdx}`] = span > 0 ? (Math.abs(last.pos - first) / span).toFixed(2) : "1";
    return out;
  };
}

// padRight keeps room right of the plot for half the last x label, which
// centres on the plot's edge, at any text size.
export const padRight = () => Math.round(30 * textScale());

// fmtCount labels a count in decimal: 10, 100, 1k, 10k, 1M (never binary
// units).
export function fmtCount(v) {
  if (v == null || !isFinite(v)) return "";
  const a = Math.abs(v);
  const t = (x) => String(+x.toPrecision(3));
  if (a >= 1e9) return t(v / 1e9) + "G";
  if (a >= 1e6) return t(v / 1e6) + "M";
  if (a >= 1e3) return t(v / 1e3) + "k";
  return t(v);
}

// labelPlacer places texts in the plot area of u without overlap: each
// label tries its position and then the offsets given, one line apart,
// and is left out when none is free.
function labelPlacer(u) {
  const { left, top, width: w, height: hgt } = u.bbox;
  const placed = [];
  return (text, x, y, align, offsets) => {
    const ctx = u.ctx;
    const m = ctx.measureText(text);
    const line = (m.actualBoundingBoxAscent + m.actualBoundingBoxDescent) * 1.35;
    const x0 = align === "right" ? x - m.width : x;
    for (const k of offsets) {
      const yy = y + k * line;
      const b = { x0, x1: x0 + m.width, y0: yy - m.actualBoundingBoxAscent - 1, y1: yy + m.actualBoundingBoxDescent + 1 };
      if (b.x0 < left || b.x1 > left + w || b.y0 < top || b.y1 > top + hgt) continue;
      if (placed.some((p) => b.x0 < p.x1 && p.x0 < b.x1 && b.y0 < p.y1 && p.y0 < b.y1)) continue;
      placed.push(b);
      ctx.fillText(text, x0, yy);
      return true;
    }
    return false;
  };
}

function width(el) {
  return Math.max(320, Math.min(900, (el && el.clientWidth) || 640));
}

// chartBox wraps a uPlot chart with a title and resizes it with its box.
function chartBox(title, make, note) {
  const box = h("div.chart", h("div.paneltitle", title));
  const holder = h("div.plot");
  box.append(holder);
  if (note) box.append(h("div.note", note));
  requestAnimationFrame(() => {
    const plot = make(holder, width(holder));
    if (typeof ResizeObserver !== "undefined") {
      new ResizeObserver(() => plot.setSize({ width: width(holder), height: plot.height })).observe(holder);
    }
  });
  return box;
}

function pick(obj, ...keys) {
  for (const k of keys) if (obj && obj[k] !== undefined) return obj[k];
  return undefined;
}

// latencyPoints extracts [bytes[], ns[]] (and an optional second curve)
// from a latency measurement.
function latencySeries(m) {
  const pts = pick(m, "points", "samples", "curve") || pick(m.latency || {}, "points", "samples") || [];
  const bytes = pts.map((p) => pick(p, "bytes", "size", "size_bytes", "working_set"));
  const ns = pts.map((p) => pick(p, "ns", "latency_ns", "median_ns", "ns_per_access"));
  const min = pts.map((p) => pick(p, "min_ns") ?? null);
  return { bytes, ns, min: min.some((v) => v !== null) ? min : null };
}

// latencyChart draws latency (ns, log scale) against working-set size
// (bytes, log2 scale) for a latency.Result (docs/measurement-json.md §1):
// the detected plateaus as shaded vertical bands, the OS-reported cache
// sizes as dashed lines, and the article's reference latencies as
// horizontal bands.
export function latencyChart(m) {
  const s = latencySeries(m);
  const levels = m.levels || [];
  const os = (m.os_caches || []).filter((c) => c.type !== "Instruction" && c.size_bytes > 0);
  const series = [
    { label: "working set", value: (u, v) => (v == null ? "–" : fmtBytes(v)) },
    { label: "median", stroke: PALETTE[0], width: 2, points: { size: 5 }, value: (u, v) => (v == null ? "–" : fmtNs(v)) },
  ];
  const data = [s.bytes, s.ns];
  if (s.min) {
    series.push({ label: "min", stroke: "#8c959f", dash: [4, 4], value: (u, v) => (v == null ? "–" : fmtNs(v)) });
    data.push(s.min);
  }
  const px = (n) => n * devicePixelRatio;
  const plugin = {
    hooks: {
      drawClear: [
        (u) => {
          const ctx = u.ctx;
          const { left, top, width: w, height: hgt } = u.bbox;
          ctx.save();
          ctx.font = `${Math.round(px(11))}px sans-serif`;
          // Fills first; then the labels, most telling first, each where
          // it does not cover another (placed by labelPlacer).
          const labels = [];
          // Measured plateaus (vertical bands).
          levels.forEach((l, i) => {
            if (!l.from_bytes || !l.to_bytes) return;
            const x0 = Math.max(left, u.valToPos(l.from_bytes, "x", true));
            const x1 = Math.min(left + w, u.valToPos(l.to_bytes, "x", true));
            if (x1 <= x0) return;
            ctx.fillStyle = i % 2 ? "rgba(0,114,178,0.07)" : "rgba(0,114,178,0.14)";
            ctx.fillRect(x0, top, x1 - x0, hgt);
            labels.push({ text: `${l.name} ${fmtNs(l.ns)}`, x: x0 + px(3), y: top + hgt - px(6), align: "left", color: "#004f7c", offsets: [0, -1, -2, -3] });
          });
          // Reference latency bands (horizontal).
          for (const r of REFERENCE) {
            const y0 = Math.max(top, u.valToPos(r.hi, "y", true));
            const y1 = Math.min(top + hgt, u.valToPos(r.lo, "y", true));
            if (y1 <= y0) continue;
            ctx.fillStyle = r.color;
            ctx.fillRect(left, y0, w, y1 - y0);
            labels.push({ text: r.name, x: left + w - px(4), y: y0 + px(11), align: "right", color: "#57606a", offsets: [0, 1, -1, 2] });
          }
          // OS-reported cache sizes (dashed lines).
          ctx.strokeStyle = "rgba(36,41,47,0.55)";
          ctx.setLineDash([px(5), px(5)]);
          for (const c of os) {
            const x = u.valToPos(c.size_bytes, "x", true);
            if (x < left || x > left + w) continue;
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + hgt);
            ctx.stroke();
            labels.push({ text: `L${c.level} ${fmtBytes(c.size_bytes)}`, x: x + px(3), y: top + px(24), align: "left", color: "#24292f", offsets: [0, 1, 2, -1] });
          }
          ctx.setLineDash([]);
          const place = labelPlacer(u);
          for (const l of labels) {
            ctx.fillStyle = l.color;
            place(l.text, l.x, l.y, l.align, l.offsets);
          }
          ctx.restore();
        },
      ],
    },
  };
  const notes = [
    "Blue bands: plateaus detected in this curve.",
    os.length ? `Dashed lines: cache sizes reported by ${m.os_cache_source || "the OS"}.` : "The OS reported no cache sizes.",
    "Grey bands: typical latencies quoted for a modern desktop CPU (L1 ≈ 1 ns, L2 ≈ 3–4 ns, L3 ≈ 10–15 ns, DRAM ≈ 50–100 ns).",
    m.pages && m.pages.detail ? `Pages: ${m.pages.detail}.` : "",
    m.method ? `Method: ${m.method}.` : "",
  ].filter(Boolean);
  return chartBox(
    "memory latency (random pointer chase)",
    (el, w) =>
      new uPlot(
        {
          width: w,
          height: 320,
          padding: [null, padRight, null, null],
          plugins: [plugin],
          scales: {
            x: { time: false, distr: 3, log: 2 },
            y: { distr: 3, log: 10, range: (u, lo, hi) => [Math.min(0.5, lo || 0.5), Math.max(200, (hi || 200) * 1.3)] },
          },
          axes: [
            { values: thinLabels(fmtBytes), label: "working set" },
            { values: thinLabels(fmtNs), label: "ns per load", size: 70 },
          ],
          series,
        },
        data,
        el,
      ),
    notes.join(" "),
  );
}

// barsChart draws grouped bars: labels on x, one series per entry of
// series [{label, values}].
export function barsChart(title, labels, series, unitFmt, note, xLabel = "") {
  const xs = labels.map((_, i) => i);
  const n = Math.max(1, series.length);
  return chartBox(
    title,
    (el, w) =>
      new uPlot(
        {
          width: w,
          height: 260,
          scales: { x: { time: false, range: [-0.6, labels.length - 0.4] }, y: { range: (u, lo, hi) => [0, (hi || 1) * 1.1] } },
          padding: [null, padRight, null, null],
          axes: [{ values: thinLabels((v) => (Number.isInteger(v) ? labels[v] ?? "" : "")), splits: () => xs }, { values: thinLabels(unitFmt), size: 80 }],
          series: [
            { label: xLabel, value: (u, v) => labels[v] ?? "" },
            ...series.map((s, i) => ({
              label: s.label,
              fill: PALETTE[i % PALETTE.length] + "cc",
              stroke: PALETTE[i % PALETTE.length],
              paths: groupedBars(i, n),
              points: { show: false },
              value: (u, v) => (v == null ? "–" : unitFmt(v)),
            })),
          ],
        },
        [xs, ...series.map((s) => s.values)],
        el,
      ),
    note,
  );
}

// groupedBars draws series i of n as bars side by side within each x slot
// (uPlot's own bars path draws every series at the same x, one on top of
// the other).
function groupedBars(i, n) {
  return (u, sidx, idx0, idx1) => {
    const fill = new Path2D();
    const xs = u.data[0];
    const ys = u.data[sidx];
    const slot = Math.abs(u.valToPos(1, "x", true) - u.valToPos(0, "x", true));
    const width = (slot * 0.8) / n;
    const base = u.valToPos(0, "y", true);
    for (let k = idx0; k <= idx1; k++) {
      const v = ys[k];
      if (v == null) continue;
      const x = u.valToPos(xs[k], "x", true) - slot * 0.4 + i * width;
      const y = u.valToPos(v, "y", true);
      fill.rect(x + width * 0.05, Math.min(y, base), width * 0.9, Math.abs(base - y));
    }
    return { stroke: fill, fill };
  };
}

// bandwidthChart draws read/write/copy bandwidth in GB/s.
export function bandwidthChart(m) {
  const rows = pick(m, "results", "points", "samples") || [];
  const ops = [...new Set(rows.map((r) => pick(r, "op", "kind", "name")))];
  const threads = [...new Set(rows.map((r) => pick(r, "threads") ?? 1))].sort((a, b) => a - b);
  const series = threads.map((t) => ({
    label: `${t} thread${t === 1 ? "" : "s"}`,
    values: ops.map((op) => {
      const r = rows.find((x) => pick(x, "op", "kind", "name") === op && (pick(x, "threads") ?? 1) === t);
      if (!r) return null;
      const gbs = pick(r, "gb_per_s", "gbps", "GBps");
      return gbs !== undefined ? gbs : pick(r, "bytes_per_s", "bytes_per_sec") / 1e9;
    }),
  }));
  const notes = [...(m.notes || []), m.num_cpu ? `${m.num_cpu} CPUs, GOMAXPROCS ${m.gomaxprocs}, median of ${m.reps} runs.` : ""];
  return barsChart("memory bandwidth (GB/s, GB = 10⁹ B)", ops, series, (v) => (v == null ? "" : `${v.toFixed(1)} GB/s`), notes.filter(Boolean).join(" · "), "op");
}

// sweepChart draws time per row against the number of groups, one line per
// strategy.
export function sweepChart(m) {
  const rows = pick(m, "points", "results", "samples") || [];
  const groups = [...new Set(rows.map((r) => pick(r, "groups", "distinct", "keys")))].sort((a, b) => a - b);
  const strategies = [...new Set(rows.map((r) => pick(r, "strategy", "group_by", "name")))];
  const metric = (r) => pick(r, "ns_per_row", "ns_row") ?? (pick(r, "time_ns", "elapsed_ns") / (pick(r, "rows") || 1));
  const data = [groups, ...strategies.map((s) => groups.map((g) => {
    const r = rows.find((x) => pick(x, "groups", "distinct", "keys") === g && pick(x, "strategy", "group_by", "name") === s);
    return r ? metric(r) : null;
  }))];
  // A live measurement may lack rows and reps: say only what is known.
  const parts = [];
  if (m.query) parts.push(m.query);
  if (Number.isFinite(Number(m.rows)) && m.rows) parts.push(`over ${Number(m.rows).toLocaleString("en-US")} rows`);
  if (Number.isFinite(Number(m.reps)) && m.reps) parts.push(`median of ${m.reps} run${m.reps === 1 ? "" : "s"}`);
  const note = parts.length ? parts.join(", ") + "." : m.note;
  const timed = chartBox(
    "GROUP BY cost as the number of groups grows",
    (el, w) =>
      new uPlot(
        {
          width: w,
          height: 300,
          padding: [null, padRight, null, null],
          scales: { x: { time: false, distr: 3, log: 10 } },
          axes: [{ label: "distinct groups", values: thinLabels(fmtCount) }, { label: "ns per row", size: 70, values: thinLabels(fmtNs) }],
          series: [{ label: "groups", value: (u, v) => fmtCount(v) }, ...strategies.map((s, i) => ({ label: s, stroke: PALETTE[i % PALETTE.length], dash: dashOf(i), width: 2, points: { size: 5 }, value: (u, v) => (v == null ? "–" : fmtNs(v)) }))],
        },
        data,
        el,
      ),
    note,
  );
  const modelled = sweepModelChart(m, rows, groups, strategies);
  return modelled ? h("div", timed, modelled) : timed;
}

// sweepModelChart draws the modelled (not measured) DRAM lines and L2
// misses per row of a sweep run with model=true: solid lines DRAM, dashed
// L2, one colour per strategy as in the timed chart. Null without a model.
function sweepModelChart(m, rows, groups, strategies) {
  const find = (g, s) => rows.find((x) => pick(x, "groups", "distinct", "keys") === g && pick(x, "strategy", "group_by", "name") === s);
  if (!rows.some((r) => r.model && r.model.modelled && !r.model.why)) return null;
  const val = (g, s, k) => {
    const r = find(g, s);
    return r && r.model && !r.model.why ? r.model[k] : null;
  };
  const fmt = (v) => (v == null ? "–" : v.toFixed(3));
  const series = [{ label: "groups", value: (u, v) => fmtCount(v) }];
  const data = [groups];
  strategies.forEach((s, i) => {
    const stroke = PALETTE[i % PALETTE.length];
    series.push({ label: `${s} DRAM lines/row`, stroke, width: 2, points: { size: 5 }, value: (u, v) => fmt(v) });
    data.push(groups.map((g) => val(g, s, "dram_lines_per_row")));
    series.push({ label: `${s} L2 misses/row`, stroke, width: 1.5, dash: [6, 4], points: { size: 4 }, value: (u, v) => fmt(v) });
    data.push(groups.map((g) => val(g, s, "l2_misses_per_row")));
  });
  const parts = ["Modelled, not measured: the engine's traced GROUP BY through a cache model"];
  if (m.model_geometry) parts.push(`of ${m.model_geometry}${m.model_geometry_source ? ` (${m.model_geometry_source})` : ""}`);
  if (m.model_sampling) parts.push(`sampling ${m.model_sampling}`);
  const why = rows.filter((r) => r.model && r.model.why).map((r) => `${r.strategy} at ${r.groups}: ${r.model.why}`);
  return chartBox(
    "modelled misses per row as the number of groups grows",
    (el, w) =>
      new uPlot(
        {
          width: w,
          height: 220,
          padding: [null, padRight, null, null],
          scales: { x: { time: false, distr: 3, log: 10 } },
          axes: [{ label: "distinct groups", values: thinLabels(fmtCount) }, { label: "modelled per row", size: 60, values: thinLabels((v) => v.toFixed(2)) }],
          series,
        },
        data,
        el,
      ),
    [parts.join(", ") + ".", ...why].join(" · "),
  );
}

// runsChart compares a cell's recent runs (e.g. naive vs radix): one bar
// per run, labelled with its strategy and where it ran.
export function runsChart(runs) {
  const labels = runs.map((r, i) => `#${i + 1} ${r.label}`);
  return barsChart("recent runs of this cell", labels, [{ label: "time", values: runs.map((r) => r.ns) }], (v) => (v == null ? "" : fmtNs(v)), "Wall time of each run, with the GROUP BY strategy and where it ran.", "run");
}

// measurementChart picks the chart for a measurement JSON object.
export function measurementChart(m) {
  const kind = pick(m, "kind", "type") || "";
  if (kind === "latency" || m.latency) return latencyChart(m.latency || m);
  if (kind === "bandwidth" || m.bandwidth) return bandwidthChart(m.bandwidth || m);
  if (kind === "sweep" || m.sweep) return sweepChart(m.sweep || m);
  if (kind === "experiment" && m.experiment) return experimentChart(m.experiment);
  return null;
}

// SVG is the namespace of the experiment charts' elements.
const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

// marker is series i's point marker (circle, square, triangle, diamond,
// as kernel/chart draws them) of radius r at (x, y), as an SVG path.
function marker(i, x, y, r) {
  const f = (v) => v.toFixed(1);
  switch (i % 4) {
    case 1:
      return `M${f(x - r)} ${f(y - r)}h${f(2 * r)}v${f(2 * r)}h${f(-2 * r)}z`;
    case 2:
      return `M${f(x)} ${f(y - r * 1.15)}L${f(x + r)} ${f(y + r * 0.85)}L${f(x - r)} ${f(y + r * 0.85)}z`;
    case 3:
      return `M${f(x)} ${f(y - r * 1.2)}L${f(x + r)} ${f(y)}L${f(x)} ${f(y + r * 1.2)}L${f(x - r)} ${f(y)}z`;
  }
  return `M${f(x - r)} ${f(y)}a${r} ${r} 0 1 0 ${f(2 * r)} 0a${r} ${r} 0 1 0 ${f(-2 * r)} 0z`;
}

// niceTicks returns about n round values covering [lo, hi].
function niceTicks(lo, hi, n = 5) {
  if (!(hi > lo)) hi = lo + 1;
  const raw = (hi - lo) / n;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((s) => s * mag).find((s) => s >= raw) || 10 * mag;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

// fmtTick prints an axis value with at most three significant digits.
function fmtTick(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return +(v / 1e9).toPrecision(3) + "G";
  if (a >= 1e6) return +(v / 1e6).toPrecision(3) + "M";
  if (a >= 1e4) return +(v / 1e3).toPrecision(3) + "k";
  return String(+v.toPrecision(3));
}

// experimentSVG draws an experiment.Chart (kernel/experiment/chart.go) as
// an SVG: lines over a numeric (optionally log) x axis, or grouped bars over
// categories; axis titles (the y title carries the unit) and a legend. It
// is plain SVG, so it draws the same in server and WebAssembly mode and
// needs no layout pass.
export function experimentSVG(c) {
  const series = (c.series || []).filter((s) => (s.points || []).length);
  // Text grows with the large-font switch (k), and the margins with it.
  const k = textScale();
  const fs = 11 * k, cw = 6.5 * k; // font size; width of a character, about
  const W = 640, L = Math.round(64 * k), R = 16, T = Math.round(12 * k);
  const pw = W - L - R;
  // Bar labels that do not fit their slot break at " · " onto more lines.
  const labels = c.bars ? [...new Set(series.flatMap((s) => s.points.map((p) => p.label ?? String(p.x))))] : [];
  const slot = pw / Math.max(1, labels.length);
  const fit = Math.floor(slot / cw) - 1; // characters a slot holds
  const lines = labels.map((lab) => (lab.length > fit ? lab.split(" · ") : [lab]).slice(0, 4));
  // Slots too narrow for their labels' words get upright labels instead.
  const slant = lines.some((l) => l.some((part) => part.length > fit));
  const longest = Math.min(24, Math.max(0, ...labels.map((l) => l.length)));
  const extra = slant ? Math.max(0, longest * cw - 14 * k) : 12 * k * (Math.max(1, ...lines.map((l) => l.length)) - 1);
  const B = Math.round(56 * k) + extra, H = Math.round(244 + 56 * k) + extra;
  const ph = H - T - B;
  const root = svg("svg", { class: "xchart", viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", "aria-label": c.title || "chart", "data-series": series.length });
  const ys = series.flatMap((s) => s.points.map((p) => p.y)).filter(Number.isFinite);
  const yMax = Math.max(0, ...ys) * 1.08 || 1;
  const yTicks = niceTicks(0, yMax);
  const yTop = Math.max(yMax, yTicks[yTicks.length - 1]);
  const yPos = (v) => T + ph - (v / yTop) * ph;
  const g = svg("g", { class: "axes", "font-size": fs, "font-family": "sans-serif", fill: "currentColor" });
  root.append(g);
  for (const v of yTicks) {
    g.append(svg("line", { x1: L, x2: L + pw, y1: yPos(v), y2: yPos(v), stroke: "#d0d7de", "stroke-width": 1 }));
    g.append(svg("text", { x: L - 6, y: yPos(v) + fs * 0.35, "text-anchor": "end" }, fmtTick(v)));
  }
  g.append(svg("line", { x1: L, x2: L + pw, y1: T + ph, y2: T + ph, stroke: "#57606a" }));
  g.append(svg("line", { x1: L, x2: L, y1: T, y2: T + ph, stroke: "#57606a" }));
  const yt = Math.round(14 * k);
  g.append(svg("text", { class: "ytitle", x: yt, y: T + ph / 2, "text-anchor": "middle", transform: `rotate(-90 ${yt} ${T + ph / 2})` }, c.y_title || ""));
  g.append(svg("text", { class: "xtitle", x: L + pw / 2, y: H - 8, "text-anchor": "middle" }, c.x_title || ""));
  const plot = svg("g", { class: "series" });
  root.append(plot);
  if (c.bars) {
    const bw = (slot * 0.8) / Math.max(1, series.length);
    const cut = (t) => (t.length > fit ? t.slice(0, fit - 1) + "…" : t);
    labels.forEach((lab, i) => {
      const x = L + slot * i + slot / 2;
      if (slant) {
        const y = T + ph + 6 * k, xr = x + fs * 0.35;
        const s = lab.length > 24 ? lab.slice(0, 23) + "…" : lab;
        g.append(svg("text", { x: xr, y, "text-anchor": "end", transform: `rotate(-90 ${xr} ${y})` }, svg("title", {}, lab), s));
        return;
      }
      g.append(
        svg("text", { x, y: T + ph + 16 * k, "text-anchor": "middle" }, svg("title", {}, lab),
          ...lines[i].map((part, j) => svg("tspan", { x, dy: j ? 12 * k : 0 }, cut(part)))),
      );
    });
    series.forEach((s, si) => {
      const gs = svg("g", { class: "s", "data-name": s.name, fill: PALETTE[si % PALETTE.length] });
      for (const p of s.points) {
        const i = labels.indexOf(p.label ?? String(p.x));
        const x = L + slot * i + slot * 0.1 + si * bw;
        const y = yPos(Math.max(0, p.y));
        gs.append(svg("rect", { x: x + bw * 0.05, y, width: bw * 0.9, height: T + ph - y }, svg("title", {}, `${s.name} · ${p.label}: ${fmtTick(p.y)} ${c.y_title || ""}`)));
      }
      plot.append(gs);
    });
  } else {
    const xs = series.flatMap((s) => s.points.map((p) => p.x || 0)).filter((v) => Number.isFinite(v) && (!c.log_x || v > 0));
    let lo = Math.min(...xs), hi = Math.max(...xs);
    const tx = c.log_x ? Math.log10 : (v) => v;
    if (!(hi > lo)) hi = lo + 1;
    const xPos = (v) => L + ((tx(v) - tx(lo)) / (tx(hi) - tx(lo) || 1)) * pw;
    const xTicks = c.log_x
      ? [...new Set(xs)].sort((a, b) => a - b).filter((v, i, a) => a.length <= 10 || i % Math.ceil(a.length / 10) === 0)
      : niceTicks(lo, hi).filter((v) => v >= lo && v <= hi);
    // Ticks whose labels would touch the previous one or the edge are
    // left out.
    let last = -Infinity;
    for (const v of xTicks) {
      const s = fmtTick(v), x = xPos(v), half = (s.length * cw) / 2;
      if (x - half < Math.max(0, last + cw) || x + half > W) continue;
      last = x + half;
      g.append(svg("text", { x, y: T + ph + 16 * k, "text-anchor": "middle" }, s));
    }
    series.forEach((s, si) => {
      const col = PALETTE[si % PALETTE.length];
      const pts = s.points.filter((p) => Number.isFinite(p.y) && (!c.log_x || (p.x || 0) > 0));
      const gs = svg("g", { class: "s", "data-name": s.name });
      gs.append(svg("polyline", { fill: "none", stroke: col, "stroke-width": 2, "stroke-dasharray": dashOf(si).join(" ") || null, points: pts.map((p) => `${xPos(p.x || 0).toFixed(1)},${yPos(p.y).toFixed(1)}`).join(" ") }));
      for (const p of pts) gs.append(svg("path", { d: marker(si, xPos(p.x || 0), yPos(p.y), 3.5), fill: col }, svg("title", {}, `${s.name} · ${fmtTick(p.x || 0)}: ${fmtTick(p.y)} ${c.y_title || ""}`)));
      plot.append(gs);
    });
  }
  const legend = h(
    "div.legend",
    series.map((s, i) => {
      const col = PALETTE[i % PALETTE.length];
      // Lines show their dash in the legend, bars their colour.
      const style = !c.bars && dashOf(i).length ? `border-top:3px dashed ${col};height:0;border-radius:0` : `background:${col}`;
      return h("span.item", h("span.swatch", { style }), s.name || `series ${i + 1}`);
    }),
  );
  return h("div.xchartbox", root, legend);
}

// parseCell reads a table cell such as "38.9 ms", "1.07x" or "8MiB" as a
// number and its unit; null when it is not a number ("-", "mutex").
function parseCell(v) {
  const m = String(v ?? "").trim().match(/^([-+]?\d+(?:\.\d+)?)\s*([^\d\s].*)?$/);
  return m ? { n: Number(m[1]), unit: (m[2] || "").trim() } : null;
}

// tableChart derives a chart from an experiment's first table when the
// experiment has no chart of its own: bars labelled by the leading columns
// (as many as make the labels unique), heights from the column that best
// names a cost (ns/…, then total, best, time, wall), whose cells share
// one unit.
function tableChart(r) {
  const t = (r.tables || [])[0];
  if (!t || !t.rows || !t.rows.length) return null;
  const cols = t.columns.map((name, j) => {
    const cells = t.rows.map((row) => parseCell(row[j]));
    const ok = j > 0 && cells.every((c) => c && c.unit === cells[0].unit);
    return { name, j, ok, unit: ok ? cells[0].unit : "", cells };
  });
  const rank = (c) => (/ns\//.test(c.name) ? 0 : /^(total|best|time|wall)$/i.test(c.name) ? 1 : /^(ns|µs|us|ms|s)$/.test(c.unit) ? 2 : 3);
  const y = cols.filter((c) => c.ok).sort((a, b) => rank(a) - rank(b) || a.j - b.j)[0];
  if (!y) return null;
  let labels = [];
  for (let k = 1; k <= Math.min(3, t.columns.length); k++) {
    const use = [...Array(k).keys()].filter((j) => j !== y.j);
    labels = t.rows.map((row) => use.map((j) => row[j]).join(" · "));
    if (new Set(labels).size === labels.length) break;
  }
  const unit = y.unit && !y.name.includes(y.unit) ? ` (${y.unit})` : "";
  return {
    title: t.title || r.experiment,
    x_title: t.columns.slice(0, Math.max(1, labels[0].split(" · ").length)).join(" · "),
    y_title: y.name + unit,
    bars: true,
    series: [{ name: y.name, points: t.rows.map((row, i) => ({ label: labels[i], y: y.cells[i].n })) }],
  };
}

// experimentChart renders an experiment result (kind "experiment"): its
// chart as SVG (or one derived from its first table), then its tables and
// notes as text.
export function experimentChart(r) {
  const c = r.chart || tableChart(r);
  const box = h("div.chart", h("div.paneltitle", (c && c.title) || r.experiment || "experiment"));
  if (c) {
    // Drawn again when the large-font switch changes the text size.
    let drawn = experimentSVG(c);
    box.append(drawn);
    onTextScale(box, () => {
      const next = experimentSVG(c);
      drawn.replaceWith(next);
      drawn = next;
    });
  }
  if (!r.chart && c) box.append(h("div.note", "Chart drawn from the experiment's first table."));
  for (const t of r.tables || []) {
    const w = t.columns.map((col, j) => Math.max(String(col).length, ...t.rows.map((row) => String(row[j] ?? "").length)));
    const line = (cells) => cells.map((v, j) => String(v ?? "").padEnd(w[j])).join("  ").trimEnd();
    box.append(h("pre.stream.stdout", [t.title, line(t.columns), ...t.rows.map(line)].filter(Boolean).join("\n")));
  }
  for (const n of r.notes || []) box.append(h("div.note", n));
  return box;
}
