//go:build js && wasm

package kernel

import "time"

// yieldEvery is how often a running cell lets the browser's event loop
// run. Go's WebAssembly port has one thread and no preemption: until the
// cell blocks, the worker cannot receive the page's interrupt_request.
const yieldEvery = 50 * time.Millisecond

// maybeYield sleeps for a moment, once per yieldEvery, so that the event
// loop delivers pending messages (an interrupt) to the kernel. It is
// called from the cell's progress and display updates, never with a lock
// held.
func (e *Env) maybeYield() {
	e.mu.Lock()
	due := time.Since(e.yielded) >= yieldEvery
	if due {
		e.yielded = time.Now()
	}
	e.mu.Unlock()
	if due {
		time.Sleep(time.Millisecond)
	}
}
