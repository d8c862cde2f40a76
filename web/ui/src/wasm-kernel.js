// WasmKernel runs cells in this browser: the kernel compiled to WebAssembly
// (web/wasm) in a Web Worker. It is the same kernel as the server's and
// speaks the same frames; only the transport differs (postMessage instead
// of a websocket), so the cell events come from KernelClient's one mapping.
//
// The kernel starts at once, without the hits table: cells that do not
// read hits run while it loads. The table comes from this browser's
// storage (OPFS) when an earlier visit kept it, else from generator
// workers beside the kernel's — a small first slice, so that the first
// cells over hits run within seconds, and the whole table, kept for the
// next visit. Cells that need hits wait, in order, in a visible queue;
// interrupting cancels those cells, never the load.
import { KernelClient } from "./server-kernel.js";

// rows 0: the kernel sizes the hits table from the memory it plans for
// (web/wasm DefaultRows); a page URL with ?hits_rows=N asks for N.
// slice: the rows of the first slice (0: none). parts: the workers that
// generate the whole table (0: one per core, at most MAX_PARTS).
const DEFAULTS = { rows: 0, order: "shuffled", seed: 1, slice: 250_000, parts: 0 };

// The whole table is generated in parts of whole row groups of
// ROW_GROUP_ROWS rows (engine/gen's default), at most MAX_PARTS: each
// worker also shuffles the whole table's rows (a fixed cost), and holds
// its part until all are done.
const ROW_GROUP_ROWS = 1 << 20;
const MAX_PARTS = 4;

// hitsParts is the number of parts a table of rows rows is generated in
// on cores cores: as gen.Parts counts them, no more than its row groups.
export function hitsParts(rows, cores) {
  return Math.max(1, Math.min(cores, MAX_PARTS, Math.ceil(rows / ROW_GROUP_ROWS)));
}

// After an interrupt, a cell that has not ended within this long is
// stopped by terminating the worker (a loop that never yields keeps it
// deaf); the kernel's own grace period is documented in kernel.Limits.
const TERMINATE_AFTER_MS = 5000;

// The stored last cache level is measured again after this long, like the
// native kernel's (kernel/sizing MeasuredMaxAge).
const LAST_LEVEL_KEY = "cachebook.lastLevel";
const LAST_LEVEL_MAX_AGE_MS = 7 * 24 * 3600 * 1000;

// HITS_VERSION names the generator's output in the storage key: change it
// when engine/gen changes what a seed generates.
const HITS_VERSION = "v1";

// storedLastLevel returns the last cache level an earlier probe in this
// browser measured, or 0 when none is stored or it is older than a week.
export function storedLastLevel(now = Date.now()) {
  try {
    const v = JSON.parse(localStorage.getItem(LAST_LEVEL_KEY) || "null");
    if (v && v.bytes > 0 && now - v.at >= 0 && now - v.at <= LAST_LEVEL_MAX_AGE_MS && v.ua === navigator.userAgent) return v.bytes;
  } catch {
    // unreadable: probe again
  }
  return 0;
}

function storeLastLevel(bytes) {
  try {
    localStorage.setItem(LAST_LEVEL_KEY, JSON.stringify({ bytes, at: Date.now(), ua: navigator.userAgent }));
  } catch {
    // storage full or refused: the next visit probes again
  }
}

// needsHits says whether a cell reads the hits table: SQL that names it,
// and the experiments that query it (kernel/experiment).
export function needsHits(kind, code) {
  if (kind === "sql") return /\bhits\b/i.test(code || "");
  if (kind === "experiment") return /^\s*(substring|sum-rewrite)\b/.test(code || "");
  return false;
}

// MEASURES are the cell kinds whose figures are timings of this machine
// (and so is any cell with a prediction).
const MEASURES = new Set(["latency", "bandwidth", "sweep", "experiment"]);

