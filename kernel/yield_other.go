//go:build !(js && wasm)

package kernel

// maybeYield does nothing where goroutines are preempted: an interrupt
// reaches the cell's context without help.
func (e *Env) maybeYield() {}
