// Times the WebAssembly kernel under Node (no browser) on the generated
// hits table, through the same frames the page sends:
//
//	GOOS=js GOARCH=wasm go build -o /tmp/cachebook.wasm ./web/wasm
//	node web/wasm/bench.mjs /tmp/cachebook.wasm 1000000 naive,radix [warmups]
//	go test ./web/wasm -run '^$' -bench Q15 -benchtime 5x   # the same table natively
//
// For each strategy it runs ClickBench Q15 (wrapped in a count, as
// `cachebook bench` does) warmups times (1 unless given) to warm up and 5
// times timed, and prints every timed engine time, their median and the
// median wall time of the cell. V8 first runs WebAssembly from its
// baseline compiler and recompiles hot functions with its optimizing one
// as they run, so the first runs after loading are slower than later
// ones: compare 1 warm-up with, say, 10 to see how much.
import { start } from "./node-kernel.mjs";

const [wasmPath = "web/static/dist/cachebook.wasm", rowsArg = "1000000", strategies = "naive,radix", warmArg = "1"] = process.argv.slice(2);
const warmups = Number(warmArg);
export const Q15 = "SELECT count(*) AS groups, sum(c) AS rows FROM (SELECT UserID, count(*) AS c FROM hits GROUP BY UserID) AS t";

const k = await start(wasmPath, Number(rowsArg));
console.log(k.info.message);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const strategy of strategies.split(",")) {
  const engine = [];
  const wall = [];
  let result = "";
  for (let i = 0; i < warmups + 5; i++) {
    const t0 = performance.now();
    const frames = await k.execute("sql", Q15, { group_by: strategy });
    const ms = performance.now() - t0;
    const res = frames.find((m) => m.header.msg_type === "execute_result");
    const err = frames.find((m) => m.header.msg_type === "error");
    if (err) throw new Error(`${err.content.ename}: ${err.content.evalue}`);
    const st = res.content.data["application/vnd.cachebook.result+json"].statements.at(-1);
    result = st.rows[0].join(" ");
    if (i < warmups) continue;
    engine.push(st.elapsed_ns / 1e6);
    wall.push(ms);
  }
  console.log(`wasm ${strategy.padEnd(6)} rows ${rowsArg} shuffled, 1 thread: engine median ${median(engine).toFixed(1)} ms (min ${Math.min(...engine).toFixed(1)}), cell wall ${median(wall).toFixed(1)} ms; runs ${engine.map((x) => x.toFixed(0)).join(" ")} ms after ${warmups} warm-up; groups rows = ${result}`);
}
process.exit(0);