// partsETA estimates the seconds left until every part is generated, the
// parts running side by side: the longest of each part's rows left at its
// own rate (rows per second since its first report), a part that has not
// reported yet counted as starting now at the mean rate of the others
// (rows/parts rows). null until some part has run half a second.
export function partsETA(first, last, partRows, meanRows) {
  const rates = [];
  for (let k = 0; k < first.length; k++) {
    if (!first[k] || !last[k]) continue;
    const s = (last[k].now - first[k].now) / 1000;
    if (s > 0.5 && last[k].done > first[k].done) rates[k] = (last[k].done - first[k].done) / s;
  }
  const known = rates.filter((r) => r > 0);
  if (!known.length) return null;
  const mean = known.reduce((a, b) => a + b, 0) / known.length;
  let eta = 0;
  for (let k = 0; k < first.length; k++) {
    const left = (partRows[k] || meanRows) - ((last[k] && last[k].done) || 0);
    eta = Math.max(eta, left / (rates[k] || mean));
  }
  return eta;
}

export class WasmKernel extends KernelClient {
  constructor(base, onStatus, opts = {}) {
    super(onStatus, "wasm");
    this.base = base; // URL prefix of dist/
    this.opts = { ...DEFAULTS, ...opts };
    this.worker = null;
    this.pending = []; // frames to send once the kernel runs
    this.ready = false;
    this.terminations = 0; // workers killed because a cell did not stop
    this.held = []; // cells waiting for hits: {args, need, resolve}
    this.gens = []; // generator workers
    // hits: the table's state for the page: state "none" | "loading" |
    // "slice" | "full" | "failed"; done/total rows of the generation
    // under way; rows of the table registered; eta in seconds.
    this.hits = { state: "none", done: 0, total: 0, rows: 0, eta: null, t0: 0 };
    this.timing = {}; // ms after start(): ready, first (slice), full
    this.converts = new Map(); // convert requests by id
  }

  // convert has the kernel's Go code read or write a notebook file (see
  // web/wasm convert): what "open" turns the text of file name (.md or
  // .ipynb) into the page's notebook JSON; "md" or "ipynb" turns the
  // page's notebook JSON (text) into that file's text.
  async convert(what, name, text) {
    await this.start({ hits: false });
    const id = Math.random().toString(36).slice(2);
    return new Promise((resolve, reject) => {
      this.converts.set(id, { resolve, reject });
      this.worker.postMessage({ op: "convert", id, what, name, text });
    });
  }

  // status reports the kernel's state with the hits table's and the
  // number of cells waiting for it.
  status(detail) {
    this.onStatus({ connection: this.connection, kernel: this.state, detail, kind: this.kind, hits: this.hits, held: this.held.length });
  }

  // module compiles cachebook.wasm once for the kernel and the generators.
  module() {
    if (!this.moduleP) {
      const url = this.base + "cachebook.wasm";
      this.moduleP = WebAssembly.compileStreaming(fetch(url)).catch(async () => {
        const r = await fetch(url);
        if (r.status === 404) throw new Error("this site was built without cachebook.wasm (run make wasm before building the binary)");
        if (!r.ok) throw new Error(`fetch ${url}: HTTP ${r.status}`);
        return WebAssembly.compile(await r.arrayBuffer());
      });
    }
    return this.moduleP;
  }

