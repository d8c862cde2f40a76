// A notebook cell: a CodeMirror editor (SQL or markdown source), a status
// line with a ticking timer and progress, and the outputs of its last run.
import { EditorView, keymap, lineNumbers, highlightActiveLine, drawSelection } from "@codemirror/view";
import { EditorState, Compartment } from "@codemirror/state";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { sql, StandardSQL } from "@codemirror/lang-sql";
import { syntaxHighlighting, defaultHighlightStyle, bracketMatching } from "@codemirror/language";
import { setDiagnostics, lintGutter } from "@codemirror/lint";
import { marked } from "marked";
import { h, fmtNs, fmtCount, fmtWait } from "./util.js";
import { setHTML } from "./sanitize.js";
import { renderStatement, renderError, renderStream, renderCounters } from "./output.js";
import { measurementChart, runsChart } from "./charts.js";
import { cellKinds } from "./server-kernel.js";
import { PredictionPanel, renderPrediction, PREDICTION_MIME } from "./predict.js";

let nextId = 1;

// Edited prose renders as the server renders it (goldmark's safe mode):
// raw HTML is left out, so what an edit shows is what a reload shows. The
// result still goes through the sanitiser.
marked.use({ renderer: { html: () => "<!-- raw HTML omitted -->" } });

// MIME are the data types of kernel outputs (docs/protocol.md §3).
const MIME = {
  result: "application/vnd.cachebook.result+json",
  measurement: "application/vnd.cachebook.measurement+json",
  counters: "application/vnd.cachebook.counters+json",
  model: "application/vnd.cachebook.model+json",
  prediction: PREDICTION_MIME,
};

// The SQL dialect: DuckDB-like names the engine knows, for completion and
// highlighting.
const dialect = sql({ dialect: StandardSQL, upperCaseKeywords: true, schema: { hits: [] } });

export class Cell {
  // data: {id, cell_type, kind, source, html, attrs}; nb: the Notebook.
  constructor(nb, data) {
    this.nb = nb;
    this.id = data.id || `c${Date.now().toString(36)}${nextId++}`;
    this.type = data.cell_type === "markdown" ? "markdown" : "code";
    this.kind = this.type === "code" ? data.kind || "sql" : "";
    this.attrs = { ...(data.attrs || {}) };
    this.meta = data.meta;
    this.skipped = !!data.skipped;
    this.stored = data.outputs || [];
    this.html = typeof data.html === "string" ? data.html : null;
    this.source = data.source || "";
    this.serverSource = this.source;
    this.runs = [];
    this.running = false;
    // Cells are in the tab order (keyboard use): a focused cell is the
    // selected one, its buttons show, Enter edits it, Ctrl+Enter runs it.
    this.el = h("div.cell." + this.type, {
      "data-cell": this.id,
      "data-kind": this.type === "code" ? this.kind : null,
      tabindex: "0",
      role: "group",
      "aria-label": this.type === "code" ? `${this.kind === "sql" ? "SQL" : this.kind} cell` : "text cell",
    });
    this.el.addEventListener("mousedown", () => this.nb.select(this, false));
    this.el.addEventListener("focusin", (ev) => {
      if (this.nb.selected !== this && !this.editorEl.contains(ev.target)) this.nb.select(this, false);
    });
    this.build();
  }

