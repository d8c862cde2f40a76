package agg

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"cachebook/engine/vec"
)

// Strategy selects how a GROUP BY is executed.
type Strategy uint8

// The strategies. Radix with Threads > 1 is the parallel strategy.
const (
	Naive Strategy = iota
	Radix
)

// Loop selects the inner loop an aggregation runs.
type Loop uint8

// The loops.
const (
	// Generic is the hash table with one state per aggregate.
	Generic Loop = iota
	// CountLoop is the tuned single-integer-key count(*) loop: the key
	// and its count share one 16-byte slot.
	CountLoop
	// GlobalLoop is an aggregate without keys: one group.
	GlobalLoop
)

// ChooseLoop returns the loop for keys of keyTypes and aggregates specs:
// the tuned count loop where it applies unless generic is set.
func ChooseLoop(keyTypes []vec.Type, specs []Spec, generic bool) Loop {
	switch {
	case len(keyTypes) == 0:
		return GlobalLoop
	case !generic && countFast(keyTypes, specs):
		return CountLoop
	}
	return Generic
}

// Input is one morsel of the operator's input, already filtered and with
// key and aggregate input expressions evaluated.
type Input struct {
	Keys []*vec.Vector
	Args []*vec.Vector // one per Spec; nil for count(*)
	N    int
}

// Source returns the next morsel for a worker, or ok=false when the input is
// exhausted. It must be safe for concurrent use by several workers.
type Source func(worker int) (in Input, ok bool, err error)

// Config configures one aggregation.
type Config struct {
	Strategy Strategy
	// Threads is the workers that read the input (with Radix, that
	// partition it; with Naive, that fold it into tables of their own,
	// merged at the end, or with Shared into one); 1 runs on the calling
	// goroutine.
	Threads int
	// Shared makes a naive aggregation's workers fold their rows into
	// one table under a lock rather than a table each: a table too large
	// to hold twice.
	Shared    bool
	RadixBits int // partitions = 1 << RadixBits for Radix
	Budget    *Budget
	Hasher    *Hasher
	// HugePages puts large tables and partition buffers on huge pages
	// (Linux only; ignored elsewhere).
	HugePages bool
	// Pool, if set, keeps huge-page mappings between queries.
	Pool *Pool
	// RowsHint is the number of input rows, if known: partition buffers
	// are sized from it.
	RowsHint int64
	// GroupsHint is the estimated number of groups (0: unknown): the
	// first radix partitions' tables are sized from it.
	GroupsHint int64
	// Generic disables the tuned single-integer-key count(*) path, so the
	// general hash table and states run even for that shape.
	Generic bool
	// PlainKeys turns packed keys (packed.go) off: several integer keys
	// are hashed a column at a time and compared as the generic loop
	// compares any keys.
	PlainKeys bool
	// PreAggGroups is the number of groups each radix worker's
	// pre-aggregation table holds before it is flushed into the
	// partitions: 0 means DefaultPreAggGroups, a negative number turns
	// pre-aggregation off. It applies to the generic path when every
	// aggregate can be split into partial states (see preagg.go).
	PreAggGroups int
	// Spill, if set, opens the statement's spill space: a radix
	// aggregation whose partitions would pass the memory limit writes
	// them to disk instead (see radix_spill.go).
	Spill SpillFunc
	// SpillAt, if positive, is the bytes of the statement's budget
	// (Budget's root) past which a radix worker spills its partitions
	// before the limit is reached, so that the rest of the statement
	// keeps room.
	SpillAt int64
	// SpillGroups says the partitions are expected to pass SpillAt: each
	// worker carves them in groups, so that a spill writes only the
	// groups it must. Otherwise a worker that spills writes them all.
	SpillGroups bool
}

// threads returns the workers the configuration runs: Threads for Radix,
// one otherwise.
func (cfg Config) threads() int {
	if cfg.Strategy != Radix {
		return 1
	}
	return max(cfg.Threads, 1)
}

// Aggregator is one GROUP BY between its input and its groups, run as a
// sink, then a source. Its caller owns the workers: each worker w (from 0
// to Workers()-1) folds morsels in with Sink and ends with Flush; once
// every worker has flushed, Finalize is called once; then Next hands the
// groups out a part at a time. Close releases what the aggregator still
// holds, whenever its caller is done, even halfway.
//
// Sink, Flush and Next may run at once on different workers; nothing else
// may run at the same time as another call.
type Aggregator interface {
	// Workers returns the number of workers the aggregator expects.
	Workers() int
	// Sink folds one morsel into worker w's share of the groups.
	Sink(w int, in Input) error
	// Flush ends worker w's input: what it held back is stored where
	// Next finds it.
	Flush(w int) error
	// Finalize readies the groups to be handed out.
	Finalize(ctx context.Context) error
	// Next returns the next part of the groups, computed with worker w's
	// tables, or ok=false when there are no more. The part is charged to
	// the Budget (Part.Bytes) from now: its consumer releases the charge
	// when it drops the part.
	Next(ctx context.Context, w int) (p Part, ok bool, err error)
	// Stats returns what the aggregation did so far.
	Stats() Stats
	// Close releases what is still charged but the parts handed out.
	Close()
}

