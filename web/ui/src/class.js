// Classroom mode in the browser (docs/classroom.md). One script, three
// pages, told apart by <body data-page>:
//   class  the teacher's class view (GET /class): roster, every learner's
//          latency curve with the class median, the guess distribution of
//          each prediction cell, an SQL cell's results side by side, and
//          the teacher's actions (push, lock, projector demo); live over
//          server-sent events from /api/class/events.
//   join   the learners' join page (GET /join?code=…).
//   (none) the notebook page: for a learner, a class bar with the
//          teacher's pushes, locks and the projector demo
//          (/api/class/me/events); for anyone else nothing happens.
import uPlot from "uplot";
import "./class.css";
import { h, fmtNs, fmtBytes, fmtWait } from "./util.js";
import { measurementChart, thinLabels, padRight } from "./charts.js";
import { ask } from "./dialog.js";

const MIME_MEASUREMENT = "application/vnd.cachebook.measurement+json";
const MIME_RESULT = "application/vnd.cachebook.result+json";
const MIME_PREDICTION = "application/vnd.cachebook.prediction+json";

// rem is the root font size in px: the large-font switch (body.large)
// raises it, and the class view's charts size their text with it.
function rem() {
  return parseFloat(getComputedStyle(document.documentElement).fontSize) || 15;
}

function isLarge() {
  return document.body.classList.contains("large");
}

function toggleLarge(after) {
  const on = document.body.classList.toggle("large");
  localStorage.setItem("cachebook.large", on ? "1" : "0");
  if (after) after();
}

