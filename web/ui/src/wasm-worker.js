// Web Worker that hosts cachebook.wasm (GOOS=js GOARCH=wasm). The page runs
// two kinds of it: the kernel, which speaks cachebook-kernel/1 frames and
// starts at once without the hits table, and generators, which only
// generate a hits table and hand its Parquet bytes back, so that the table
// is made on another core while the kernel already runs cells. The page
// talks to them with postMessage:
//
//	{op:"init", module|wasm, wasmExec, rows, order, seed, deferHits, lastLevel}
//	    -> {type:"ready", gen, go, loadMs, ms} | {type:"fatal", error}
//	    -> {type:"probe", bytes} whenever the kernel measured the last cache level
//	{op:"frame", frame}           -> the kernel's frames, {type:"frame", frame}
//	{op:"cached", key}            -> {type:"hits", info, ms, cached:true} | {type:"miss"}
//	{op:"hits", bytes, info, key} -> {type:"hits", info, ms} (key: keep it in OPFS under key)
//	{op:"hits", parts, infos, key} -> the same, for a table generated in parts (joined here)
//	{op:"convert", id, what, name, text} -> {type:"converted", id, text} | {type:"converted", id, error}
//	    (what "open": a .md/.ipynb file to the page's notebook JSON; "md"/"ipynb": back)
//	{op:"generate", module|wasm, wasmExec, rows, order, seed, part, parts}
//	    -> {type:"progress", done, total}…, {type:"generated", bytes, info} | {type:"fatal", error}
//
// Go's wasm runtime is single-threaded: a frame (an interrupt) is only seen
// when the running cell yields (the kernel does so about every 50 ms). If
// it never yields the page terminates this worker instead.
/* global Go, cachebook */

function post(msg, transfer) {
  self.postMessage(msg, transfer || []);
}

// load instantiates the Go program, from the module the page compiled
// once for all its workers, or else from the URL.
async function load(msg) {
  importScripts(msg.wasmExec || "wasm_exec.js");
  const go = new Go();
  const started = new Promise((resolve) => {
    self.cachebookReady = resolve;
  });
  let instance;
  if (msg.module) {
    instance = await WebAssembly.instantiate(msg.module, go.importObject);
  } else {
    const url = msg.wasm || "cachebook.wasm";
    try {
      instance = (await WebAssembly.instantiateStreaming(fetch(url), go.importObject)).instance;
    } catch (e) {
      // Servers that send the wrong Content-Type: fall back to bytes.
      const r = await fetch(url);
      if (r.status === 404) throw new Error("this server was built without cachebook.wasm (run make wasm before building the binary)");
      if (!r.ok) throw new Error(`fetch ${url}: HTTP ${r.status}`);
      instance = (await WebAssembly.instantiate(await r.arrayBuffer(), go.importObject)).instance;
    }
  }
  go.run(instance).then(() => post({ type: "fatal", error: "the Go program exited" }));
  await started;
}

async function init(msg) {
  const t0 = performance.now();
  await load(msg);
  const loadMs = performance.now() - t0;
  const opts = { rows: msg.rows, order: msg.order, seed: msg.seed, deferHits: !!msg.deferHits, lastLevel: msg.lastLevel || 0 };
  const gen = JSON.parse(
    await cachebook.start(
      opts,
      (frame) => post({ type: "frame", frame }),
      (bytes) => post({ type: "probe", bytes }),
    ),
  );
  return { go: cachebook.goVersion, loadMs, gen, ms: performance.now() - t0 };
}

// The origin-private file system keeps generated tables between visits.
async function opfs() {
  if (!navigator.storage || !navigator.storage.getDirectory) return null;
  try {
    return await navigator.storage.getDirectory();
  } catch {
    return null; // e.g. a private window
  }
}

// cached registers the table stored under key, if a whole one is there:
// its description (key.json) is written only after its bytes.
async function cached(key) {
  const t0 = performance.now();
  const root = await opfs();
  if (!root) return { type: "miss" };
  let info, bytes;
  try {
    info = await (await (await root.getFileHandle(key + ".json")).getFile()).text();
    const file = await (await root.getFileHandle(key + ".parquet")).getFile();
    if (file.size !== JSON.parse(info).bytes) return { type: "miss" };
    bytes = new Uint8Array(await file.arrayBuffer());
  } catch {
    return { type: "miss" };
  }
  const reg = JSON.parse(await cachebook.registerHits(bytes, info));
  return { type: "hits", info: reg, ms: performance.now() - t0, cached: true };
}

// store keeps segments (Uint8Arrays, one after the other: the file) under
// key, replacing the tables stored under other keys (an older size or
// seed): a failure only costs a generation later.
async function store(key, segments, info) {
  const root = await opfs();
  if (!root) return;
  try {
    for await (const name of root.keys()) {
      if (name.startsWith("hits-") && !name.startsWith(key + ".")) await root.removeEntry(name).catch(() => {});
    }
    const w = await (await root.getFileHandle(key + ".parquet", { create: true })).createWritable();
    for (const s of segments) await w.write(s);
    await w.close();
    const j = await (await root.getFileHandle(key + ".json", { create: true })).createWritable();
    await j.write(info);
    await j.close();
  } catch (e) {
    console.warn("cachebook: could not keep the hits table in this browser's storage:", e);
  }
}

// hits registers a table: one file, or the parts of one, which joinHits
// joins into a list of segments (views of the parts and new metadata).
async function hits(msg) {
  const t0 = performance.now();
  let segments = [new Uint8Array(msg.bytes || 0)];
  let info = msg.info;
  if (msg.parts) {
    const j = await cachebook.joinHits(
      msg.parts.map((b) => new Uint8Array(b)),
      msg.infos,
    );
    segments = j.segments;
    info = j.info;
  }
  const reg = JSON.parse(await cachebook.registerHits(segments.length === 1 ? segments[0] : segments, info));
  const out = { type: "hits", info: reg, ms: performance.now() - t0, slice: !!msg.slice };
  if (msg.key) store(msg.key, segments, info);
  return out;
}

async function generate(msg) {
  await load(msg);
  let last = 0;
  const r = await cachebook.generateHits({ rows: msg.rows, order: msg.order, seed: msg.seed, part: msg.part, parts: msg.parts }, (done, total) => {
    const now = performance.now();
    if (now - last > 100 || done === total) {
      last = now;
      post({ type: "progress", done, total });
    }
  });
  return r;
}

self.onmessage = async (ev) => {
  const msg = ev.data;
  try {
    switch (msg.op) {
      case "init":
        post({ type: "ready", ...(await init(msg)) });
        break;
      case "frame":
        cachebook.send(msg.frame);
        break;
      case "cached":
        post(await cached(msg.key));
        break;
      case "hits":
        post(await hits(msg));
        break;
      case "convert":
        try {
          post({ type: "converted", id: msg.id, text: JSON.parse(await cachebook.convert(msg.what, msg.name || "", msg.text || "")) });
        } catch (e) {
          post({ type: "converted", id: msg.id, error: String((e && e.message) || e) });
        }
        break;
      case "generate": {
        const r = await generate(msg);
        post({ type: "generated", info: r.info, bytes: r.bytes.buffer }, [r.bytes.buffer]);
        break;
      }
    }
  } catch (e) {
    post({ type: "fatal", error: String((e && e.message) || e), op: msg.op });
  }
};
