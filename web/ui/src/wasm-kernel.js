// WasmKernel runs cells in this browser: the kernel compiled to WebAssembly
// (web/wasm) in a Web Worker, over a generated hits table. It is the same
// kernel as the server's and speaks the same frames; only the transport
// differs (postMessage instead of a websocket), so the cell events come
// from KernelClient's one mapping.
import { KernelClient } from "./server-kernel.js";

// rows 0: the kernel sizes the hits table from the memory it plans for
// (web/wasm DefaultRows); a page URL with ?hits_rows=N asks for N.
const DEFAULTS = { rows: 0, order: "shuffled", seed: 1 };

// After an interrupt, a cell that has not ended within this long is
// stopped by terminating the worker (a loop that never yields keeps it
// deaf); the kernel's own grace period is documented in kernel.Limits.
const TERMINATE_AFTER_MS = 5000;

export class WasmKernel extends KernelClient {
  constructor(base, onStatus, opts = {}) {
    super(onStatus, "wasm");
    this.base = base; // URL prefix of dist/
    this.opts = { ...DEFAULTS, ...opts };
    this.worker = null;
    this.pending = []; // frames to send once the kernel runs
    this.ready = false;
    this.terminations = 0; // workers killed because a cell did not stop
  }

  start() {
    if (this.worker) return this.readyP;
    this.connection = "loading";
    this.state = "starting";
    this.status(
      this.opts.rows
        ? `loading WebAssembly and generating ${this.opts.rows.toLocaleString("en-US")} rows of hits…`
        : "loading WebAssembly and generating the hits table, sized to the browser's memory…",
    );
    const w = new Worker(this.base + "worker.js");
    this.worker = w;
    this.ready = false;
    this.readyP = new Promise((resolve, reject) => {
      w.onmessage = (ev) => {
        const m = ev.data;
        if (m.type === "frame") {
          this.handle(JSON.parse(m.frame));
          return;
        }
        if (m.type === "ready") {
          this.info = m; // {go, loadMs, gen, ms}; kernel_info adds to it
          this.ready = true;
          this.connection = "in browser";
          for (const f of this.pending.splice(0)) w.postMessage({ op: "frame", frame: f });
          this.kernelInfo().catch(() => {});
          this.status(m.gen.message);
          resolve(m);
          return;
        }
        if (m.type === "fatal") {
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
    w.postMessage({ op: "init", wasm: this.base + "cachebook.wasm", wasmExec: this.base + "wasm_exec.js", ...this.opts });
    return this.readyP;
  }

  transmit(frame) {
    if (!this.worker) this.start().catch(() => {});
    if (this.ready) this.worker.postMessage({ op: "frame", frame });
    else this.pending.push(frame);
  }

  interrupt() {
    if (!this.worker) return Promise.resolve();
    const running = [...this.cells.keys()];
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
    this.terminate("closed");
  }
}
