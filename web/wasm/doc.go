// Command wasm is cachebook's WebAssembly entry point. Built with
// GOOS=js GOARCH=wasm it runs inside a Web Worker (see
// web/ui/src/wasm-worker.js) and exposes the SQL engine to JavaScript as
// the global object "cachebook":
//
//	cachebook.gen({rows, order, seed})  -> Promise<JSON string>
//	cachebook.exec(sql, onProgress)     -> Promise<JSON string>
//	cachebook.measure(kind, src, attrs, onProgress) -> Promise<JSON string>
//	cachebook.cancel()                  -> stops the running exec or measure
//	cachebook.reset()                   -> a fresh session (settings)
//
// gen writes a ClickBench-shaped hits table with cachebook/engine/gen
// into memory and registers it as table "hits"; exec runs ;-separated
// statements and answers with the result tables (at most 1000 rows each,
// with the total) or the error and its line:col in the SQL; measure runs
// a latency (kernel/latency) or bandwidth (kernel/bandwidth, one thread)
// cell and answers like the server's measurement bundle. Working sets are
// capped at 512 MiB: wasm32 memory is at most 4 GiB.
//
// Go's WebAssembly port is single-threaded: while a query runs, the worker
// cannot see messages. The progress hook therefore yields to the browser's
// event loop about every 50 ms, so that a cancel message is delivered and
// cancels the query's context; terminating the worker stays the last
// resort. Built natively this command only prints how to build it.
package main