  // start starts the kernel's worker and, unless hits is false (a page
  // that only converts a notebook file), the hits table's load.
  start({ hits = true } = {}) {
    if (hits && !this.wantHits) {
      this.wantHits = true;
      if (this.ready) this.loadHits(this.info.gen.default_rows);
    }
    if (this.worker) return this.readyP;
    this.connection = "loading";
    this.state = "starting";
    this.t0 = performance.now();
    this.status("loading WebAssembly…");
    const w = new Worker(this.base + "worker.js");
    this.worker = w;
    this.ready = false;
    this.readyP = new Promise((resolve, reject) => {
      w.onmessage = (ev) => {
        const m = ev.data;
        switch (m.type) {
          case "frame":
            this.handle(JSON.parse(m.frame));
            return;
          case "probe":
            storeLastLevel(m.bytes);
            return;
          case "ready":
            this.info = m; // {go, loadMs, gen, ms}; kernel_info adds to it
            this.ready = true;
            this.timing.ready = performance.now() - this.t0;
            this.connection = "in browser";
            for (const f of this.pending.splice(0)) w.postMessage({ op: "frame", frame: f });
            this.kernelInfo().catch(() => {});
            this.status();
            if (this.wantHits) this.loadHits(m.gen.default_rows);
            resolve(m);
            return;
          case "hits":
            this.onHits(m);
            return;
          case "converted": {
            const c = this.converts.get(m.id);
            this.converts.delete(m.id);
            if (c) m.error ? c.reject(new Error(m.error)) : c.resolve(m.text);
            return;
          }
          case "miss":
            this.generate();
            return;
          case "fatal":
            if (m.op === "hits" || m.op === "cached") {
              this.hitsFailed(m.error);
              return;
            }
            this.connection = "failed";
            this.state = "dead";
            this.status(m.error);
            this.fail("KernelError", m.error);
            reject(new Error(m.error));
        }
      };
      w.onerror = (e) => {
        const msg = e.message || "worker failed to start (is cachebook.wasm built? run make wasm)";
        this.connection = "failed";
        this.state = "dead";
        this.status(msg);
        this.fail("KernelError", msg);
        reject(new Error(msg));
      };
    });
    this.lastLevel = storedLastLevel(); // what the kernel uses instead of probing (0: it probes)
    const init = { op: "init", wasmExec: this.base + "wasm_exec.js", ...this.opts, deferHits: true, lastLevel: this.lastLevel };
    this.module().then(
      (module) => w.postMessage({ ...init, module }),
      () => w.postMessage({ ...init, wasm: this.base + "cachebook.wasm" }),
    );
    return this.readyP;
  }

  // loadHits asks the kernel's worker for the table an earlier visit kept;
  // on a miss the worker answers "miss" and generate() runs.
  loadHits(defaultRows) {
    this.rows = this.opts.rows || defaultRows;
    this.key = `hits-${HITS_VERSION}-${this.rows}-${this.opts.order}-${this.opts.seed}`;
    if (this.gens.length) {
      // A restarted kernel: the generators under way hand it the table.
      this.hits = { ...this.hits, state: "loading" };
      this.status();
      return;
    }
    // A restarted kernel lost the table it had with its worker.
    this.hits = { ...this.hits, state: "loading", done: 0, total: this.rows, t0: performance.now(), eta: null };
    this.status();
    this.worker.postMessage({ op: "cached", key: this.key });
  }

