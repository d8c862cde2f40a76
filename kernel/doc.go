// Package kernel executes notebook cells and speaks the cachebook-kernel/1
// message protocol (docs/protocol.md).
//
// The core is transport-independent and builds for GOOS=js GOARCH=wasm,
// where web/wasm runs the very same kernel in the browser:
//
//   - Message, Encode and Decode are the protocol's JSON envelope.
//   - Cell, Runner and Registry describe cells and the runners of each
//     kind; DefaultRegistry (kinds.go) is the one list of cell kinds, and
//     KindInfo tells clients which runtimes run each (kernel_info).
//   - Executor runs the cells of one kernel, one at a time, on one engine
//     session; `cachebook run` uses it directly.
//   - Scheduler is the admission queue shared by all kernels of a server:
//     a global limit on heavy cells, round-robin across kernels, and
//     exclusive measurement cells that run alone.
//   - Kernel and Manager add what a server needs: Manager (manager.go)
//     owns the kernels and bounds their number and replay memory; a
//     Kernel's cell queue, interrupt and restart are in queue.go, its
//     numbered outputs, replay buffer and subscribers (browser tabs) in
//     subscription.go.
//   - Parameters of measurement cells are declared once in kernel/param
//     and the measurement packages (latency.Params, bandwidth.Params,
//     sweep.Params); Limits.CellMemory, Limits.Threads and
//     Limits.Browser are the only differences between runtimes (the
//     browser's variants of cells, in onethread.go, read Browser).
//
// Words: a kernel is named by the session id its clients choose (the
// protocol's "session"); its kernel session id (KernelSession) names one
// run of it and changes at each restart; the engine session inside the
// executor holds the SQL settings.
//
// The websocket transport lives in package cachebook/web.
package kernel
