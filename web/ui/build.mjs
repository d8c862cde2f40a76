// Builds the notebook UI into ../static/dist: app.js, app.css, worker.js and
// wasm_exec.js copied from the Go toolchain that builds cachebook.wasm.
//
//	cd web/ui && npm ci && node build.mjs            (minified, for commit)
//	node build.mjs --dev                              (readable, sourcemaps)
import * as esbuild from "esbuild";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, statSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { readFileSync } from "node:fs";
import path from "node:path";

const dev = process.argv.includes("--dev");
const out = path.resolve(import.meta.dirname, "../static/dist");
mkdirSync(out, { recursive: true });

const common = {
  bundle: true,
  minify: !dev,
  sourcemap: dev ? "inline" : false,
  target: ["es2022"],
  logLevel: "warning",
  legalComments: "none",
};

await esbuild.build({
  ...common,
  entryPoints: { app: "src/main.js" },
  outdir: out,
  format: "esm",
  loader: { ".css": "css" },
});
await esbuild.build({
  ...common,
  entryPoints: { class: "src/class.js" },
  outdir: out,
  format: "esm",
  loader: { ".css": "css" },
});
await esbuild.build({
  ...common,
  entryPoints: { worker: "src/wasm-worker.js" },
  outdir: out,
  format: "iife",
});

// wasm_exec.js must come from the same Go release that builds the .wasm.
const goroot = execFileSync(process.env.GO || "go", ["env", "GOROOT"], { encoding: "utf8" }).trim();
copyFileSync(path.join(goroot, "lib/wasm/wasm_exec.js"), path.join(out, "wasm_exec.js"));

for (const f of ["app.js", "app.css", "class.js", "class.css", "worker.js", "wasm_exec.js"]) {
  const b = readFileSync(path.join(out, f));
  console.log(`${f.padEnd(14)} ${String(b.length).padStart(8)} B  gzip ${String(gzipSync(b).length).padStart(7)} B`);
}
try {
  const s = statSync(path.join(out, "cachebook.wasm"));
  console.log(`cachebook.wasm ${String(s.size).padStart(8)} B  (not committed; make wasm)`);
} catch {
  // The wasm is built separately by make wasm.
}
