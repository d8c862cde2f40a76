// Times the WebAssembly kernel under Node (no browser) on the generated
// hits table, through the same frames the page sends:
//
//	GOOS=js GOARCH=wasm go build -o /tmp/cachebook.wasm ./web/wasm
//	node web/wasm/bench.mjs /tmp/cachebook.wasm 1000000 naive,radix
//	go test ./web/wasm -run '^$' -bench Q15 -benchtime 5x   # the same table natively
//
// For each strategy it runs ClickBench Q15 (wrapped in a count, as
// `cachebook bench` does) once to warm up and 5 times timed, and prints the
// median engine time and the median wall time of the cell.
import { start } from "./node-kernel.mjs";

const [wasmPath = "web/static/dist/cachebook.wasm", rowsArg = "1000000", strategies = "naive,radix"] = process.argv.slice(2);
export const Q15 = "SELECT count(*) AS groups, sum(c) AS rows FROM (SELECT UserID, count(*) AS c FROM hits GROUP BY UserID) AS t";

const k = await start(wasmPath, Number(rowsArg));
console.log(k.info.message);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const strategy of strategies.split(",")) {
  const engine = [];
  const wall = [];
  let result = "";
  for (let i = 0; i < 6; i++) {
    const t0 = performance.now();
    const frames = await k.execute("sql", Q15, { group_by: strategy });
    const ms = performance.now() - t0;
    const res = frames.find((m) => m.header.msg_type === "execute_result");
    const err = frames.find((m) => m.header.msg_type === "error");
    if (err) throw new Error(`${err.content.ename}: ${err.content.evalue}`);
    const st = res.content.data["application/vnd.cachebook.result+json"].statements.at(-1);
    result = st.rows[0].join(" ");
    if (i === 0) continue; // warm-up
    engine.push(st.elapsed_ns / 1e6);
    wall.push(ms);
  }
  console.log(`wasm ${strategy.padEnd(6)} rows ${rowsArg} shuffled, 1 thread: engine median ${median(engine).toFixed(1)} ms (min ${Math.min(...engine).toFixed(1)}), cell wall ${median(wall).toFixed(1)} ms; groups rows = ${result}`);
}
process.exit(0);
