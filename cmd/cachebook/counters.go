package main

import (
	"encoding/json"
	"io"

	"cachebook/engine"
	"cachebook/kernel/latency"
	"cachebook/kernel/perf"
)

// queryMeter measures perf counters around one statement.
type queryMeter interface {
	hooks() *engine.Hooks
	write(w io.Writer, format string) error
}

type perfMeter struct{ m *perf.QueryMeter }

// newQueryMeter returns a meter that opens counters on every worker thread.
func newQueryMeter() queryMeter { return perfMeter{perf.NewQueryMeter(perf.Options{})} }

func (p perfMeter) hooks() *engine.Hooks { return p.m.Hooks(nil) }

func (p perfMeter) write(w io.Writer, format string) error {
	r := p.m.Report()
	if format == "json" {
		return json.NewEncoder(w).Encode(map[string]any{"counters": r})
	}
	return r.WriteTable(w)
}

// hostCacheSizes returns the CPU cache sizes the OS (or CPUID) reports, for
// the engine's auto strategy; unknown levels stay zero and the engine uses
// typical sizes.
func hostCacheSizes() engine.CacheSizes {
	var cs engine.CacheSizes
	caches, _ := latency.OSCaches()
	for _, c := range caches {
		if c.Type == "Instruction" {
			continue
		}
		switch c.Level {
		case 1:
			cs.L1 = c.SizeBytes
		case 2:
			cs.L2 = c.SizeBytes
		case 3:
			cs.L3 = c.SizeBytes
		}
	}
	return cs
}
