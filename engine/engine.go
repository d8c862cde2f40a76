// Package engine is cachebook's columnar SQL engine: it reads Parquet tables
// into column vectors, parses and plans SQL, and executes GROUP BY queries
// with interchangeable aggregation strategies (naive, radix, parallel, auto)
// so that their cost can be measured side by side.
//
// A statement runs as a tree of operators (operator.go): the planner binds
// the SELECT (plan.go) and builds the tree (build.go) — a table scan that
// reads row groups as it goes and evaluates WHERE itself (op_scan.go),
// FILTER and HAVING (op_filter.go), PROJECTION (op_project.go), the hash
// aggregate with the strategy strategy.go chooses (op_aggregate.go), ORDER
// BY and top-N (op_sort.go), LIMIT (op_limit.go) and FROM subqueries
// (op_subquery.go). Execution pulls batches from the root; every operator
// keeps its own rows, time and memory, which EXPLAIN ANALYZE prints
// (explain.go). Everything a statement holds is charged to its memory
// budget (memory.go); settings.go has SET and RESET, session.go the
// statements.
//
// The package is pure Go and builds for GOOS=js GOARCH=wasm. It imports
// nothing of cachebook outside engine/. Callers observe execution through
// Hooks: worker start/stop and phase boundaries are called on the worker's own
// goroutine, which is where per-thread perf counters must be opened and read.
package engine

import (
	"time"

	"cachebook/engine/agg"
	"cachebook/engine/vec"
)

// Hooks lets a caller observe a query while it runs. Every field may be nil.
// WorkerStart, WorkerStop, PhaseStart and PhaseEnd are called on the worker's
// own goroutine, which stays locked to its OS thread between WorkerStart and
// WorkerStop when Hooks.LockThreads is set. Worker 0 is the query's
// coordinating goroutine; parallel workers are numbered from 1.
type Hooks struct {
	// LockThreads makes every worker call runtime.LockOSThread before
	// WorkerStart and unlock after WorkerStop (for per-thread counters).
	LockThreads bool
	WorkerStart func(worker int)
	WorkerStop  func(worker int)
	// PhaseStart and PhaseEnd bracket a phase of work on one worker:
	// "scan", "filter", "partition", "aggregate", "merge", "sort".
	PhaseStart func(worker int, phase string)
	PhaseEnd   func(worker int, phase string)
	// Progress reports rows done of the total rows the query will scan. It
	// is called from any goroutine, at most once per batch per worker.
	Progress func(done, total int64)
	// Aggregate, if set, is called before each GROUP BY runs and may wrap
	// its input source (see AggregateInfo).
	Aggregate func(info AggregateInfo, src agg.Source) agg.Source
}

// PlanNode is one operator of a query plan, as EXPLAIN shows it and as
// EXPLAIN ANALYZE fills it in with measurements.
type PlanNode struct {
	Name     string      `json:"name"`             // e.g. "HASH_GROUP_BY"
	Detail   []string    `json:"detail,omitempty"` // keys, aggregates, strategy and why
	Children []*PlanNode `json:"children,omitempty"`
	// Filled by EXPLAIN ANALYZE and by every executed query, from the
	// statistics the operator kept: rows out and in, its own time
	// (children excluded; summed over workers), the most memory it held.
	Rows      int64         `json:"rows"`
	RowsIn    int64         `json:"rows_in"`
	Time      time.Duration `json:"time_ns"`
	PeakBytes int64         `json:"peak_bytes,omitempty"`
	Phases    []PhaseStat   `json:"phases,omitempty"`
	Workers   []WorkerStat  `json:"workers,omitempty"`
	// Op identifies the operator within its session (AggregateInfo.Op);
	// 0 for a plan that did not run. Not serialised: it means nothing
	// outside the process.
	Op uint64 `json:"-"`
	// Modelled holds lines a caller added after the run with
	// Result.AnnotatePlan (the kernel's cache model: modelled, not
	// measured, figures), printed under the node by EXPLAIN ANALYZE.
	Modelled []string `json:"modelled,omitempty"`
}

// PhaseStat is the measured cost of one phase of an operator.
type PhaseStat struct {
	Name string        `json:"name"`
	Rows int64         `json:"rows"`
	Time time.Duration `json:"time_ns"`
}

// WorkerStat is one parallel worker's share of an operator's work.
type WorkerStat struct {
	Worker int           `json:"worker"`
	Phase  string        `json:"phase"`
	Rows   int64         `json:"rows"`
	Time   time.Duration `json:"time_ns"`
}

// Result is the outcome of one statement.
type Result struct {
	// Statement is the statement's SQL text.
	Statement string
	// Columns and Vecs hold the result table: one vector per column, each
	// of length Rows. Statements without rows (SET) have no columns.
	Columns []vec.Column
	Vecs    []*vec.Vector
	Rows    int
	// Message is a status line for statements without rows, e.g. "SET".
	Message string
	// Plan is the executed plan with per-operator measurements.
	Plan *PlanNode
	// Elapsed is the statement's wall time, parse to last row.
	Elapsed time.Duration
	// Notes are sentences about the tables the statement read that their
	// builders wrote (TableBuilder), e.g. the sizes of a generated table.
	Notes []string
	// explain is set on the result of EXPLAIN ANALYZE, whose rows are
	// the rendered Plan: AnnotatePlan renders them again.
	explain bool
}

// AnnotatePlan adds lines under the node of r.Plan whose operator is op
// (AggregateInfo.Op) and reports whether there is one. The result of an
// EXPLAIN ANALYZE is rendered again, so that its plan text shows them.
func (r *Result) AnnotatePlan(op uint64, lines []string) bool {
	if r == nil || r.Plan == nil || op == 0 {
		return false
	}
	var find func(n *PlanNode) *PlanNode
	find = func(n *PlanNode) *PlanNode {
		if n.Op == op {
			return n
		}
		for _, c := range n.Children {
			if f := find(c); f != nil {
				return f
			}
		}
		return nil
	}
	n := find(r.Plan)
	if n == nil {
		return false
	}
	n.Modelled = append(n.Modelled, lines...)
	if r.explain {
		r.Vecs = planLines(r.Plan)
		r.Rows = r.Vecs[0].Len
	}
	return true
}
