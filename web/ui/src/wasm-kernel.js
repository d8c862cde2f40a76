// WasmKernel runs cells in this browser: cachebook.wasm in a Web Worker over
// a generated hits table. It has the same interface as ServerKernel:
// execute(cell, code, onEvent) -> Promise, interrupt(), and status events.

const DEFAULTS = { rows: 100000, order: "shuffled", seed: 1 };

export class WasmKernel {
  constructor(base, onStatus, opts = {}) {
    this.base = base; // URL prefix of dist/
    this.onStatus = onStatus;
    this.opts = { ...DEFAULTS, ...opts };
    this.kind = "wasm";
    this.worker = null;
    this.pending = new Map();
    this.seq = 0;
    this.state = "starting";
    this.info = null;
    this.terminations = 0; // workers killed because a query did not stop
  }

  status(connection, kernel, detail) {
    this.state = kernel;
    this.onStatus({ connection, kernel, detail, kind: "wasm" });
  }

  start() {
    if (this.worker) return this.readyP;
    this.status("loading", "starting", `loading WebAssembly and generating ${this.opts.rows.toLocaleString()} rows…`);
    const w = new Worker(this.base + "worker.js");
    this.worker = w;
    this.readyP = new Promise((resolve, reject) => {
      w.onmessage = (ev) => {
        const m = ev.data;
        if (m.type === "ready") {
          this.info = m;
          this.status("in browser", "idle", m.gen.message);
          resolve(m);
          return;
        }
        if (m.type === "fatal" || (m.type === "error" && m.id === undefined)) {
          this.status("failed", "dead", m.error);
          reject(new Error(m.error));
          for (const p of this.pending.values()) p.reject(new Error(m.error));
          this.pending.clear();
          return;
        }
        const p = this.pending.get(m.id);
        if (!p) return;
        if (m.type === "progress") p.onEvent({ kind: "progress", done: m.done, total: m.total });
        else if (m.type === "reply") {
          this.pending.delete(m.id);
          p.resolve(m.reply);
        } else if (m.type === "error") {
          this.pending.delete(m.id);
          p.reject(new Error(m.error));
        }
      };
      w.onerror = (e) => {
        const msg = e.message || "worker failed to start (is cachebook.wasm built? run make wasm)";
        this.status("failed", "dead", msg);
        reject(new Error(msg));
      };
    });
    w.postMessage({ op: "init", wasm: this.base + "cachebook.wasm", wasmExec: this.base + "wasm_exec.js", ...this.opts });
    return this.readyP;
  }

  // execute runs a sql cell, or a latency or bandwidth cell (the probes
  // compiled into the wasm); other kinds run only on the server.
  async execute(cellId, code, onEvent, kind = "sql", attrs = {}) {
    if (kind !== "sql") return this.measure(code, onEvent, kind, attrs);
    await this.start();
    const id = ++this.seq;
    this.status("in browser", "busy");
    onEvent({ kind: "start" });
    const t0 = performance.now();
    try {
      const reply = await new Promise((resolve, reject) => {
        this.pending.set(id, { resolve, reject, onEvent });
        this.worker.postMessage({ op: "exec", id, sql: code });
      });
      const bundle = { statements: reply.statements, timings: reply.timings, where: "wasm" };
      if (reply.statements.length > 0 || !reply.error) onEvent({ kind: "result", bundle });
      if (reply.error) onEvent({ kind: "error", ...reply.error });
      onEvent({ kind: "done", status: reply.error ? "error" : "ok", timings: reply.timings, where: "wasm" });
    } catch (e) {
      const ns = (performance.now() - t0) * 1e6;
      onEvent({ kind: "error", ename: this.killed ? "Interrupted" : "ExecutionError", evalue: e.message });
      onEvent({ kind: "done", status: "error", timings: { run_ns: ns, total_ns: ns }, where: "wasm" });
    } finally {
      this.killed = false;
      if (this.worker) this.status("in browser", "idle");
    }
  }

  async measure(code, onEvent, kind, attrs) {
    await this.start();
    const id = ++this.seq;
    this.status("in browser", "busy");
    onEvent({ kind: "start" });
    try {
      const reply = await new Promise((resolve, reject) => {
        this.pending.set(id, { resolve, reject, onEvent });
        this.worker.postMessage({ op: "measure", id, kind, source: code, attrs });
      });
      if (reply.error) onEvent({ kind: "error", ...reply.error });
      else onEvent({ kind: "measurement", data: { kind, [kind]: reply[kind] } });
      onEvent({ kind: "done", status: reply.error ? "error" : "ok", timings: reply.timings, where: "wasm" });
    } catch (e) {
      onEvent({ kind: "error", ename: this.killed ? "Interrupted" : "ExecutionError", evalue: e.message });
      onEvent({ kind: "done", status: "error", where: "wasm" });
    } finally {
      this.killed = false;
      if (this.worker) this.status("in browser", "idle");
    }
  }

  interrupt() {
    if (!this.worker || this.pending.size === 0) return;
    this.worker.postMessage({ op: "cancel" });
    const ids = [...this.pending.keys()];
    // Last resort: a query that never yields keeps the worker deaf, so
    // terminate it and start a fresh one.
    setTimeout(() => {
      if (!ids.some((id) => this.pending.has(id))) return;
      this.killed = true;
      this.terminations++;
      this.terminate("the query did not stop within 5 s: worker terminated");
      this.start().catch(() => {});
    }, 5000);
  }

  terminate(reason) {
    if (!this.worker) return;
    this.worker.terminate();
    this.worker = null;
    for (const p of this.pending.values()) p.reject(new Error(reason));
    this.pending.clear();
    this.status("stopped", "dead", reason);
  }

  close() {
    this.terminate("closed");
  }
}
