// Package kernel executes notebook cells and speaks the cachebook-kernel/1
// message protocol (docs/protocol.md).
//
// The core is transport-independent and builds for GOOS=js GOARCH=wasm:
//
//   - Message, Encode and Decode are the protocol's JSON envelope.
//   - Cell, Runner and Registry describe cells and the runners of each
//     kind (sql is built in; measurement kinds plug in).
//   - Executor runs the cells of one kernel session in order on one engine
//     session; `cachebook run` uses it directly.
//   - Scheduler is the admission queue shared by all sessions of a
//     server: a global limit on heavy cells, round-robin across sessions,
//     and exclusive measurement cells that run alone.
//   - Session and Manager add what a server needs: a per-session queue,
//     interrupt and restart, numbered outputs with a replay buffer, and any
//     number of subscribers (browser tabs) per session.
//
// The websocket transport lives in package cachebook/web.
package kernel
