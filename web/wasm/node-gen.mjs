// Generates the hits table with cachebook.wasm under Node as the page
// does: in parts, each in a worker thread of its own (so on a core of its
// own where there is one), joined into one Parquet file without copying
// the parts (joinHits), registered with a kernel and queried:
//
//	GOOS=js GOARCH=wasm go build -o /tmp/cachebook.wasm ./web/wasm
//	node web/wasm/node-gen.mjs /tmp/cachebook.wasm 4000000 2 [out.parquet [rowGroupRows]]
//
// It prints the time each part took and the whole, and one JSON line with
// the result of a query over the registered table; with out it writes the
// joined file there (web/wasm's TestWasmParts compares it with the native
// generator's, with small row groups). parts 1 generates the table in one
// worker, as the page did before.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { fileURLToPath } from "node:url";

const goroot = (isMainThread ? execFileSync(process.env.GO || "go", ["env", "GOROOT"], { encoding: "utf8" }).trim() : workerData.goroot);

// load instantiates module (compiled once, as the page does, and shared
// with the workers).
async function load(module) {
  createRequire(import.meta.url)(path.join(goroot, "lib/wasm/wasm_exec.js"));
  const go = new globalThis.Go();
  const ready = new Promise((r) => (globalThis.cachebookReady = r));
  const instance = await WebAssembly.instantiate(module, go.importObject);
  go.run(instance);
  await ready;
  return globalThis.cachebook;
}

if (!isMainThread) {
  const keep = setInterval(() => {}, 1 << 30);
  const cb = await load(workerData.module);
  const t0 = performance.now();
  const r = await cb.generateHits({ rows: workerData.rows, order: "shuffled", seed: 1, part: workerData.part, parts: workerData.parts, rowGroupRows: workerData.rowGroupRows });
  parentPort.postMessage({ info: r.info, bytes: r.bytes, ms: performance.now() - t0 }, [r.bytes.buffer]);
  clearInterval(keep);
  process.exit(0);
}

const [wasmPath, rowsArg = "1000000", partsArg = "2", out = "", groupArg = "0"] = process.argv.slice(2);
const rows = Number(rowsArg);
const rowGroupRows = Number(groupArg) || 1 << 20;
// No more parts than row groups (gen.Parts).
const parts = Math.max(1, Math.min(Number(partsArg), Math.ceil(rows / rowGroupRows)));
setInterval(() => {}, 1 << 30);
const module = await WebAssembly.compile(readFileSync(wasmPath));
const t0 = performance.now();
const done = [];
for (let part = 0; part < parts; part++) {
  const w = new Worker(fileURLToPath(import.meta.url), { workerData: { goroot, module, rows, part, parts, rowGroupRows } });
  done.push(new Promise((resolve, reject) => {
    w.once("message", resolve);
    w.once("error", reject);
  }));
}
const cb = await load(module);
const got = await Promise.all(done);
const genMs = performance.now() - t0;
const t1 = performance.now();
const joined = await cb.joinHits(got.map((g) => g.bytes), got.map((g) => g.info));
const joinMs = performance.now() - t1;
for (const [k, g] of got.entries()) console.log(`part ${k}: ${JSON.parse(g.info).message} (${g.ms.toFixed(0)} ms in its worker)`);
console.log(`${parts} parts: ${genMs.toFixed(0)} ms from start to the last part, join ${joinMs.toFixed(0)} ms: ${JSON.parse(joined.info).message}`);
if (out) writeFileSync(out, Buffer.concat(joined.segments));

// Register the joined table with a kernel and query it.
let frames = [];
let wake = null;
await cb.start({ deferHits: true }, (f) => {
  frames.push(JSON.parse(f));
  if (wake) wake();
});
await cb.registerHits(joined.segments, joined.info);
const id = "node-q";
const sql = "SELECT count(*) AS n, count(DISTINCT UserID) AS users, sum(RegionID) AS regions, max(URL) AS url FROM hits";
cb.send(JSON.stringify({ channel: "shell", header: { msg_id: id, session: "node", msg_type: "execute_request", version: "cachebook-kernel/1", date: new Date().toISOString() }, parent_header: {}, metadata: {}, content: { code: sql, kind: "sql", attrs: {}, cell_id: "", silent: false, store_history: true } }));
const isResult = (m) => m.parent_header.msg_id === id && (m.header.msg_type === "execute_result" || m.header.msg_type === "error");
while (!frames.some(isResult)) await new Promise((r) => (wake = r));
const res = frames.find(isResult);
if (res.header.msg_type === "error") throw new Error(`${res.content.ename}: ${res.content.evalue}`);
console.log(JSON.stringify(res.content.data["application/vnd.cachebook.result+json"].statements.at(-1).rows));
process.exit(0);
