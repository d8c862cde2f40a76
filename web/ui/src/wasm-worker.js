// Web Worker that hosts cachebook.wasm (GOOS=js GOARCH=wasm): the kernel
// itself, speaking cachebook-kernel/1 frames. The page talks to it with
// postMessage:
//
//	{op:"init", wasm, wasmExec, rows, order, seed} -> {type:"ready", gen, go, loadMs, ms} | {type:"fatal", error}
//	{op:"frame", frame}                            -> the kernel's frames, {type:"frame", frame}
//
// Go's wasm runtime is single-threaded: a frame (an interrupt) is only seen
// when the running cell yields (the kernel does so about every 50 ms). If
// it never yields the page terminates this worker instead.
/* global Go, cachebook */

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
  const url = msg.wasm || "cachebook.wasm";
  let inst;
  try {
    inst = await WebAssembly.instantiateStreaming(fetch(url), go.importObject);
  } catch (e) {
    // Servers that send the wrong Content-Type: fall back to bytes.
    const r = await fetch(url);
    if (r.status === 404) throw new Error("this server was built without cachebook.wasm (run make wasm before building the binary)");
    if (!r.ok) throw new Error(`fetch ${url}: HTTP ${r.status}`);
    inst = await WebAssembly.instantiate(await r.arrayBuffer(), go.importObject);
  }
  go.run(inst.instance).then(() => post({ type: "fatal", error: "the Go program exited" }));
  await started;
  const loadMs = performance.now() - t0;
  const gen = JSON.parse(await cachebook.start({ rows: msg.rows, order: msg.order, seed: msg.seed }, (frame) => post({ type: "frame", frame })));
  return { go: cachebook.goVersion, loadMs, gen, ms: performance.now() - t0 };
}

self.onmessage = async (ev) => {
  const msg = ev.data;
  try {
    if (msg.op === "init") post({ type: "ready", ...(await init(msg)) });
    else if (msg.op === "frame") cachebook.send(msg.frame);
  } catch (e) {
    post({ type: "fatal", error: String((e && e.message) || e) });
  }
};
