// Command wasm is cachebook's kernel compiled to WebAssembly. Built with
// GOOS=js GOARCH=wasm it runs inside a Web Worker (web/ui/src/wasm-worker.js)
// and is the same kernel the server runs — kernel.Manager, kernel.Session
// and kernel.Executor with the same runners — over a generated hits table
// held in memory. Only the transport differs: instead of a websocket it
// speaks cachebook-kernel/1 frames (docs/protocol.md) with postMessage.
// It exposes the global object "cachebook":
//
//	cachebook.start({rows, order, seed}, onFrame) -> Promise<JSON string>
//	cachebook.send(frame)
//	cachebook.goVersion
//
// start generates the hits table (rows 0 or absent: DefaultRows, sized
// from BrowserMemory), starts the kernel and answers with the table's
// description; from then on onFrame receives every frame the
// kernel sends (the welcome first), as JSON text. send hands the kernel
// one client frame (execute_request, kernel_info_request,
// interrupt_request, shutdown_request).
//
// The browser's limits are explicit: cells may use one thread (Go's
// WebAssembly port has one) and BrowserCellMemory bytes. Because that one
// thread is not preempted, a running cell yields to the event loop about
// every 50 ms (kernel's Env does so on progress), so that an interrupt
// arrives; terminating the worker stays the page's last resort. Built
// natively this command only prints how to build it.
package main
