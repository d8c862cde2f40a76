// Command wasm is cachebook's kernel compiled to WebAssembly. Built with
// GOOS=js GOARCH=wasm it runs inside a Web Worker (web/ui/src/wasm-worker.js)
// and is the same kernel the server runs — kernel.Manager, kernel.Session
// and kernel.Executor with the same runners — over a generated hits table
// held in memory. Only the transport differs: instead of a websocket it
// speaks cachebook-kernel/1 frames (docs/protocol.md) with postMessage.
// It exposes the global object "cachebook":
//
//	cachebook.start({rows, order, seed, deferHits, lastLevel}, onFrame, onProbe) -> Promise<JSON string>
//	cachebook.send(frame)
//	cachebook.generateHits({rows, order, seed}, onProgress) -> Promise<{info, bytes}>
//	cachebook.registerHits(bytes, info) -> Promise<JSON string>
//	cachebook.convert(op, name, text) -> Promise<JSON string>
//	cachebook.goVersion
//
// start starts the kernel and answers with the table's description; from
// then on onFrame receives every frame the kernel sends (the welcome
// first), as JSON text. Without deferHits it first generates the hits
// table itself (rows 0 or absent: DefaultRows, sized from BrowserMemory);
// with deferHits — what the page does — the kernel starts at once with no
// table, and registerHits adds one later: a Parquet file in a Uint8Array
// that the engine reads in place, made by generateHits in another worker
// (another instance of this program) or read back from the browser's
// storage. lastLevel is the last cache level an earlier probe measured,
// which the page keeps (a week, like the native cache); onProbe receives
// what a new probe measures. send hands the kernel one client frame
// (execute_request, kernel_info_request, interrupt_request,
// shutdown_request). convert opens a .md or .ipynb notebook into the
// page's JSON form, or writes that form as .md or .ipynb, with the
// notebook package — for a page that has no server (cachebook site).
//
// The browser's limits are explicit: cells may use one thread (Go's
// WebAssembly port has one) and BrowserCellMemory bytes. Because that one
// thread is not preempted, a running cell yields to the event loop about
// every 50 ms (kernel's Env does so on progress), so that an interrupt
// arrives; terminating the worker stays the page's last resort. Built
// natively this command only prints how to build it.
package main
