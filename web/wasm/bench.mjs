// Runs cachebook.wasm under Node (no browser) to time the WebAssembly engine
// against the native one on the same generated rows:
//
//	GOOS=js GOARCH=wasm go build -o /tmp/cachebook.wasm ./web/wasm
//	node web/wasm/bench.mjs /tmp/cachebook.wasm 200000 "SELECT ..."
//
// It prints the generation time and the median of 5 runs of the query.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [wasmPath = "web/static/dist/cachebook.wasm", rowsArg = "200000", sql = "SELECT UserID, count(*) AS c FROM hits GROUP BY UserID ORDER BY c DESC, UserID LIMIT 10", group = ""] = process.argv.slice(2);
const goroot = execFileSync(process.env.GO || "go", ["env", "GOROOT"], { encoding: "utf8" }).trim();
createRequire(import.meta.url)(path.join(goroot, "lib/wasm/wasm_exec.js"));

const go = new globalThis.Go();
const ready = new Promise((r) => (globalThis.cachebookReady = r));
const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), go.importObject);
go.run(instance);
await ready;
const cb = globalThis.cachebook;
const g = JSON.parse(await cb.gen({ rows: Number(rowsArg), order: "shuffled", seed: 1 }));
console.log(g.message);
if (group) JSON.parse(await cb.exec(`SET group_by = '${group}'`));
const times = [];
let last;
for (let i = 0; i < 6; i++) {
  const t0 = performance.now();
  last = JSON.parse(await cb.exec(sql));
  if (last.error) throw new Error(last.error.evalue);
  if (i > 0) times.push(performance.now() - t0); // the first run warms up
}
times.sort((a, b) => a - b);
const st = last.statements[last.statements.length - 1];
console.log(`wasm ${go.constructor.name}: median ${times[2].toFixed(1)} ms (min ${times[0].toFixed(1)}), engine elapsed ${(st.elapsed_ns / 1e6).toFixed(1)} ms, ${st.row_count} rows`);
console.log(st.rows.slice(0, 3).map((r) => r.join("\t")).join("\n"));
process.exit(0);