  build() {
    const bar = h(
      "div.cellbar",
      this.type === "code"
        ? h(
            "select.kind",
            {
              title: "Cell kind: SQL or a measurement (the kinds the kernel reports)",
              "aria-label": "Cell kind",
              onchange: (ev) => this.setKind(ev.target.value),
              onfocus: (ev) => ev.target.replaceChildren(...this.kindOptions()),
            },
            this.kindOptions(),
          )
        : h("span.prompt", "md"),
      h("span.attrs", { title: "cell attributes" }),
      this.type === "code"
        ? h(
            "label.ctoggle" + (this.kind === "sql" ? "" : ".hidden"),
            { title: "Collect perf counters for this cell (counters=on; the cell then runs alone on the machine)" },
            h("input", {
              type: "checkbox",
              checked: this.attrs.counters === "on" || this.attrs.counters === "both" ? "" : null,
              // Unticking drops the measured counters but keeps the model.
              onchange: (ev) => this.setAttr("counters", ev.target.checked ? (this.attrs.counters === "model" ? "both" : "on") : this.attrs.counters === "both" ? "model" : null),
            }),
            " counters",
          )
        : null,
      this.type === "code" ? h("button.run", { title: "Run (Ctrl+Enter)", onclick: () => this.nb.run(this) }, "▶ Run") : null,
      this.type === "code" ? h("button.stop", { title: "Interrupt (I,I)", "aria-label": "Interrupt", onclick: () => this.nb.interrupt() }, "■") : null,
      h("span.timer"),
      h("span.progress", h("span.bar")),
      h("span.spacer"),
      h("button", { title: "Move up", "aria-label": "Move cell up", onclick: () => this.nb.move(this, -1) }, "↑"),
      h("button", { title: "Move down", "aria-label": "Move cell down", onclick: () => this.nb.move(this, 1) }, "↓"),
      h("button", { title: "Add SQL cell below (B)", onclick: () => this.nb.add(this, "code") }, "+ SQL"),
      h("button", { title: "Add text cell below", onclick: () => this.nb.add(this, "markdown") }, "+ Text"),
      h("button.del", { title: "Delete cell (D,D)", "aria-label": "Delete cell", onclick: () => this.nb.remove(this) }, "✕"),
    );
    this.timerEl = bar.querySelector(".timer");
    this.attrsEl = bar.querySelector(".attrs");
    this.showPrompt();
    this.progressEl = bar.querySelector(".progress");
    this.editorEl = h("div.editor");
    this.proseEl = h("div.prose");
    this.outEl = h("div.outputs");
    // A cell with a prediction asks for the learner's guess before the
    // code (predict.js).
    this.predict = this.type === "code" ? new PredictionPanel(this) : null;
    this.el.append(bar, this.proseEl, ...(this.predict ? [this.predict.el] : []), this.editorEl, this.outEl);
    this.langConf = new Compartment();
    this.view = new EditorView({
      parent: this.editorEl,
      state: EditorState.create({
        doc: this.source,
        extensions: [
          keymap.of([
            { key: "Shift-Enter", run: () => (this.nb.runAndAdvance(this), true) },
            { key: "Mod-Enter", run: () => (this.nb.run(this), true) },
            { key: "Escape", run: () => (this.nb.commandMode(this), true) },
          ]),
          this.type === "code" ? lineNumbers() : [],
          history(),
          drawSelection(),
          highlightActiveLine(),
          bracketMatching(),
          syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
          this.langConf.of(this.type === "code" && this.kind === "sql" ? dialect : []),
          this.type === "code" ? lintGutter() : [],
          // No Tab binding: Tab moves the focus on (keyboard use); Ctrl+] and
          // Ctrl+[ indent and outdent.
          keymap.of([...defaultKeymap, ...historyKeymap]),
          EditorView.lineWrapping,
          EditorView.contentAttributes.of({ "aria-label": this.type === "code" ? "cell source (Escape leaves the editor)" : "text cell source" }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) {
              this.source = u.state.doc.toString();
              this.nb.dirty(true);
              if (this.diagnostics) {
                this.view.dispatch(setDiagnostics(this.view.state, []));
                this.diagnostics = false;
              }
            }
            if (u.focusChanged && u.view.hasFocus) this.nb.select(this, true);
          }),
        ],
      }),
    });
    if (this.type === "markdown") {
      this.renderProse();
      this.proseEl.addEventListener("dblclick", () => this.editProse());
    }
    this.renderStored();
    this.veil();
  }

  showPrompt() {
    this.attrsEl.textContent = Object.entries(this.attrs)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ");
  }

  // kindOptions lists the kinds the kernel reported (kernel_info) and
  // this cell's own.
  kindOptions() {
    return [...new Set([...cellKinds(), this.kind])].map((k) => h("option", { value: k, selected: k === this.kind ? "" : null }, k));
  }

  // setKind changes a code cell's kind (sql, latency, bandwidth, sweep,
  // experiment); measurement cells take key=value parameters as source.
  setKind(kind) {
    this.kind = kind;
    this.el.dataset.kind = kind;
    this.view.dispatch({ effects: this.langConf.reconfigure(kind === "sql" ? dialect : []) });
    const toggle = this.el.querySelector(".ctoggle");
    if (toggle) toggle.classList.toggle("hidden", kind !== "sql");
    this.nb.dirty(true);
  }

  // setAttr sets (or, with null, removes) a cell attribute.
  setAttr(key, value) {
    if (value === null) delete this.attrs[key];
    else this.attrs[key] = value;
    this.showPrompt();
    this.nb.dirty(true);
  }

  // renderStored shows the outputs saved with the notebook (notebook.Output
  // objects: {type, name, text, html, data}) as if the cell had just run,
  // and keeps them as the outputs a save writes back.
  renderStored() {
    this.outputs = [];
    for (const o of this.stored) {
      const d = o.data || {};
      if (o.type === "stream") this.onEvent({ kind: "stream", name: o.name, text: o.text || "" });
      else if (o.type === "error") this.onEvent({ kind: "error", ename: o.name, evalue: o.text || "" });
      else if (d[MIME.prediction]) this.onEvent({ kind: "prediction", data: d[MIME.prediction], text: o.text });
      else if (d[MIME.result]) this.onEvent({ kind: "result", bundle: d[MIME.result], text: o.text, model: d[MIME.model] });
      else if (d[MIME.measurement]) this.onEvent({ kind: "measurement", data: d[MIME.measurement], text: o.text });
      else if (d[MIME.counters]) this.onEvent({ kind: "counters", data: d[MIME.counters] });
      else if (o.html) {
        const box = h("div.htmlout", { html: o.html }); // sanitised by h
        this.outEl.append(box);
        this.outputs.push({ ...o });
      } else if (o.text) this.onEvent({ kind: "stream", name: "stdout", text: o.text });
    }
    if (this.type === "code" && this.kind === "sql" && this.counters) this.showCounters(true);
    if (this.stored.length) this.timerEl.textContent = "saved output";
  }

  // isReference reports whether the stored outputs are a lesson's
  // reference run (their first output is its label, see output.js).
  isReference() {
    const o = this.stored[0];
    return !!o && o.type === "stream" && String(o.text || "").startsWith("reference run on ");
  }

  // veil hides a reference run that would give a prediction's answer away
  // (its numbers, chart and prediction panel) until the learner commits a
  // guess or chooses to skip it; a run of the learner's own is not hidden.
  veil() {
    const spec = this.meta && this.meta.predict;
    if (!spec || this.guessed() || !this.isReference()) return;
    this.outEl.classList.add("hidden");
    this.veilEl = h(
      "div.veil",
      h("span", "The reference run's result is hidden until you commit a guess, so that it cannot answer the question for you."),
      h("button.skip", { title: "Show the reference run without guessing", onclick: () => this.skipGuess() }, "Skip the guess"),
    );
    this.outEl.before(this.veilEl);
  }

  // guessed reports whether the learner committed a guess or skipped it.
  guessed() {
    return !!(this.meta && this.meta.guess) || !!this.skipped;
  }

  // reveal shows what veil hid.
  reveal() {
    if (this.veilEl) {
      this.veilEl.remove();
      this.veilEl = null;
      this.outEl.classList.remove("hidden");
    }
    // The prose down to the next prediction, whose expectation it may hold.
    const cells = this.nb.cells;
    for (let i = cells.indexOf(this) + 1; i < cells.length; i++) {
      const c = cells[i];
      if (c.type === "code" && c.meta && c.meta.predict) break;
      if (c.type === "markdown" && !c.el.classList.contains("editing")) c.renderProse();
    }
  }

  // skipGuess shows the reference run without a guess; in a lesson the
  // choice is remembered like a guess (see Notebook.keepGuess).
  skipGuess() {
    this.skipped = true;
    this.nb.keepGuess(this, { skipped: true, at: new Date().toISOString() });
    this.reveal();
  }

  // record keeps an output of the current run for saving (notebook.Output
  // form); a stream continues the previous one of the same name, a
  // measurement or counters replace the earlier (live) one.
  record(o) {
    const last = this.outputs[this.outputs.length - 1];
    if (o.type === "stream" && last && last.type === "stream" && last.name === o.name) {
      last.text += o.text;
      return;
    }
    const key = o.data && Object.keys(o.data)[0];
    if (key === MIME.measurement || key === MIME.counters) {
      const i = this.outputs.findIndex((x) => x.data && x.data[key]);
      if (i >= 0) {
        this.outputs[i] = o;
        return;
      }
    }
    this.outputs.push(o);
  }

  // renderProse shows the markdown cell as HTML: the server's goldmark
  // rendering when the source is unchanged (even when that rendering is
  // empty), else a client-side rendering; either way through the
  // sanitiser.
  renderProse() {
    const html = this.html !== null && this.source === this.serverSource ? this.html : marked.parse(this.source);
    setHTML(this.proseEl, html);
    this.el.classList.remove("editing");
    this.veilExpectation();
  }

  // expectationOf returns the prediction whose answer this prose may
  // give in a paragraph opening with "What to expect." (the lessons'
  // convention): the nearest prediction above it, unless prose between
  // them holds such a paragraph already.
  expectationOf() {
    const cells = this.nb.cells;
    for (let i = cells.indexOf(this) - 1; i >= 0; i--) {
      const c = cells[i];
      if (c.type === "code" && c.meta && c.meta.predict) return c;
      if (c.type === "markdown" && /^\*\*What to expect/m.test(c.source)) return null;
    }
    return null;
  }

  // veilExpectation hides the first "What to expect." paragraph of this
  // prose while the prediction it answers (expectationOf) is not guessed
  // or skipped. The prediction's reveal renders the prose again, whole.
  veilExpectation() {
    const pred = this.expectationOf();
    if (!pred || pred.guessed()) return;
    for (const p of this.proseEl.querySelectorAll("p")) {
      const s = p.firstElementChild;
      if (!s || p.firstChild !== s || s.tagName !== "STRONG" || !s.textContent.startsWith("What to expect")) continue;
      if (p.classList.contains("hidden")) return;
      p.classList.add("hidden");
      p.before(h("p.veil.expect", "What to expect is hidden until you commit a guess above (or skip it), so that it cannot answer the question for you."));
      return;
    }
  }

  editProse() {
    this.el.classList.add("editing");
    this.view.focus();
  }

  focus() {
    if (this.type === "markdown" && !this.el.classList.contains("editing")) {
      this.editProse();
      return;
    }
    this.view.focus();
  }

  toJSON() {
    const c = { id: this.id, cell_type: this.type, source: this.source };
    if (this.type === "code") {
      c.kind = this.kind;
      if (Object.keys(this.attrs).length) c.attrs = this.attrs;
    }
    if (this.meta) c.meta = this.meta;
    if (this.type === "code" && this.outputs && this.outputs.length) c.outputs = this.outputs;
    return c;
  }

  // start resets the outputs for a new run and starts the ticking timer.
  start() {
    this.reveal();
    this.running = true;
    this.outputs = [];
    this.outEl.replaceChildren();
    this.errorPos = null;
    this.measured = null;
    this.predicted = null;
    this.counters = null;
    this.el.classList.add("running");
    this.el.classList.remove("queued");
    this.queuedAt = undefined;
    this.t0 = performance.now();
    this.setProgress(0, 0);
    clearInterval(this.tick);
    this.tick = setInterval(() => this.showTimer(), 100);
    this.showTimer();
  }

  showTimer() {
    if (this.running && this.queuedAt !== undefined) {
      this.timerEl.classList.remove("live");
      const wait = this.queuedWaitNs ? ` · about ${fmtWait(this.queuedWaitNs - (performance.now() - this.queuedSince) * 1e6)}` : "";
      if (this.queuedFor === "hits") this.timerEl.textContent = `waiting for the hits table (position ${this.queuedAt})`;
      else this.timerEl.textContent = this.queuedShared
        ? `waiting for a classmate's run of this same measurement${wait}`
        : `queued (position ${this.queuedAt})${wait}`;
      return;
    }
    const live = this.running ? fmtNs((performance.now() - this.t0) * 1e6) : "";
    this.timerEl.classList.toggle("live", !!live);
    const last = this.lastNs !== undefined ? `last run ${fmtNs(this.lastNs)}${this.lastWhere ? " (" + this.lastWhere + ")" : ""}` : "";
    this.timerEl.textContent = [live, last].filter(Boolean).join(" · ");
  }

  setProgress(done, total, unitName) {
    const bar = this.progressEl.querySelector(".bar");
    if (!total) {
      this.progressEl.classList.remove("on");
      this.progressEl.title = "";
      return;
    }
    this.progressEl.classList.add("on");
    bar.style.width = `${Math.min(100, (100 * done) / total).toFixed(1)}%`;
    // What the kernel counts depends on the cell: rows of a query, the
    // working-set sizes of a latency curve, the points of a sweep.
    const unit = unitName || { sql: "rows", latency: "sizes", sweep: "points", bandwidth: "runs" }[this.kind] || "steps";
    this.progressEl.title = `${fmtCount(done)} of ${fmtCount(total)} ${unit}`;
    this.progressEl.dataset.label = `${fmtCount(done)} / ${fmtCount(total)} ${unit}`;
  }

  // sharedNote labels a measurement the server shared from another run of
  // the same cell (classroom mode): when it was taken, and a button to
  // measure again.
  sharedNote(sh) {
    const at = new Date(sh.at);
    const ago = Math.max(0, (Date.now() - at.getTime()) * 1e6);
    return h(
      "div.sharednote",
      h("span", `Shared measurement of the server, taken at ${at.toLocaleTimeString()} (${fmtWait(ago)} ago) by a run of this same cell; it ran ${fmtWait(sh.run_ns)}.`),
      h("button.again", { type: "button", onclick: () => this.nb.run(this, { again: "1" }) }, "Measure again"),
    );
  }

  // onEvent applies one kernel event (see server-kernel.js) to the cell.
  onEvent(e) {
    switch (e.kind) {
      case "queued":
        // Waiting for the machine: no timer runs until the cell starts.
        this.queuedAt = e.position ?? "?";
        this.queuedShared = !!e.shared;
        this.queuedWaitNs = e.wait_ns || 0;
        this.queuedSince = performance.now();
        this.queuedFor = e.waiting;
        this.el.classList.add("queued");
        this.showTimer();
        break;
      case "start":
        if (!this.running) this.start();
        else if (this.queuedAt !== undefined) {
          this.queuedAt = undefined;
          this.el.classList.remove("queued");
          this.t0 = performance.now();
          this.showTimer();
        }
        break;
      case "progress":
        this.setProgress(e.done, e.total, e.unit);
        break;
      case "stream":
        this.outEl.append(renderStream(e.name, e.text));
        this.record({ type: "stream", name: e.name || "stdout", text: e.text || "" });
        break;
      case "counters":
        this.counters = e.data;
        this.showCounters(false);
        this.record({ type: "display", data: { [MIME.counters]: e.data } });
        break;
      case "result":
        this.record({ type: "result", ...(e.text ? { text: e.text } : {}), data: { [MIME.result]: e.bundle, ...(e.model ? { [MIME.model]: e.model } : {}) } });
        this.bundle = e.bundle;
        for (const st of e.bundle.statements || []) this.outEl.append(renderStatement(st));
        if (e.bundle.counters) this.counters = e.bundle.counters;
        // counters=model: the modelled counters (engine/cachesim), whose
        // text labels every figure as modelled and gives the geometry.
        if (e.model && e.model.text) this.outEl.append(renderStream("stdout", e.model.text));
        break;
      case "measurement": {
        this.measured = e.data;
        this.record({ type: "result", ...(e.text ? { text: e.text } : {}), data: { [MIME.measurement]: e.data } });
        const chart = measurementChart(e.data);
        const old = this.outEl.querySelector(".chart.measurement");
        if (chart) {
          chart.classList.add("measurement");
          if (old) old.replaceWith(chart);
          else this.outEl.append(chart);
        } else if (e.text) this.outEl.append(renderStream("stdout", e.text));
        if (e.data.shared) this.outEl.prepend(this.sharedNote(e.data.shared));
        break;
      }
      case "prediction":
        this.predicted = e.data;
        this.record({ type: "display", ...(e.text ? { text: e.text } : {}), data: { [MIME.prediction]: e.data } });
        this.outEl.append(renderPrediction(e.data));
        break;
      case "error":
        this.record({ type: "error", name: e.ename || "Error", text: e.evalue || (e.traceback || []).join("\n") });
        this.outEl.append(renderError(e));
        if (e.position && e.position.line) this.markError(e.position, e.evalue);
        break;
      case "done":
        this.finish(e);
        break;
    }
  }

  finish(e) {
    this.running = false;
    this.queuedAt = undefined;
    clearInterval(this.tick);
    this.el.classList.remove("running", "queued");
    this.setProgress(0, 0);
    const ns = e.timings ? e.timings.run_ns || e.timings.total_ns : undefined;
    if (ns !== undefined && e.status !== "aborted") {
      this.lastNs = ns;
      this.lastWhere = e.where === "wasm" ? "WebAssembly" : "server";
      if (this.type === "code" && this.kind === "sql" && e.status === "ok") {
        this.runs.push({ ns, label: `${strategyOf(this.bundle, this.source)} · ${this.lastWhere}` });
        if (this.runs.length > 6) this.runs.shift();
      }
    }
    // A latency curve measured in this browser, on a class server: the
    // class bar (class.js) sends it to the class view as "own machine".
    if (e.where === "wasm" && e.status === "ok" && this.kind === "latency" && this.measured && !this.measured.live) {
      window.dispatchEvent(new CustomEvent("cachebook:own-measurement", { detail: { cell: this.id, measurement: this.measured, prediction: this.predicted } }));
    }
    if (e.status === "aborted") this.timerEl.textContent = "aborted (not run)";
    else this.showTimer();
    const ia = this.nb.interruptAt;
    if (ia && ia > this.t0 && e.status !== "ok") {
      this.stoppedMs = performance.now() - ia;
      this.timerEl.textContent += ` · stopped ${fmtNs(this.stoppedMs * 1e6)} after the interrupt`;
    }
    if (this.type === "code" && this.kind === "sql" && (e.status === "ok" || this.counters)) {
      this.showCounters(true, e.where);
      if (this.runs.length > 1) this.outEl.append(runsChart(this.runs));
    }
  }

  showCounters(final, where) {
    const old = this.outEl.querySelector(".counters");
    const panel = renderCounters(this.counters, where);
    if (old) old.replaceWith(panel);
    else this.outEl.append(panel);
  }

  // markError puts a diagnostic on the editor at line:col (1-based, col in
  // runes) and moves the cursor there.
  markError(pos, message) {
    const doc = this.view.state.doc;
    if (pos.line < 1 || pos.line > doc.lines) return;
    const line = doc.line(pos.line);
    let from = line.from;
    let col = 1;
    for (const ch of line.text) {
      if (col >= pos.col) break;
      from += ch.length;
      col++;
    }
    const rest = line.text.slice(from - line.from);
    const word = rest.match(/^[\w"']+/);
    const to = Math.min(line.to, from + (word ? word[0].length : 1));
    this.view.dispatch(
      setDiagnostics(this.view.state, [{ from, to: Math.max(to, from + (from < line.to ? 1 : 0)), severity: "error", message: message || "error" }]),
    );
    this.view.dispatch({ selection: { anchor: from } });
    this.diagnostics = true;
    this.errorPos = pos;
  }
}

// strategyOf guesses the GROUP BY strategy of a run for the comparison
// chart: from the plan's detail, else from a SET in the cell.
function strategyOf(bundle, source) {
  const sts = (bundle && bundle.statements) || [];
  for (const st of sts) {
    const stack = st.plan ? [st.plan] : [];
    while (stack.length) {
      const n = stack.pop();
      for (const d of n.detail || []) {
        const m = d.match(/strategy:\s*(\w+)/);
        if (m) return m[1];
      }
      stack.push(...(n.children || []));
    }
  }
  const m = source.match(/group_by\s*=\s*'?(\w+)/i);
  return m ? m[1] : "run";
}
