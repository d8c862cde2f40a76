package kernel

import "cachebook/engine"

// counterSet collects perf counters around one sql cell.
//
// The perf-counter package (kernel/perf) plugs in here; until it is wired
// in, a cell that asks for counters gets an honest "unavailable" record in
// the measurement JSON instead of numbers.
type counterSet struct {
	reason string
}

// startCounters prepares counter collection for a query run with hooks.
func startCounters(hooks *engine.Hooks, env *Env) *counterSet {
	_ = hooks
	_ = env
	return &counterSet{reason: "perf counters are not wired into this kernel build yet"}
}

// finish stops collection and returns the cell's measurement JSON value.
func (c *counterSet) finish() any {
	return map[string]any{"available": false, "reason": c.reason}
}
