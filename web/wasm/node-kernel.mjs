// Runs cachebook.wasm under Node (no browser) and drives its kernel with
// cachebook-kernel/1 frames, as the page's Web Worker does:
//
//	GOOS=js GOARCH=wasm go build -o /tmp/cachebook.wasm ./web/wasm
//	node web/wasm/node-kernel.mjs /tmp/cachebook.wasm cells.json frames.json [rows]
//
// cells.json is a list of {kind, code, attrs, predict, guess}; the script executes them in
// order and writes every frame the kernel sent, one JSON array, to frames.json
// (the golden test of web/wasm compares it with the native kernel's).
// Imported, it exports start() for web/wasm/bench.mjs.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

let seq = 0;

// start loads the wasm, generates rows of hits and returns a client with
// execute(kind, code, attrs) -> Promise<frames of that cell>.
export async function start(wasmPath, rows = 10000) {
  const goroot = execFileSync(process.env.GO || "go", ["env", "GOROOT"], { encoding: "utf8" }).trim();
  createRequire(import.meta.url)(path.join(goroot, "lib/wasm/wasm_exec.js"));
  // Go's runtime parks without a pending timer while it waits for a
  // message; keep Node's event loop alive as a page would be.
  setInterval(() => {}, 1 << 30);
  const go = new globalThis.Go();
  const ready = new Promise((r) => (globalThis.cachebookReady = r));
  const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), go.importObject);
  go.run(instance);
  await ready;
  const cb = globalThis.cachebook;
  const frames = [];
  let waiter = null;
  const info = JSON.parse(
    await cb.start({ rows, order: "shuffled", seed: 1 }, (f) => {
      const m = JSON.parse(f);
      frames.push(m);
      if (waiter) waiter(m);
    }),
  );
  const send = (msgType, content, channel = "shell") => {
    const header = { msg_id: `node-${++seq}`, session: "node", msg_type: msgType, version: "cachebook-kernel/1", date: new Date().toISOString() };
    cb.send(JSON.stringify({ channel, header, parent_header: {}, metadata: {}, content }));
    return header.msg_id;
  };
  // until resolves with the frames from index from on, once pred holds for one.
  const until = (from, pred) =>
    new Promise((resolve) => {
      const check = () => {
        if (frames.slice(from).some(pred)) {
          waiter = null;
          resolve(frames.slice(from));
          return true;
        }
        return false;
      };
      if (!check()) waiter = () => check();
    });
  return {
    info,
    go,
    frames,
    // extra: further execute_request members (predict, guess).
    async execute(kind, code, attrs = {}, extra = {}) {
      const from = frames.length;
      const id = send("execute_request", { code, kind, attrs, cell_id: "", silent: false, store_history: true, ...extra });
      // The reply, then the idle status that follows it.
      const isReply = (m) => m.header.msg_type === "execute_reply" && m.parent_header.msg_id === id;
      await until(from, isReply);
      const r = from + frames.slice(from).findIndex(isReply);
      await until(r + 1, (m) => m.header.msg_type === "status" && m.content.execution_state === "idle");
      return frames.slice(from);
    },
    send,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [wasmPath, cellsPath, outPath, rows = "10000"] = process.argv.slice(2);
  const cells = JSON.parse(readFileSync(cellsPath, "utf8"));
  const k = await start(wasmPath, Number(rows));
  for (const c of cells) {
    const extra = {};
    if (c.predict) extra.predict = c.predict;
    if (c.guess) extra.guess = c.guess;
    await k.execute(c.kind || "sql", c.code, c.attrs || {}, extra);
  }
  writeFileSync(outPath, JSON.stringify(k.frames));
  process.exit(0);
}
