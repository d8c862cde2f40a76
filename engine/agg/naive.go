package agg

import (
	"context"
	"errors"
	"fmt"

	"cachebook/engine/vec"
)

// naive folds every row into one hash table on one worker and hands its
// groups out as one part.
type naive struct {
	cfg    Config
	gs     *groupSet
	aggs   []*vec.Vector // the finished states, after Finalize
	done   bool
	closed bool
}

func newNaive(keyTypes []vec.Type, specs []Spec, cfg Config) (*naive, error) {
	gs, err := newGroupSet(keyTypes, specs, 0, cfg)
	if err != nil {
		return nil, err
	}
	return &naive{cfg: cfg, gs: gs}, nil
}

func (a *naive) Workers() int { return 1 }

func (a *naive) Sink(_ int, in Input) error {
	if err := a.gs.addHashing(a.cfg.Hasher, in); err != nil {
		return naiveError(a.gs.table.Len(), err)
	}
	return nil
}

// naiveError explains a naive table's memory error: its one table cannot
// spill, and what can.
func naiveError(groups int, err error) error {
	if !errors.Is(err, ErrMemoryLimit) {
		return err
	}
	return fmt.Errorf("naive GROUP BY's one hash table does not fit at %d groups; %s: %w", groups, NaiveWayOut(), err)
}

// NaiveWayOut says why a naive GROUP BY over the memory limit fails and
// what runs instead: radix spills to temporary files, or to memory where
// a runtime has none.
func NaiveWayOut() string {
	return "naive has no partitions to spill; radix and parallel spill theirs (SET group_by = 'radix'), or raise memory_limit"
}

func (a *naive) Flush(int) error { return nil }

func (a *naive) Finalize(context.Context) error {
	aggs, err := a.gs.finalize()
	a.aggs = aggs
	return err
}

func (a *naive) Next(context.Context, int) (Part, bool, error) {
	if a.done || a.aggs == nil {
		return Part{}, false, nil
	}
	a.done = true
	t := a.gs.table
	p := Part{Keys: t.Keys(), Aggs: a.aggs, Groups: t.Len()}
	// The table's keys are charged already; from now as the part's.
	keys := t.KeyBytes()
	a.aggs = nil
	if err := p.charge(a.cfg.Budget, keys); err != nil {
		return Part{}, false, err
	}
	return p, true, nil
}

func (a *naive) Stats() Stats {
	return Stats{SinkPhase: "aggregate", Groups: a.gs.table.Len(), Complete: a.aggs != nil || a.done, TableSlots: a.gs.table.Slots()}
}

// Close gives back the table's slots, and its keys and the states unless
// they went out as a part.
func (a *naive) Close() {
	if a.closed {
		return
	}
	a.closed = true
	t := a.gs.table
	b := a.cfg.Budget
	b.Grow(-int64(t.Slots()) * 16)
	if !a.done {
		b.Grow(-t.KeyBytes())
		for _, st := range a.gs.states {
			st.release()
		}
	}
}