async function api(method, path, body) {
  const r = await fetch(path, {
    method,
    cache: "no-store",
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const v = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(v.evalue || `${method} ${path}: ${r.status}`);
  return v;
}

// dropToken takes the token out of the address bar and the history: the
// server set the token cookie with the page, and the class view's event
// stream and requests use it.
function dropToken() {
  const q = new URLSearchParams(location.search);
  if (!q.has("token")) return;
  q.delete("token");
  const rest = q.toString();
  history.replaceState(history.state, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
}

// ---------------------------------------------------------------- teacher

class ClassView {
  constructor(root) {
    this.root = root;
    this.snap = null;
    this.sqlCell = "";
    this.demoOut = h("div.demoout");
    this.demo = null;
  }

  async start() {
    dropToken();
    if (localStorage.getItem("cachebook.large") === "1") document.body.classList.add("large");
    this.fullEl = h("div.banner.bad.hidden#classfull");
    this.joinsEl = h("span.joins#joins");
    this.statusEl = h("span.status", h("span.dot.off"), "connecting");
    this.codeEl = h("span.joincode");
    this.linkEl = h("code.joinlink");
    this.lessonSel = h("select#pushlesson", { "aria-label": "lesson to open on every learner's screen" }, h("option", { value: "" }, "lesson…"));
    this.cellIn = h("input#pushcell", { placeholder: "cell id (optional)", size: 14, "aria-label": "cell to open (optional)" });
    this.lockIn = h("input#lockcell", { placeholder: "cell id", size: 12, "aria-label": "cell to lock or unlock" });
    this.demoKind = h("select#demokind", { "aria-label": "demo cell kind" }, ["latency", "sql", "bandwidth", "sweep"].map((k) => h("option", { value: k }, k)));
    this.demoCode = h("input#democode", { placeholder: "demo cell: e.g. min=4K max=64M", size: 28, "aria-label": "demo cell source" });
    this.root.replaceChildren(
      h(
        "header.classhead",
        h("a.brand", { href: "/" }, "cachebook"),
        h("h1.title#classname", "class"),
        h("span.spacer"),
        h("span.joinbox", "join: ", this.linkEl, " code ", this.codeEl),
        this.statusEl,
        h("button#large", { title: "Large font for projectors", onclick: () => toggleLarge(() => this.render()) }, "Aa"),
      ),
      h(
        "div.toolbar.classbar",
        { role: "region", "aria-label": "the teacher's actions" },
        h("span.group", this.lessonSel, this.cellIn, h("button#push", { onclick: () => this.push() }, "Open this now")),
        h("span.group", this.lockIn, h("button#lock", { onclick: () => this.lock(true) }, "Lock"), h("button#unlock", { onclick: () => this.lock(false) }, "Unlock")),
        h("span.group", this.demoKind, this.demoCode, h("button#demo", { onclick: () => this.runDemo() }, "Run on projector")),
        h("span.classstate#classstate"),
        this.joinsEl,
      ),
      this.fullEl,
      h(
        "main.classmain",
        { "aria-label": "class view" },
        h(
          "section.panel#curves",
          { "aria-labelledby": "curvestitle" },
          h("h2.paneltitle#curvestitle", "latency curves: the server's and the learners' own machines, and the class median"),
          h("div.plot#curveplot"),
          h("div#machines"),
        ),
        h("section.panel#predictions", h("h2.paneltitle", "predictions: the class's guesses against the measured values"), h("div#predlist")),
        h("section.panel#sql", h("h2.paneltitle", "an SQL cell, side by side"), h("div#sqlpick"), h("div#sqltable")),
        h("section.panel#demo", h("h2.paneltitle", "projector demo (learners see it live)"), this.demoOut),
        h("section.panel#roster", h("h2.paneltitle", "roster"), h("div#rostertable")),
      ),
    );
    api("GET", "/api/lessons")
      .then((v) => {
        for (const l of v.lessons || []) this.lessonSel.append(h("option", { value: l.id }, l.title || l.id));
      })
      .catch(() => {});
    this.listen();
    window.addEventListener("resize", () => this.drawCurves());
  }

  listen() {
    const es = new EventSource("/api/class/events");
    es.onopen = () => this.setStatus("live", "idle");
    es.onerror = () => this.setStatus("reconnecting", "off");
    es.onmessage = (e) => {
      const ev = JSON.parse(e.data);
      if (ev.type === "snapshot") {
        this.snap = ev.data;
        this.render();
      }
    };
  }

  setStatus(text, dot) {
    this.statusEl.replaceChildren(h(`span.dot.${dot}`), text);
  }

  render() {
    const s = this.snap;
    if (!s) return;
    document.title = `cachebook class: ${s.class}`;
    this.root.querySelector("#classname").textContent = `${s.class} · ${s.learners.length} learner${s.learners.length === 1 ? "" : "s"}`;
    this.codeEl.textContent = s.code;
    this.linkEl.textContent = `${location.origin}/join?code=${s.code}`;
    const parts = [];
    if (s.locks && s.locks.length) parts.push(`locked: ${s.locks.join(", ")}`);
    if (s.push) parts.push(`pushed: ${[s.push.lesson, s.push.cell].filter(Boolean).join(" · ")}`);
    this.root.querySelector("#classstate").textContent = parts.join(" · ");
    this.renderJoins(s);
    this.renderRoster(s);
    this.drawCurves();
    this.renderPredictions(s);
    this.renderSQL(s);
  }

  // renderJoins shows the joins as they happen: the roster against its
  // limit, the last minute's joins and the refused ones; a full class
  // gets a banner.
  renderJoins(s) {
    const j = s.joins;
    if (!j) return;
    const r = j.refused || {};
    const refused = [
      r.wrong_code ? `${r.wrong_code} wrong code${r.wrong_code === 1 ? "" : "s"}` : "",
      r.rate ? `${r.rate} over the join rate` : "",
      r.full ? `${r.full} while full` : "",
      r.name ? `${r.name} refused name${r.name === 1 ? "" : "s"}` : "",
    ].filter(Boolean);
    const newest = s.learners.length ? s.learners[s.learners.length - 1].name : "";
    this.joinsEl.textContent =
      `${s.learners.length}/${j.max_learners} learners · ${j.last_minute} joined in the last minute` +
      (newest ? ` (latest: ${newest})` : "") +
      (refused.length ? ` · refused: ${refused.join(", ")}` : "");
    this.joinsEl.classList.toggle("bad", !!j.full);
    this.fullEl.classList.toggle("hidden", !j.full);
    this.fullEl.replaceChildren(
      j.full
        ? h(
            "b",
            `The class is full: ${s.learners.length} of ${j.max_learners} learners. New learners are refused` +
              (r.full ? ` (${r.full} so far)` : "") +
              `. Remove names that should not be here from the roster, or restart the class with a new code.`,
          )
        : "",
    );
  }

  renderRoster(s) {
    const st = s.stats;
    const ms = (x) => fmtWait(x * 1e6);
    const doing = (l) => {
      if (l.running) return `${l.running}${l.running_cell ? " · " + l.running_cell : ""}`;
      const left = l.expected_wait_ms ? `about ${ms(l.expected_wait_ms)} left, ` : "";
      if (l.waiting_shared) return `waiting for the shared run · ${left}waited ${ms(l.waited_ms)}`;
      if (l.queue_position) return `${ordinal(l.queue_position)} in line for the measurement core · ${left}waited ${ms(l.waited_ms)}`;
      return l.queued ? "queued" : "";
    };
    const curve = (l) => {
      const parts = [];
      if (l.own) parts.push(`own machine (${machineLine(l.own.machine)})`);
      if (l.curve && l.curve.length) parts.push(l.curve_shared_at ? `server, shared (measured ${new Date(l.curve_shared_at).toLocaleTimeString()})` : "server");
      return parts.join(" · ") || "–";
    };
    const rows = s.learners.map((l) =>
      h(
        "tr",
        { "data-learner": l.id, ...(l.queue_position ? { "data-position": String(l.queue_position) } : {}) },
        h("td", h(`span.dot.${l.connected ? (l.running ? "busy" : "idle") : "off"}`, { role: "img", "aria-label": l.connected ? (l.running ? "running" : "idle") : "not connected" }), " ", l.name),
        h("td.doing", doing(l)),
        h("td.num", String(l.pending)),
        h("td.num", String(l.cells)),
        h("td.curve", curve(l)),
        h("td.num", { title: "measurement cells that waited for the measurement core or a shared run" }, l.measurement_waits ? `${l.measurement_waits} (last ${ms(l.last_measurement_wait_ms)})` : "0"),
        h("td", h("button.remove", { type: "button", "aria-label": `remove ${l.name}`, onclick: () => this.remove(l) }, "remove")),
      ),
    );
    this.root.querySelector("#rostertable").replaceChildren(
      this.renderBackground(s),
      h(
        "div.note",
        `${st.cells} cells · cell time p50 ${ms(st.p50_ms)}, p99 ${ms(st.p99_ms)} · cells per learner ${st.min_per_learner}–${st.max_per_learner} · ` +
          `${st.waiting} measurement${st.waiting === 1 ? "" : "s"} waiting now, ${st.measurement_waits} waited so far · ` +
          `latency curves: ${st.shared_curves} shared from a server run, ${st.server_curves} run on the server, ${st.own_curves} from own machines`,
      ),
      h(
        "table.grid.roster",
        h("thead", h("tr", ["learner", "running or waiting", "queued", "cells", "latency curve", "waited", h("span.visually-hidden", "actions")].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", rows),
      ),
    );
  }

  // renderBackground says what the server measures for the class in the
  // background (lesson 1 when it starts, a pushed lesson, the refreshes
  // of the shared results while learners are connected), and until when
  // each shared result is fresh.
  renderBackground(s) {
    const prepared = s.prepared || [];
    if (!s.measuring && !prepared.length) return "";
    const time = (t) => new Date(t).toLocaleTimeString();
    const lesson = (x) => (x.lesson_number ? `lesson ${x.lesson_number}` : x.lesson);
    const lines = [];
    const m = s.measuring;
    if (m) {
      const why = { start: "so that the first learners get a shared result at once", push: "the lesson you pushed", refresh: "its shared result is about to expire" }[m.why] || m.why;
      lines.push(
        h(
          "div.measuring#measuring",
          { role: "status" },
          h("b", `measuring the server for ${lesson(m)}${m.lesson_title ? " (" + m.lesson_title + ")" : ""} …`),
          ` ${m.kind} cell${m.cell ? " " + m.cell : ""}, since ${time(m.started_at)}` +
            (m.expected_ms ? `, about ${fmtWait(m.expected_ms * 1e6)} a run` : "") +
            ` · ${why}; it gives way to any learner's cell`,
        ),
      );
    }
    const fresh = prepared.map((p) => {
      const what = `${lesson(p)} ${p.kind}${p.cell ? " (" + p.cell + ")" : ""}`;
      if (p.running) return `${what}: measuring${p.waiters ? `, ${p.waiters} waiting for it` : ""}`;
      const gave = p.gave_way ? ` (gave way to a learner's cell; measured when the server is idle)` : "";
      if (p.measured_at) return `${what}: shared, measured ${time(p.measured_at)}, fresh until ${time(p.fresh_until)}${gave}`;
      return `${what}: not measured yet${gave}`;
    });
    if (fresh.length) {
      lines.push(
        h(
          "div.note#prepared",
          `server measurements learners share: ${fresh.join(" · ")}` +
            (s.kept_fresh ? " · measured again before they expire while learners are connected" : ""),
        ),
      );
    }
    return h("div.background", lines);
  }

  drawCurves() {
    const s = this.snap;
    const el = this.root.querySelector("#curveplot");
    if (!s || !el) return;
    // One line per curve: the server's (a shared run is drawn once) and
    // each learner's own machine, dashed.
    const curves = [];
    const sharedSeen = new Set();
    for (const l of s.learners) {
      if (l.curve && l.curve.length) {
        const key = l.curve_shared_at || "";
        if (!key || !sharedSeen.has(key)) {
          sharedSeen.add(key);
          curves.push({ name: key ? `server (shared ${new Date(key).toLocaleTimeString()})` : `${l.name} · server`, curve: l.curve, own: false });
        }
      }
      if (l.own) curves.push({ name: `${l.name} · own machine`, curve: l.own.curve, own: true });
    }
    const xs = [...new Set([...curves.flatMap((l) => l.curve.map((p) => p.bytes)), ...s.median.map((p) => p.bytes)])].sort((a, b) => a - b);
    const at = (pts) => {
      const m = new Map(pts.map((p) => [p.bytes, p.ns]));
      return xs.map((x) => (m.has(x) ? m.get(x) : null));
    };
    const px = rem();
    const font = `${Math.round(px * 0.8)}px system-ui, sans-serif`;
    const labelFont = `${Math.round(px * 0.85)}px system-ui, sans-serif`;
    const axis = { font, labelFont, labelSize: Math.round(px * 1.4), stroke: "#57606a", grid: { stroke: "#eaeef2" }, ticks: { stroke: "#d0d7de" } };
    const series = [
      { label: "working set" },
      ...curves.map((l, i) => ({
        label: l.name,
        stroke: `hsla(${(i * 137) % 360}, 70%, ${l.own ? 40 : 45}%, ${l.own ? 0.85 : 0.7})`,
        width: l.own ? 2 : 1.5,
        dash: l.own ? [6, 4] : undefined,
        spanGaps: true,
        points: { show: false },
      })),
      { label: "class median", stroke: "#1f2328", width: 3.5, spanGaps: true, points: { size: 6, fill: "#1f2328" } },
    ];
    const data = [xs, ...curves.map((l) => at(l.curve)), at(s.median)];
    const width = Math.max(360, el.clientWidth || 800);
    const height = Math.round(Math.min(520, Math.max(260, width * 0.42)));
    el.replaceChildren();
    el.dataset.curves = String(curves.length);
    el.dataset.own = String(curves.filter((c) => c.own).length);
    this.renderMachines(s);
    if (xs.length === 0) {
      el.append(h("div.note", "No latency curve yet: the curves appear as learners run a latency cell."));
      return;
    }
    this.plot = new uPlot(
      {
        width,
        height,
        padding: [null, padRight, null, null],
        legend: { show: false },
        scales: { x: { time: false, distr: 3, log: 2 }, y: { distr: 3, log: 10 } },
        axes: [
          { ...axis, size: Math.round(px * 2.2), label: "working set", values: thinLabels(fmtBytes) },
          { ...axis, size: Math.round(px * 4.5), label: "ns per load", values: thinLabels(fmtNs) },
        ],
        series,
      },
      data,
      el,
    );
    const own = curves.filter((c) => c.own).length;
    el.append(
      h(
        "div.curvelegend",
        h("span.swatch.median"),
        "class median",
        h("span.swatch.learner"),
        `server runs (${curves.length - own})`,
        h("span.swatch.own"),
        `own machines, dashed (${own})`,
      ),
    );
  }

  // renderMachines lists the learners' own machines: what the browser
  // tells of them and the plateaus of their curves, so the room sees how
  // different its laptops are.
  renderMachines(s) {
    const el = this.root.querySelector("#machines");
    const own = s.learners.filter((l) => l.own);
    if (!own.length) {
      el.replaceChildren(h("div.note", "No own-machine curve yet: learners who run the latency cell in their browser (run: in this browser) appear here, marked own machine."));
      return;
    }
    const levels = ["L1", "L2", "L3", "memory"];
    const cell = (m, name) => {
      const p = (m.plateaus || []).find((x) => x.name === name);
      return p ? `${fmtNs(p.ns)}${p.size_bytes ? " · " + fmtBytes(p.size_bytes) : ""}` : "–";
    };
    el.replaceChildren(
      h(
        "table.grid.machines",
        h("caption", `own machines (${own.length})`),
        h("thead", h("tr", ["learner", "cores", "browser", ...levels].map((c) => h("th", { scope: "col" }, c)))),
        h(
          "tbody",
          own.map((l) =>
            h(
              "tr",
              { "data-own": l.id },
              h("td", l.name),
              h("td.num", l.own.machine.cores ? String(l.own.machine.cores) : "–"),
              h("td", [l.own.machine.browser, l.own.machine.platform].filter(Boolean).join(" · ")),
              ...levels.map((n) => h("td.num", cell(l.own.machine, n))),
            ),
          ),
        ),
      ),
    );
  }

  renderPredictions(s) {
    const list = this.root.querySelector("#predlist");
    if (!s.predictions.length) {
      list.replaceChildren(h("div.note", "No prediction yet: the distribution appears as learners answer a prediction cell."));
      return;
    }
    list.replaceChildren(...s.predictions.map((p) => predictionView(p)));
  }

  renderSQL(s) {
    const cells = Object.keys(s.sql).sort();
    const pick = this.root.querySelector("#sqlpick");
    const table = this.root.querySelector("#sqltable");
    if (!cells.length) {
      pick.replaceChildren();
      table.replaceChildren(h("div.note", "No SQL cell run yet."));
      return;
    }
    if (!cells.includes(this.sqlCell)) this.sqlCell = cells[0];
    const sel = h(
      "select#sqlcell",
      { onchange: (e) => ((this.sqlCell = e.target.value), this.renderSQL(this.snap)) },
      cells.map((c) => h("option", { value: c, selected: c === this.sqlCell }, c)),
    );
    pick.replaceChildren(h("label", "cell ", sel));
    const rows = (s.sql[this.sqlCell] || []).slice().sort((a, b) => a.time_ns - b.time_ns);
    table.replaceChildren(
      h(
        "table.grid",
        h("thead", h("tr", ["learner", "time", "rows", "strategy", "counters (measured)", "modelled (cachesim)"].map((c) => h("th", c)))),
        h(
          "tbody",
          rows.map((r) =>
            h(
              "tr",
              h("td", r.learner),
              h("td.num", fmtNs(r.time_ns)),
              h("td.num", String(r.rows)),
              h("td.strategy", { title: (r.strategy || []).join("\n") }, (r.strategy || []).map(shortStrategy).join("; ")),
              h("td.figures", figures(r.counters)),
              h("td.figures", figures(r.modelled)),
            ),
          ),
        ),
      ),
    );
  }

  async push() {
    const lesson = this.lessonSel.value;
    const cell = this.cellIn.value.trim();
    try {
      await api("POST", "/api/class/push", { lesson, cell });
      flash(`sent to every learner: ${lesson || ""}${cell ? " · " + cell : ""}`);
    } catch (e) {
      flash(e.message, true);
    }
  }

  async lock(locked) {
    const cell = this.lockIn.value.trim();
    if (!cell) return flash("type the id of the cell to lock", true);
    try {
      await api("POST", "/api/class/lock", { cell, locked });
      flash(`${cell} ${locked ? "locked" : "unlocked"}`);
    } catch (e) {
      flash(e.message, true);
    }
  }

  async remove(l) {
    const ok = await ask({
      title: `Remove ${l.name} from the class?`,
      text: "Their cells stop and their link stops working; they would have to join again.",
      ok: "Remove",
      danger: true,
    });
    if (!ok) return;
    try {
      await api("DELETE", `/api/class/learners/${encodeURIComponent(l.id)}`);
    } catch (e) {
      flash(e.message, true);
    }
  }

  // runDemo runs a cell in the demo session: the outputs show here and,
  // through the class event stream, on every learner's page.
  runDemo() {
    const send = () => {
      const msg = {
        channel: "shell",
        header: { msg_id: crypto.randomUUID(), session: "class-view", msg_type: "execute_request", version: "cachebook-kernel/1", date: new Date().toISOString() },
        parent_header: {},
        metadata: {},
        content: { code: this.demoCode.value, kind: this.demoKind.value, cell_id: "demo" },
      };
      this.demo.send(JSON.stringify(msg));
    };
    if (this.demo && this.demo.readyState === WebSocket.OPEN) return send();
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/kernel?session=classdemo`);
    this.demo = ws;
    ws.onmessage = (e) => renderDemoFrame(this.demoOut, JSON.parse(e.data));
    ws.onopen = send;
  }
}

// shortStrategy keeps the strategy a plan line names, without the
// operator and the reasoning: "HASH_GROUP_BY strategy: naive: auto: …"
// reads "naive (auto)".
function shortStrategy(line) {
  const m = line.match(/strategy:\s*([\w-]+)(?::\s*(auto))?/);
  return m ? m[1] + (m[2] ? " (auto)" : "") : line.slice(0, 40);
}

// figures shows a few named numbers (counters, modelled counters).
function figures(list) {
  if (!list || !list.length) return "–";
  const value = (f) => (f.name === "task-clock" ? fmtNs(f.value) : Number.isInteger(f.value) ? f.value.toLocaleString("en-US") : f.value.toFixed(2));
  return list.map((f) => `${f.name} ${value(f)}`).join(", ");
}

// predictionView draws one prediction cell: a bar per choice (or per
// range of numeric guesses) with the count of guesses, the measured
// answer marked.
export function predictionView(p) {
  const box = h("div.classpred", { "data-pred": p.cell });
  box.append(h("div.question", p.question || p.cell, p.unit ? h("span.unit", ` (${p.unit})`) : null));
  // Every learner that ran the cell has an entry; those that committed a
  // guess count in the guess distribution, all in the measured one.
  const entries = p.guesses || [];
  const guesses = entries.filter((g) => g.guess != null || g.guess_choice);
  let bins;
  if (p.choices && p.choices.length) {
    bins = p.choices.map((c) => ({ label: c, n: guesses.filter((g) => g.guess_choice === c).length, measured: entries.filter((g) => g.measured_choice === c).length }));
  } else {
    // Numeric answers: eight bins on a log scale over the guesses and the
    // measurements (latencies and ratios spread over orders of magnitude).
    const vals = guesses.map((g) => g.guess).filter((v) => v != null && v > 0);
    const meas = entries.map((g) => g.measured).filter((v) => v != null && v > 0);
    const all = [...vals, ...meas];
    const lo = all.length ? Math.min(...all) : 1;
    const hi = all.length ? Math.max(...all) : 2;
    const nb = hi > lo ? 8 : 1;
    const edge = (i) => (hi > lo ? lo * Math.exp((Math.log(hi / lo) * i) / nb) : lo);
    const fmt = (x) => String(Number(x.toPrecision(2)));
    const inBin = (v, i) => v >= edge(i) && (i === nb - 1 ? v <= hi : v < edge(i + 1));
    bins = [];
    for (let i = 0; i < nb; i++) {
      bins.push({ label: nb === 1 ? fmt(lo) : `${fmt(edge(i))}–${fmt(edge(i + 1))}`, n: vals.filter((v) => inBin(v, i)).length, measured: meas.filter((v) => inBin(v, i)).length });
    }
  }
  const top = Math.max(1, ...bins.map((b) => Math.max(b.n, b.measured)));
  const bars = h("div.bars");
  for (const b of bins) {
    bars.append(
      h(
        "div.bin",
        { "data-label": b.label },
        h("div.count", String(b.n)),
        h("div.barpair", h("div.bar.guess", { style: `height:${(100 * b.n) / top}%`, title: `${b.n} guessed ${b.label}` }), h("div.bar.measured", { style: `height:${(100 * b.measured) / top}%`, title: `${b.measured} measured ${b.label}` })),
        h("div.binlabel", b.label),
      ),
    );
  }
  const measured = entries.map((g) => g.measured).filter((v) => v != null).sort((a, b) => a - b);
  const med = measured.length ? measured[Math.floor(measured.length / 2)] : null;
  const right = guesses.filter((g) => g.guess_choice && g.guess_choice === g.measured_choice).length;
  box.append(
    bars,
    h(
      "div.note",
      h("span.swatch.guess"),
      `${guesses.length} guess${guesses.length === 1 ? "" : "es"}`,
      h("span.swatch.measured"),
      "measured",
      med != null ? ` · median measured ${Number(med.toPrecision(3))}${p.unit ? " " + p.unit : ""}` : "",
      typeof p.article === "number" ? ` · the article: ${p.article}${p.unit ? " " + p.unit : ""}` : "",
      p.choices && p.choices.length ? ` · ${right} of ${guesses.length} guessed their own machine's answer` : "",
    ),
  );
  return box;
}

// renderDemoFrame shows what a demo frame carries: text, a measurement's
// chart, a result table's text.
function renderDemoFrame(out, m) {
  const t = m.header && m.header.msg_type;
  const c = m.content || {};
  if (t === "execute_input") {
    out.replaceChildren(h("div.note", `running ${c.kind}: ${c.code}`));
    return;
  }
  if (t === "stream") {
    out.append(h("pre.stream", c.text));
    return;
  }
  if (t === "error") {
    out.append(h("div.error", h("div.ename", c.ename), h("pre", c.evalue)));
    return;
  }
  if (t !== "execute_result" && t !== "display_data" && t !== "update_display_data") return;
  const d = c.data || {};
  const id = (c.transient && c.transient.display_id) || "";
  if (id.startsWith("progress")) return;
  let el = null;
  if (d[MIME_MEASUREMENT]) el = measurementChart(d[MIME_MEASUREMENT]);
  if (!el && d["text/plain"]) el = h("pre.demotext", d["text/plain"]);
  if (!el) return;
  const key = id || t;
  el.dataset.key = key;
  if (t === "execute_result") {
    // The result replaces the live displays of the measurement.
    for (const x of [...out.children]) if (x.dataset && (x.dataset.key || "").startsWith("measurement")) x.remove();
  }
  const old = [...out.children].find((x) => x.dataset && x.dataset.key === key);
  if (old) old.replaceWith(el);
  else out.append(el);
}

// ordinal is 1st, 2nd, 3rd, 4th….
function ordinal(n) {
  const s = n % 100 >= 11 && n % 100 <= 13 ? "th" : ["th", "st", "nd", "rd"][n % 10] || "th";
  return `${n}${s}`;
}

// machineLine describes an own machine in a few words.
function machineLine(m) {
  return [m.cores ? `${m.cores} cores` : "", m.browser, m.platform].filter(Boolean).join(", ");
}

function flash(msg, bad) {
  const el = h(`div.flash${bad ? ".bad" : ""}`, { role: "status" }, msg);
  document.body.append(el);
  setTimeout(() => el.remove(), 3000);
}

// ---------------------------------------------------------------- join

function joinPage(root) {
  const q = new URLSearchParams(location.search);
  const name = h("input#joinname", { placeholder: "your name", maxlength: 40, autofocus: true, "aria-label": "your name" });
  const code = h("input#joincode", { placeholder: "code", value: q.get("code") || "", size: 8, "aria-label": "join code" });
  const msg = h("div.note", { role: "status" });
  let timer = 0;
  const go = async () => {
    clearTimeout(timer);
    let r;
    try {
      r = await fetch("/api/class/join", {
        method: "POST",
        cache: "no-store",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ code: code.value, name: name.value }),
      });
    } catch (e) {
      msg.textContent = `the server did not answer: ${e.message}`;
      return;
    }
    if (r.ok) {
      location.href = "/";
      return;
    }
    const v = await r.json().catch(() => ({}));
    const wait = Number(r.headers.get("Retry-After")) || 0;
    msg.textContent = v.evalue || `join: ${r.status}`;
    // Many learners joining at once: try again by itself when told to.
    if (r.status === 429 && wait > 0 && /joining at once/.test(v.evalue || "")) {
      timer = setTimeout(go, wait * 1000 + Math.random() * 1000);
    }
  };
  root.replaceChildren(
    h(
      "main.join",
      h("h1", "Join the class"),
      h("p.intro", "Type your name (the teacher sees it on the class view) and the code on the projector."),
      h("div.joinform", name, code, h("button#joinbtn", { onclick: go }, "Join")),
      msg,
    ),
  );
  for (const el of [name, code]) el.addEventListener("keydown", (e) => e.key === "Enter" && go());
}

// ---------------------------------------------------------------- learner

async function learnerBar() {
  // Only a class server's page asks (it marks <body data-class>): other
  // pages would log a 404.
  if (!document.body.dataset.class) return;
  let me;
  try {
    const r = await fetch("/api/class/me", { cache: "no-store" });
    if (!r.ok) return; // not a class server, or the teacher's own notebook
    me = await r.json();
  } catch {
    return;
  }
  if (me.role !== "learner") return;
  const locks = h("span.locks");
  const demo = h("div.demoout");
  const panel = h(
    "div.learnerdemo.hidden",
    { role: "region", "aria-label": "the projector demo" },
    h("div.paneltitle", "on the projector", h("button.close", { type: "button", "aria-label": "close the projector demo", onclick: () => panel.classList.add("hidden") }, "×")),
    demo,
  );
  // Measure my laptop: cells run in this browser from now on, and a
  // latency curve measured here goes to the class view as own machine.
  const mine = h(
    "button#measuremine",
    {
      type: "button",
      title: "Run cells in this browser (WebAssembly): your latency curve goes to the class view as your own machine's",
      onclick: () => {
        const sel = document.querySelector("#runmode");
        if (!sel) return;
        sel.value = "wasm";
        sel.dispatchEvent(new Event("change"));
        flash("cells now run in this browser: run the latency cell to put your machine on the class view");
      },
    },
    "Measure my machine",
  );
  const bar = h("div.classbanner#classbanner", { role: "region", "aria-label": "class" }, h("strong", me.class), ` · you are ${me.name}`, locks, " ", mine);
  document.body.prepend(bar);
  document.body.append(panel);
  const showLocks = (l) => {
    locks.textContent = l && l.length ? ` · locked until the teacher says run: ${l.join(", ")}` : "";
    document.querySelectorAll("[data-class-locked]").forEach((el) => el.removeAttribute("data-class-locked"));
    for (const id of l || []) document.querySelectorAll(`.cell[data-cell="${CSS.escape(id)}"]`).forEach((el) => el.setAttribute("data-class-locked", ""));
  };
  const openPush = (p) => {
    if (!p) return;
    if (p.lesson) location.hash = `#/lesson/${encodeURIComponent(p.lesson)}`;
    if (p.cell) {
      setTimeout(() => {
        const el = document.querySelector(`.cell[data-cell="${CSS.escape(p.cell)}"]`);
        if (el) el.scrollIntoView({ behavior: "smooth", block: "center" });
      }, 800);
    }
  };
  showLocks(me.locks);
  const es = new EventSource("/api/class/me/events");
  es.onmessage = (e) => {
    const ev = JSON.parse(e.data);
    if (ev.type === "locks") showLocks(ev.data);
    else if (ev.type === "push") openPush(ev.data);
    else if (ev.type === "demo") {
      panel.classList.remove("hidden");
      renderDemoFrame(demo, ev.data);
    }
  };
  es.onerror = () => {
    // The stream ends for good when the teacher removed this learner: say
    // so once, and stop (the kernel tab stops reconnecting by itself).
    fetch("/api/class/me", { cache: "no-store" }).then((r) => {
      if (r.status === 401) {
        es.close();
        bar.classList.add("bad");
        bar.setAttribute("role", "alert");
        bar.textContent = "The teacher removed you from the class.";
      }
    });
  };
  // A latency curve this learner measured in their own browser goes to
  // the class view, marked own machine, with what the browser tells of
  // the machine and the plateaus the curve shows.
  window.addEventListener("cachebook:own-measurement", (ev) => {
    const d = ev.detail || {};
    const lat = d.measurement && d.measurement.latency;
    if (!lat || !lat.points || !lat.points.length) return;
    const body = {
      cell: d.cell || "",
      kind: "latency",
      curve: lat.points.map((p) => ({ bytes: p.bytes, ns: p.ns })),
      machine: {
        cores: navigator.hardwareConcurrency || 0,
        browser: browserName(),
        platform: (navigator.userAgentData && navigator.userAgentData.platform) || navigator.platform || "",
        memory_gib: navigator.deviceMemory || 0,
        plateaus: (lat.levels || []).map((l) => ({ name: l.name, ns: l.ns, size_bytes: l.size_bytes || 0 })),
      },
      ...(d.prediction ? { prediction: d.prediction } : {}),
    };
    fetch("/api/class/me/own", { method: "POST", cache: "no-store", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) })
      .then((r) => {
        if (r.ok) flash("your machine's curve is on the class view");
      })
      .catch(() => {});
  });
}

// browserName is the browser and its major version, from the user agent.
function browserName() {
  const ua = navigator.userAgent;
  for (const [re, name] of [
    [/Edg\/(\d+)/, "Edge"],
    [/Firefox\/(\d+)/, "Firefox"],
    [/Chrom(?:e|ium)\/(\d+)/, "Chrome"],
    [/Version\/(\d+).*Safari/, "Safari"],
  ]) {
    const m = ua.match(re);
    if (m) return `${name} ${m[1]}`;
  }
  return ua.slice(0, 40);
}

const page = document.body.dataset.page;
const root = document.getElementById("class");
if (page === "class") {
  const v = new ClassView(root);
  window.cachebookClass = v;
  v.start();
} else if (page === "join") {
  joinPage(root);
} else {
  learnerBar();
}
