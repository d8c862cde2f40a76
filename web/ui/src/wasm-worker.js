// Web Worker that hosts cachebook.wasm (GOOS=js GOARCH=wasm). The page talks
// to it with postMessage:
//
//	{op:"init", wasm, rows, order, seed}  -> {type:"ready", gen, go, ms}
//	{op:"exec", id, sql}                  -> {type:"progress", id, done, total}*, {type:"reply", id, reply}
//	{op:"cancel"}                         -> {type:"cancel", running}
//	{op:"gen", id, rows, order, seed}     -> {type:"reply", id, reply}
//	{op:"measure", id, kind, source, attrs} -> progress*, {type:"reply", id, reply}
//
// Go's wasm runtime is single-threaded: a cancel message is only seen when
// the running query yields (web/wasm does so about every 50 ms). If it never
// yields the page terminates this worker instead.
/* global Go, cachebook */

let ready = null;

function post(msg) {
  self.postMessage(msg);
}

async function init(msg) {
  const t0 = performance.now();
  importScripts(msg.wasmExec || "wasm_exec.js");
  const go = new Go();
  const started = new Promise((resolve) => {
    self.cachebookReady = resolve;
  });
  const resp = fetch(msg.wasm || "cachebook.wasm");
  let inst;
  if (WebAssembly.instantiateStreaming) {
    try {
      inst = await WebAssembly.instantiateStreaming(resp, go.importObject);
    } catch (e) {
      // Servers that send the wrong Content-Type: fall back to bytes.
      const r = await fetch(msg.wasm || "cachebook.wasm");
      if (r.status === 404) throw new Error("this server was built without cachebook.wasm (run make wasm before building the binary)");
      if (!r.ok) throw new Error(`fetch ${msg.wasm}: HTTP ${r.status}`);
      inst = await WebAssembly.instantiate(await r.arrayBuffer(), go.importObject);
    }
  } else {
    const r = await resp;
    inst = await WebAssembly.instantiate(await r.arrayBuffer(), go.importObject);
  }
  go.run(inst.instance).then(() => post({ type: "fatal", error: "Go program exited" }));
  await started;
  const loadMs = performance.now() - t0;
  const g = JSON.parse(await cachebook.gen({ rows: msg.rows, order: msg.order, seed: msg.seed }));
  return { go: cachebook.goVersion, loadMs, gen: g, ms: performance.now() - t0 };
}

self.onmessage = async (ev) => {
  const msg = ev.data;
  try {
    switch (msg.op) {
      case "init":
        ready = init(msg);
        post({ type: "ready", ...(await ready) });
        break;
      case "gen": {
        await ready;
        const r = JSON.parse(await cachebook.gen({ rows: msg.rows, order: msg.order, seed: msg.seed }));
        post({ type: "reply", id: msg.id, reply: r });
        break;
      }
      case "exec": {
        await ready;
        const t0 = performance.now();
        const r = JSON.parse(
          await cachebook.exec(msg.sql, (done, total) => post({ type: "progress", id: msg.id, done, total })),
        );
        r.wall_ms = performance.now() - t0;
        post({ type: "reply", id: msg.id, reply: r });
        break;
      }
      case "measure": {
        await ready;
        const r = JSON.parse(
          await cachebook.measure(msg.kind, msg.source, msg.attrs || {}, (done, total) => post({ type: "progress", id: msg.id, done, total })),
        );
        post({ type: "reply", id: msg.id, reply: r });
        break;
      }
      case "cancel":
        post({ type: "cancel", running: typeof cachebook !== "undefined" && cachebook.cancel() });
        break;
      case "reset":
        if (typeof cachebook !== "undefined") cachebook.reset();
        break;
      default:
        post({ type: "error", id: msg.id, error: `unknown op ${msg.op}` });
    }
  } catch (e) {
    post({ type: "error", id: msg.id, error: String((e && e.message) || e) });
  }
};
