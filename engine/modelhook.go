package engine

import (
	"cachebook/engine/agg"
	"cachebook/engine/vec"
)

// AggregateInfo describes a GROUP BY about to run, for Hooks.Aggregate: a
// caller that models the query's memory accesses (kernel counters=model)
// records the input the wrapped source hands out and replays it through
// agg's traced pass with the same configuration.
type AggregateInfo struct {
	KeyTypes []vec.Type
	Specs    []agg.Spec
	// Config is the configuration the aggregation runs with (strategy,
	// threads, radix bits, huge pages, rows hint, generic).
	Config agg.Config
	// Op identifies the operator's node in the statement's Result.Plan
	// (PlanNode.Op), for Result.AnnotatePlan.
	Op uint64
}

// Traceable reports whether agg.TraceCount can model this aggregation:
// the tuned count path (one integer key, only count(*) aggregates).
func (a AggregateInfo) Traceable() bool {
	return agg.CountTraceable(a.KeyTypes, a.Specs) && !a.Config.Generic
}

// Observable reports whether agg.TraceAggregate can model this
// aggregation on the generic path: keys of any type but NULL, aggregates
// other than DISTINCT ones over non-string inputs.
func (a AggregateInfo) Observable() bool {
	return agg.ObservedTraceable(a.KeyTypes, a.Specs)
}
