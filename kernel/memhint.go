package kernel

import "cachebook/engine/units"

// memoryHint completes a MemoryLimit error with the browser's facts: the
// engine's own advice (SET memory_limit) cannot raise the WebAssembly
// kernel's cap, so the learner is told what can help instead. It adds
// nothing outside the browser, nor where the query's memory_limit
// (memoryLimit; 0: not known) was set below the cap: the engine's error
// already names SET memory_limit, which works there.
func memoryHint(l Limits, memoryLimit int64) string {
	if !l.Browser {
		return ""
	}
	limit := l.QueryMemory
	if limit == 0 {
		limit = l.CellMemory
	}
	if memoryLimit > 0 && limit > 0 && memoryLimit < limit {
		return ""
	}
	return "; in this browser a query may hold at most " + units.HumanBytes(limit) +
		" (the WebAssembly kernel's cap, which SET memory_limit cannot raise): group fewer rows " +
		"(a WHERE, or reopen the lesson with ?hits_rows=1000000 for a smaller hits table), " +
		"or run the cell on the server, whose limit is the machine's"
}