  // generate starts the generator workers: the first slice on one, and
  // the whole table in parts (whole row groups, gen.Parts) on as many
  // others as this machine has cores for (at most MAX_PARTS), which the
  // kernel's worker joins into one file without copying them; the whole
  // table's progress is shown.
  generate() {
    for (const g of this.gens) g.terminate();
    this.gens = [];
    this.genToken = {}; // this generation's: a new one, or none, stops what is left of it
    const slice = this.opts.slice > 0 && this.opts.slice < this.rows ? this.opts.slice : 0;
    this.timing.genStart = performance.now() - this.t0;
    const run = (opts, onDone, onProgress) => {
      const g = new Worker(this.base + "worker.js");
      this.gens.push(g);
      g.onmessage = (ev) => {
        const m = ev.data;
        if (m.type === "progress") onProgress && onProgress(m);
        else if (m.type === "generated") {
          g.terminate();
          this.gens = this.gens.filter((x) => x !== g);
          onDone(m);
        } else if (m.type === "fatal") {
          g.terminate();
          this.gens = this.gens.filter((x) => x !== g);
          this.hitsFailed(m.error);
        }
      };
      g.onerror = (e) => this.hitsFailed(e.message || "the generator worker failed");
      const msg = { op: "generate", wasmExec: this.base + "wasm_exec.js", order: this.opts.order, seed: this.opts.seed, ...opts };
      this.module().then(
        (module) => g.postMessage({ ...msg, module }),
        () => g.postMessage({ ...msg, wasm: this.base + "cachebook.wasm" }),
      );
    };
    const parts = hitsParts(this.rows, this.opts.parts || navigator.hardwareConcurrency || 1);
    // With a slice, the last part starts once the slice is done: the
    // slice has a core to itself, for the first cells, where there are
    // no more cores than workers.
    let startLast = null;
    if (slice) {
      run({ rows: slice }, (m) => {
        if (startLast) startLast();
        if (this.hits.state !== "loading" || !this.worker) return; // the whole table came first
        this.worker.postMessage({ op: "hits", bytes: m.bytes, info: m.info, slice: true }, [m.bytes]);
      });
    }
    const got = new Array(parts).fill(null); // each part's {bytes, info}
    const done = new Array(parts).fill(0); // rows generated, by part
    const first = new Array(parts).fill(null); // each part's first progress report: its rate counts from it
    const last = new Array(parts).fill(null); // and its latest
    const partRows = new Array(parts).fill(0); // each part's rows, from its reports
    const startPart = (part) =>
      run(
        parts > 1 ? { rows: this.rows, part, parts } : { rows: this.rows },
        (m) => {
          got[part] = m;
          if (got.some((x) => !x) || !this.worker) return;
          const bytes = got.map((x) => x.bytes);
          this.worker.postMessage({ op: "hits", parts: bytes, infos: got.map((x) => x.info), key: this.key }, bytes);
        },
        (p) => {
          const now = performance.now();
          done[part] = p.done;
          partRows[part] = p.total;
          first[part] = first[part] || { now, done: p.done };
          last[part] = { now, done: p.done };
          const all = done.reduce((a, b) => a + b, 0);
          this.hits = { ...this.hits, done: all, total: this.rows, eta: partsETA(first, last, partRows, this.rows / parts) };
          this.status();
        },
      );
    for (let part = 0; part < parts - 1; part++) startPart(part);
    if (slice && parts > 1) {
      const token = this.genToken;
      startLast = () => {
        // Not when the generators were replaced or stopped since.
        if (this.genToken === token) startPart(parts - 1);
      };
    } else startPart(parts - 1);
  }

  onHits(m) {
    const rows = m.info.rows || 0;
    const now = performance.now() - this.t0;
    if (m.slice) {
      if (this.hits.state !== "loading") return;
      this.hits = { ...this.hits, state: "slice", rows };
      this.timing.first = now;
      this.timing.sliceGenMs = m.info.gen_ns / 1e6;
    } else {
      this.hits = { ...this.hits, state: "full", rows, done: rows, total: rows, eta: null, cached: !!m.cached };
      this.timing.first = this.timing.first || now;
      this.timing.full = now;
      if (!m.cached) this.timing.fullGenMs = m.info.gen_ns / 1e6;
      this.info = { ...this.info, gen: { ...this.info.gen, ...m.info } };
    }
    this.status();
    this.flush();
  }

  hitsFailed(error) {
    for (const g of this.gens) g.terminate();
    this.gens = [];
    this.genToken = null;
    this.hits = { ...this.hits, state: "failed", error };
    this.status("the hits table could not be made: " + error);
    for (const c of this.held.splice(0)) this.endHeld(c, "KernelError", "the hits table could not be made in this browser: " + error);
  }

  // hitsReady says whether a cell that needs the table can run: a cell
  // with a prediction is graded against the whole table, others may run
  // on the first slice.
  hitsReady(need) {
    if (!need) return true;
    if (need === "full") return this.hits.state === "full";
    return this.hits.state === "full" || this.hits.state === "slice";
  }

