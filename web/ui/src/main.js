// cachebook notebook UI: lesson list, notebook view, kernel status and the
// choice between running cells on the server or in this browser
// (WebAssembly). Bundled by build.mjs into web/static/dist/app.js.
import "uplot/dist/uPlot.min.css";
import "./style.css";
import { h } from "./util.js";
import { ServerKernel } from "./server-kernel.js";
import { WasmKernel } from "./wasm-kernel.js";
import { Notebook } from "./notebook.js";
import { toIpynb } from "./ipynb.js";
import { ask } from "./dialog.js";
import { StaticBackend } from "./static-backend.js";

const DIST = new URL("./", import.meta.url).href; // dist/ with worker.js and cachebook.wasm

// STATIC: the page was written by `cachebook site`: no server behind it,
// lessons are files, notebooks live in this browser, cells run in its
// WebAssembly kernel.
const STATIC = !!document.querySelector('meta[name="cachebook-static"]');

// dropToken takes the token out of the address bar and the history once
// the page is loaded: the server has set the token cookie with the page,
// and the cookie is what the websocket and the API use from then on.
function dropToken() {
  const q = new URLSearchParams(location.search);
  if (!q.has("token")) return;
  q.delete("token");
  const rest = q.toString();
  history.replaceState(history.state, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
}

// wasmOpts are the browser kernel's options from the page URL: ?hits_rows=N
// generates N rows of hits instead of the size the kernel picks,
// ?hits_slice=N a first slice of N rows (0: none), ?hits_parts=N the
// table in N parts (N workers; 0 or absent: one per core).
function wasmOpts() {
  const q = new URLSearchParams(location.search);
  const o = {};
  const rows = Number(q.get("hits_rows"));
  if (Number.isInteger(rows) && rows > 0) o.rows = rows;
  const slice = Number(q.get("hits_slice"));
  if (q.has("hits_slice") && Number.isInteger(slice) && slice >= 0) o.slice = slice;
  const parts = Number(q.get("hits_parts"));
  if (Number.isInteger(parts) && parts > 0) o.parts = parts;
  return o;
}

const fmtRows = (n) => Number(n || 0).toLocaleString("en-US");

// wasmWhere names the browser kernel in the status line with the state of
// its hits table.
function wasmWhere(hits) {
  if (!hits) return "browser (wasm)";
  switch (hits.state) {
    case "full":
      return `browser (wasm) · hits ${fmtRows(hits.rows)} rows`;
    case "slice":
      return `browser (wasm) · hits slice ${fmtRows(hits.rows)} rows, full table ${hits.total ? Math.floor((100 * hits.done) / hits.total) : 0}%`;
    case "loading":
      return `browser (wasm) · hits ${hits.total ? Math.floor((100 * hits.done) / hits.total) : 0}%`;
    case "failed":
      return "browser (wasm) · no hits table";
  }
  return "browser (wasm)";
}

// fmtLeft says how long is left, roughly.
function fmtLeft(s) {
  if (s == null || !isFinite(s)) return "estimating time left…";
  return s < 60 ? `about ${Math.max(1, Math.round(s))} s left` : `about ${Math.round(s / 60)} min left`;
}

// fitSave keeps a save request under the server's frame limit
// (kernel_info limits.max_message_bytes, less room for the envelope): the
// JSON forms (tables, charts) of the largest outputs are left out, their
// text and errors kept, until it fits. It returns the document and how
// many cells lost outputs.
function fitSave(doc, info) {
  const max = ((info && info.limits && info.limits.max_message_bytes) || 4 << 20) - (64 << 10);
  const enc = new TextEncoder();
  const size = (v) => enc.encode(JSON.stringify(v)).length;
  if (size(doc) <= max) return { doc, dropped: 0 };
  const cells = doc.cells.map((c) => ({ ...c }));
  const order = cells
    .map((c, i) => ({ i, n: c.outputs ? size(c.outputs) : 0 }))
    .filter((x) => x.n > 0)
    .sort((a, b) => b.n - a.n);
  let total = size(doc);
  let dropped = 0;
  for (const { i, n } of order) {
    if (total <= max) break;
    cells[i].outputs = cells[i].outputs.map(({ data, ...rest }) => rest).filter((o) => o.text || o.html || o.type === "error");
    total -= n - size(cells[i].outputs);
    dropped++;
  }
  return { doc: { ...doc, cells }, dropped };
}

class App {
  constructor(root) {
    this.root = root;
    dropToken();
    this.server = STATIC ? new StaticBackend(new URL("./", location.href).href) : new ServerKernel((s) => this.onStatus(s));
    this.wasm = null;
    this.kernel = this.server;
    this.nb = null;
    this.buildShell();
    this.server.connect();
    if (STATIC) {
      document.body.classList.add("static");
      this.modeSel.querySelector('option[value="server"]').remove();
      this.setMode("wasm");
    }
    window.addEventListener("hashchange", () => this.route());
    // Unsaved edits: the browser asks before the tab closes or reloads.
    window.addEventListener("beforeunload", (ev) => {
      if (this.nb && this.nb.isDirty) {
        ev.preventDefault();
        ev.returnValue = "";
      }
    });
    document.addEventListener("keydown", (ev) => this.onKey(ev));
    if (localStorage.getItem("cachebook.large") === "1") document.body.classList.add("large");
    this.route();
  }

  buildShell() {
    this.statusEl = h("span.status", { title: "connection · kernel" }, h("span.dot"), h("span.text", "connecting…"));
    this.modeSel = h(
      "select#runmode",
      { title: "Where this notebook's cells run", onchange: () => this.setMode(this.modeSel.value) },
      h("option", { value: "server" }, "on the server"),
      h("option", { value: "wasm" }, "in this browser (WebAssembly)"),
    );
    this.dirtyEl = h("span.dirty");
    this.titleEl = h("span.title");
    this.toolbar = h(
      "div.toolbar",
      h("label", "run ", this.modeSel),
      h("button#runall", { title: "Run every cell in order", onclick: () => this.nb && this.nb.runAll() }, "▶▶ Run all"),
      h("button#interrupt", { title: "Interrupt (I,I in command mode)", onclick: () => this.nb && this.nb.interrupt() }, "■ Interrupt"),
      h("button#save", { title: "Save (Ctrl+S)", onclick: () => this.save() }, "Save"),
      h("button#export", { title: "Download as Jupyter .ipynb", onclick: () => this.exportIpynb() }, "Export .ipynb"),
      h("button#exportmd", { title: "Download as cachebook Markdown (.md)", onclick: () => this.exportIpynb("md") }, "Download .md"),
    );
    this.banner = h("div.banner.hidden");
    // The hits table's load in this browser: rows, %, time left, and the
    // cells waiting for it.
    this.hitsBar = h(
      "div.hitsbar.hidden#hitsbar",
      { role: "status" },
      h("progress", { max: 1, value: 0 }),
      h("span.hitstext"),
    );
    this.fileInput = h("input#openfile", {
      type: "file",
      accept: ".md,.ipynb,.markdown",
      style: "display:none",
      onchange: () => this.openFile(this.fileInput.files[0]),
    });
    const header = h(
      "header",
      h("a.brand", { href: "#/" }, "cachebook"),
      this.titleEl,
      this.dirtyEl,
      h("span.spacer"),
      this.statusEl,
      h("button#large", { title: "Large font for projectors", onclick: () => this.toggleLarge() }, "Aa"),
    );
    this.main = h("main");
    this.root.replaceChildren(header, this.toolbar, this.banner, this.hitsBar, this.fileInput, this.main);
  }

  toggleLarge() {
    const on = document.body.classList.toggle("large");
    localStorage.setItem("cachebook.large", on ? "1" : "0");
  }

  onStatus(s) {
    if (s.kind === "wasm") this.showHits(s);
    // The pill names the runtime that will run the next cell: the other
    // one's news does not reach it.
    if ((s.kind === "wasm") !== (this.kernel.kind === "wasm")) return;
    const dot = this.statusEl.querySelector(".dot");
    const text = this.statusEl.querySelector(".text");
    dot.className = "dot " + (s.connection === "connected" || s.connection === "in browser" ? s.kernel : "off");
    const where = s.kind === "wasm" ? wasmWhere(s.hits) : `server · ${s.connection}`;
    text.textContent = `${where} · ${s.kernel}${s.held ? ` · ${s.held} waiting for hits` : ""}`;
    this.statusEl.dataset.runtime = s.kind;
    this.statusEl.dataset.kernel = s.kernel;
    this.statusEl.dataset.connection = s.connection;
    this.statusEl.title = s.detail || "";
    if (s.kind === "wasm" && s.detail) this.showBanner(s.detail);
    if (s.kind === "server") {
      if (s.connection === "token refused" || s.connection === "too many tabs") this.showServerBanner(s.detail);
      else if (s.connection === "connected") this.showServerBanner(null);
      if (s.detail === "the server restarted") this.flash("the server restarted: cells that were running are lost", true);
    }
  }

  // showHits shows the hits table's load: a progress bar with rows, per
  // cent and time left, and how many cells wait for the table.
  showHits(s) {
    const k = s.hits;
    const on = this.kernel.kind === "wasm" && k && (k.state === "loading" || k.state === "slice" || k.state === "failed");
    this.hitsBar.classList.toggle("hidden", !on);
    this.hitsBar.dataset.state = k ? k.state : "";
    if (!on) return;
    const bar = this.hitsBar.querySelector("progress");
    const pct = k.total ? (100 * k.done) / k.total : 0;
    bar.max = k.total || 1;
    bar.value = k.done || 0;
    const waiting = s.held ? ` · ${s.held} cell${s.held === 1 ? "" : "s"} waiting for it` : "";
    let text;
    if (k.state === "failed") text = `The hits table could not be made in this browser: ${k.error}`;
    else if (!k.done)
      text = `Preparing the hits table in this browser (${fmtRows(k.total)} rows): cells that do not read hits run now${waiting}`;
    else {
      text = `Generating hits in this browser: ${fmtRows(k.done)} of ${fmtRows(k.total)} rows · ${pct.toFixed(0)}% · ${fmtLeft(k.eta)}${waiting}`;
      if (k.state === "slice") text += ` · a first slice of ${fmtRows(k.rows)} rows is ready: cells without a prediction run on it`;
    }
    this.hitsBar.querySelector(".hitstext").textContent = text;
  }

  // showServerBanner shows (or, with null, hides) what the server kernel
  // needs the reader to do, e.g. open the new URL after a restart.
  showServerBanner(text) {
    if (!this.serverBanner) {
      this.serverBanner = h("div.banner.bad#serverbanner");
      this.banner.after(this.serverBanner);
    }
    this.serverBanner.classList.toggle("hidden", !text);
    this.serverBanner.replaceChildren(text ? h("b", text) : "");
  }

  showBanner(extra) {
    if (this.kernel.kind !== "wasm") {
      this.banner.classList.add("hidden");
      return;
    }
    this.banner.classList.remove("hidden");
    this.banner.replaceChildren(
      h("b", "Running in this browser. "),
      "Go WebAssembly is single-threaded (no parallel GROUP BY); perf counters are server-only; browser timers are coarse (",
      crossOriginIsolated ? "5 µs" : "100 µs",
      " steps), so short timings are rounded. The hits table here is generated in the browser, as large as the memory it plans for allows. ",
      ...(extra ? [h("span.detail", extra)] : []),
    );
  }

  modeKey() {
    return "cachebook.mode." + (this.nb ? this.nb.source.lesson || this.nb.source.path : "");
  }

  setMode(mode) {
    if (STATIC) mode = "wasm";
    if (this.nb) localStorage.setItem(this.modeKey(), mode);
    if (mode === "wasm") {
      if (!this.wasm) this.wasm = new WasmKernel(DIST, (s) => this.onStatus(s), wasmOpts());
      this.kernel = this.wasm;
      this.wasm.start().catch((e) => this.showBanner("WebAssembly failed: " + e.message));
    } else {
      this.kernel = this.server;
      this.server.status();
    }
    this.modeSel.value = mode;
    this.showBanner();
    if (this.wasm) this.wasm.status();
  }

  showDirty(v) {
    this.dirtyEl.textContent = v ? "● unsaved" : "";
  }

  async route() {
    const hash = decodeURIComponent(location.hash.replace(/^#\/?/, ""));
    if (this.nb && this.nb.isDirty && hash !== this.shownHash) {
      if (!confirm("This notebook has unsaved edits. Leave it and lose them?")) {
        history.replaceState(null, "", this.shownRaw || "#/");
        return;
      }
      this.nb.dirty(false);
    }
    this.shownHash = hash;
    this.shownRaw = location.hash;
    try {
      if (hash.startsWith("lesson/")) await this.openLesson(hash.slice(7));
      else if (hash.startsWith("nb/")) await this.openNotebook(hash.slice(3));
      else await this.showLessons();
    } catch (e) {
      this.main.replaceChildren(h("div.error", h("div.ename", "Could not load"), h("pre", e.message)));
    }
  }

  async showLessons() {
    this.nb = null;
    this.titleEl.textContent = "";
    this.toolbar.classList.add("hidden");
    this.banner.classList.add("hidden");
    this.main.replaceChildren(h("div.loading", "loading lessons…"));
    const [lessons, notebooks] = await Promise.all([
      this.server.lessons(),
      this.server.notebooks().catch(() => ({ notebooks: [] })),
    ]);
    const list = h(
      "ol.lessons",
      (lessons.lessons || []).map((l) =>
        h("li", h("a", { href: `#/lesson/${encodeURIComponent(l.id)}` }, h("span.ltitle", l.title || l.id)), l.summary ? h("div.summary", l.summary) : null),
      ),
    );
    const mine = (notebooks.notebooks || []).map((n) => h("li", h("a", { href: `#/nb/${encodeURIComponent(n.path)}` }, n.title || n.path), h("span.meta", ` ${n.path}`)));
    this.main.replaceChildren(
      h(
        "div.home",
        h("h1", "Lessons"),
        h("p.intro", "Why a CPU at 100% is mostly waiting on memory: run real GROUP BY queries and watch the cache hierarchy."),
        list,
        h("h2", "Your notebooks"),
        h(
          "p",
          h("button#newnb", { title: STATIC ? "Create an empty notebook in this browser" : "Create an empty notebook in the notebooks folder", onclick: () => this.newNotebook() }, "+ New notebook"),
          " ",
          h("button#open", { title: "Open a cachebook .md or Jupyter .ipynb notebook from this computer", onclick: () => this.fileInput.click() }, "Open .md / .ipynb…"),
        ),
        STATIC ? h("p.meta", "Notebooks are saved in this browser; download them with Export .ipynb or Download .md.") : null,
        mine.length ? h("ul.notebooks", mine) : null,
      ),
    );
  }

  // newNotebook creates a blank notebook (a title and one empty SQL cell)
  // under a path the reader picks, refusing to overwrite one that exists,
  // and opens it.
  async newNotebook(path) {
    path = path || (await ask({ title: "New notebook", input: { label: "Path under the notebooks folder, ending in .md", value: "untitled.md" }, ok: "Create" }));
    if (!path) return;
    if (!path.endsWith(".md")) path += ".md";
    try {
      const exists = await this.server.openNotebook(path).then(
        () => true,
        (e) => (/NotFound/.test(e.message) ? false : Promise.reject(e)),
      );
      if (exists) throw new Error(`${path} already exists`);
      const title = path.split("/").pop().replace(/\.md$/, "");
      await this.server.saveNotebook(path, {
        path,
        title,
        metadata: {},
        cells: [
          { cell_type: "markdown", source: `# ${title}` },
          { cell_type: "code", kind: "sql", source: "" },
        ],
      });
      location.hash = `#/nb/${encodeURIComponent(path)}`;
    } catch (e) {
      this.flash(`could not create ${path}: ${e.message}`, true);
    }
  }

  async openLesson(id) {
    const r = await this.server.openLesson(id);
    this.show(r.notebook, { lesson: id });
  }

  async openNotebook(path) {
    const r = await this.server.openNotebook(path);
    this.show(r.notebook, { path });
  }

  show(nb, source) {
    // Isolated notebooks: nothing SET in the one shown before carries over.
    this.server.resetSession();
    if (this.wasm && this.wasm.worker) this.wasm.resetSession();
    this.nb = new Notebook(this, nb, source);
    this.titleEl.textContent = this.nb.title;
    this.toolbar.classList.remove("hidden");
    this.main.replaceChildren(this.nb.el);
    this.showDirty(false);
    this.setMode(localStorage.getItem(this.modeKey()) || "server");
  }

  // openFile opens a .md or .ipynb from this computer: the kernel's own
  // parser reads it (web/wasm convert) and its prose goes through the
  // page's one sanitiser like any other. It opens unsaved; Save asks
  // where to keep it.
  async openFile(file) {
    this.fileInput.value = "";
    if (!file) return;
    try {
      if (!this.wasm) this.wasm = new WasmKernel(DIST, (s) => this.onStatus(s), wasmOpts());
      const text = await file.text();
      const doc = JSON.parse(await this.wasm.convert("open", file.name, text));
      history.pushState(null, "", "#/opened");
      this.shownHash = "opened";
      this.shownRaw = location.hash;
      this.show(doc, { imported: file.name });
      this.nb.dirty(true);
    } catch (e) {
      this.flash(`could not open ${file.name}: ${e.message}`, true);
    }
  }

  async save() {
    if (!this.nb) return;
    let path = this.nb.source.path;
    if (!path) {
      const stem = this.nb.source.lesson || (this.nb.source.imported || "notebook").replace(/\.(ipynb|md|markdown)$/i, "");
      const where = STATIC ? "in this browser" : "under the notebooks folder";
      path = await ask({
        title: this.nb.source.lesson ? "Save a copy" : "Save as",
        text: this.nb.source.lesson ? `Lessons are read-only: your edits and outputs go to a copy ${where}.` : `The notebook is saved ${where}.`,
        input: { label: `Path ${where}`, value: `mine/${stem}.md` },
        ok: this.nb.source.lesson ? "Save copy" : "Save",
      });
      if (!path) return;
    }
    try {
      const { doc, dropped } = fitSave({ ...this.nb.toJSON(), path }, this.server.info);
      const r = await this.server.saveNotebook(path, doc);
      if (dropped) this.flash(`${dropped} cell${dropped === 1 ? "'s" : "s'"} outputs were too large to save: their tables and charts were left out`, true);
      this.nb.source = { path: r.path || path };
      this.nb.path = r.path || path;
      this.nb.dirty(false);
      history.replaceState(null, "", `#/nb/${encodeURIComponent(this.nb.path)}`);
      this.shownHash = "nb/" + this.nb.path;
      this.shownRaw = location.hash;
      this.flash(`saved ${this.nb.path}`);
    } catch (e) {
      this.flash(`save failed: ${e.message}`, true);
    }
  }

  // exportIpynb downloads the notebook as format (ipynb or md): the
  // server converts it (POST /api/export); on a static site, or without
  // that endpoint, the kernel's WebAssembly build does, and for .ipynb
  // the page's own conversion is the last resort.
  async exportIpynb(format = "ipynb") {
    if (!this.nb) return;
    const nb = this.nb.toJSON();
    const type = format === "md" ? "text/markdown" : "application/x-ipynb+json";
    let blob = null;
    if (!STATIC) {
      try {
        const r = await fetch(`/api/export?format=${format}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(nb) });
        if (r.ok) blob = await r.blob();
      } catch {
        // Fall back to the conversions below.
      }
    }
    if (!blob) {
      try {
        if (!this.wasm) this.wasm = new WasmKernel(DIST, (s) => this.onStatus(s), wasmOpts());
        blob = new Blob([await this.wasm.convert(format, "", JSON.stringify(nb))], { type });
      } catch (e) {
        if (format === "md") {
          this.flash(`download failed: ${e.message}`, true);
          return;
        }
        blob = new Blob([JSON.stringify(toIpynb(nb), null, 1)], { type });
      }
    }
    const stem = (this.nb.path || this.nb.source.lesson || this.nb.source.imported || "notebook").split("/").pop().replace(/\.(md|ipynb|markdown)$/i, "");
    const name = `${stem}.${format}`;
    const a = h("a", { href: URL.createObjectURL(blob), download: name });
    document.body.append(a);
    a.click();
    a.remove();
  }

  flash(text, bad) {
    const el = h("div.flash" + (bad ? ".bad" : ""), text);
    document.body.append(el);
    setTimeout(() => el.remove(), 2500);
  }

  onKey(ev) {
    if ((ev.ctrlKey || ev.metaKey) && ev.key === "s") {
      ev.preventDefault();
      this.save();
      return;
    }
    const t = ev.target;
    if (t && (t.isContentEditable || /^(INPUT|SELECT|TEXTAREA)$/.test(t.tagName)) && !t.classList.contains("cell")) return;
    if (this.nb) this.nb.onKey(ev);
  }
}

window.cachebookApp = new App(document.getElementById("app"));