// Stats is what an aggregation did.
type Stats struct {
	// SinkPhase names what Sink does: "partition" where the groups are
	// computed by Next (radix), "aggregate" where Sink computes them.
	SinkPhase string
	// Groups counts the groups computed so far; Complete says that they
	// are all of them.
	Groups   int
	Complete bool
	// TableSlots is the largest hash table's capacity in slots.
	TableSlots int
	// PerPartition says that Next hands out a part per radix partition,
	// aggregated when it is asked for.
	PerPartition bool
	// PreAgg says what pre-aggregation before partitioning did, summed
	// over the workers (its Window is 0 when it did not run).
	PreAgg PreAggStats
}

// Part is a piece of an aggregation's groups: one radix partition's, or
// all of them.
type Part struct {
	Keys, Aggs []*vec.Vector
	Groups     int
	// Rows is the input rows folded into these groups by Next (0 where
	// Sink folded them).
	Rows int64
	// Bytes is the part's memory, charged to the Budget until its
	// consumer releases it.
	Bytes int64
}

// New returns the aggregator of keys of keyTypes (none: one group, even
// over empty input) and aggregates specs, running loop with cfg.
func New(keyTypes []vec.Type, specs []Spec, loop Loop, cfg Config) (Aggregator, error) {
	if cfg.Hasher == nil {
		cfg.Hasher = NewHasher()
	}
	if cfg.PlainKeys {
		cfg.Hasher = cfg.Hasher.plainKeys()
	}
	if cfg.Strategy == Radix && (cfg.RadixBits < 0 || cfg.RadixBits > 16) {
		return nil, fmt.Errorf("radix_bits must be between 0 and 16, got %d", cfg.RadixBits)
	}
	switch {
	case loop == GlobalLoop || len(keyTypes) == 0:
		return newGlobal(specs, cfg)
	case loop == CountLoop && cfg.Strategy == Naive:
		return newCountNaive(keyTypes[0], len(specs), cfg)
	case loop == CountLoop:
		return newCountRadix(keyTypes[0], len(specs), cfg)
	case cfg.Strategy == Naive:
		return newNaive(keyTypes, specs, cfg)
	}
	return newRadix(keyTypes, specs, cfg)
}

// charge charges the part's memory to b, less what is charged for it
// already (the keys a table stored), and records it in p.Bytes. On an
// error nothing of the part stays charged.
func (p *Part) charge(b *Budget, already int64) error {
	p.Bytes = VectorBytes(p.Keys...) + VectorBytes(p.Aggs...)
	if err := b.Grow(p.Bytes - already); err != nil {
		b.Grow(-already)
		return err
	}
	return nil
}

// VectorBytes is the memory held by vs, as the engine counts it.
func VectorBytes(vs ...*vec.Vector) int64 {
	var n int64
	for _, v := range vs {
		if v == nil {
			continue
		}
		n += int64(cap(v.I64))*8 + int64(cap(v.F64))*8 + int64(cap(v.Bytes)) +
			int64(cap(v.Offsets))*4 + int64(cap(v.Valid)) + 64
	}
	return n
}

// claim returns the next partition of nparts for a worker from the shared
// counter next, or ok=false when none is left. The context is checked
// every 64 partitions.
func claim(ctx context.Context, next *atomic.Int64, nparts int) (p int, ok bool, err error) {
	p = int(next.Add(1) - 1)
	if p >= nparts {
		return 0, false, nil
	}
	if p%64 == 0 {
		if err := ctx.Err(); err != nil {
			return 0, false, err
		}
	}
	return p, true, nil
}

// PanicError is a panic recovered on a worker goroutine, returned as the
// statement's error: a bug in one query must not end the process, which in
// the server is every learner's kernel.
type PanicError struct {
	Worker int
	Value  any
	Stack  []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("internal error in GROUP BY worker %d: %v", e.Worker, e.Value)
}

// Safely runs f, turning a panic into a *PanicError of worker.
func Safely(worker int, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Worker: worker, Value: p, Stack: debug.Stack()}
		}
	}()
	return f()
}