  // execute holds a cell that needs hits (and every cell after it, to keep
  // the order of SET and the like) until the table is there.
  execute(cellId, code, onEvent, kind = "sql", attrs = {}, extra = {}) {
    if (!this.worker) this.start().catch(() => {});
    const need = needsHits(kind, code) ? (extra && extra.predict ? "full" : "any") : null;
    if (!this.held.length && this.hitsReady(need)) return this.run(cellId, code, onEvent, kind, attrs, extra, need);
    return new Promise((resolve) => {
      this.held.push({ args: [cellId, code, onEvent, kind, attrs, extra], need, resolve });
      this.announce();
      this.status();
    });
  }

  // run sends a cell to the kernel; one that ran on the first slice says
  // so, and so does a measurement taken while a generator worker kept
  // another core (and the memory) busy.
  run(cellId, code, onEvent, kind, attrs, extra, need) {
    const slice = need && this.hits.state === "slice";
    const rows = this.hits.rows;
    const busy = (MEASURES.has(kind) || !!(extra && extra.predict)) && this.gens.length > 0;
    const wrapped = (e) => {
      if (busy && e.kind === "done" && cellId) {
        onEvent({
          kind: "stream",
          name: "stderr",
          text: "measured while this browser was generating the hits table in another worker, which shares the caches and memory: run it again once the table is ready for a quieter measurement\n",
        });
      }
      if (slice && e.kind === "done") {
        onEvent({
          kind: "stream",
          name: "stderr",
          text: `ran on a first slice of hits, ${rows.toLocaleString("en-US")} of ${this.rows.toLocaleString("en-US")} rows, while the whole table is generated in this browser: run it again once it is for the lesson's figures\n`,
        });
      }
      onEvent(e);
    };
    return super.execute(cellId, code, wrapped, kind, attrs, extra);
  }

  // announce tells each held cell its place in the queue.
  announce() {
    this.held.forEach((c, i) => c.args[2]({ kind: "queued", position: i + 1, waiting: "hits" }));
  }

  // flush runs the held cells whose table is there, in order.
  flush() {
    while (this.held.length && this.hitsReady(this.held[0].need)) {
      const c = this.held.shift();
      this.run(...c.args, c.need).then(c.resolve);
    }
    this.announce();
    this.status();
  }

  endHeld(c, ename, evalue) {
    const onEvent = c.args[2];
    onEvent({ kind: "error", ename, evalue });
    const done = { kind: "done", status: "error", where: this.where };
    onEvent(done);
    c.resolve(done);
  }

  transmit(frame) {
    if (!this.worker) this.start().catch(() => {});
    if (this.ready) this.worker.postMessage({ op: "frame", frame });
    else this.pending.push(frame);
  }

  // interrupt cancels the cells waiting for hits (the table keeps
  // loading) and interrupts the one the kernel runs.
  interrupt() {
    for (const c of this.held.splice(0)) this.endHeld(c, "Interrupted", "interrupted while it waited for the hits table; the table keeps loading");
    this.status();
    if (!this.worker) return Promise.resolve();
    const running = [...this.cells.keys()];
    if (!running.length) return Promise.resolve();
    setTimeout(() => {
      if (!running.some((id) => this.cells.has(id))) return;
      this.terminations++;
      this.terminate(`the cell did not stop within ${TERMINATE_AFTER_MS / 1000} s of the interrupt: the WebAssembly worker was terminated and restarts`);
      this.start().catch(() => {});
    }, TERMINATE_AFTER_MS);
    return super.interrupt();
  }

  terminate(reason) {
    if (!this.worker) return;
    this.worker.terminate();
    this.worker = null;
    this.ready = false;
    this.pending = [];
    this.fail("Interrupted", reason);
    this.connection = "stopped";
    this.state = "dead";
    this.status(reason);
  }

  close() {
    for (const g of this.gens) g.terminate();
    this.gens = [];
    this.genToken = null;
    this.terminate("closed");
  }
}
