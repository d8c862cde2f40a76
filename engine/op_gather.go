package engine

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"cachebook/engine/vec"
)

// gatherOp runs a filtered table scan and the projection above it on
// several workers and hands the batches on in the table's order. Without
// it a plain SELECT … WHERE (no aggregate, ORDER BY or LIMIT) read the
// whole table on the statement's goroutine alone. Each batch comes from
// one morsel of one row group and carries, as its last (hidden) column,
// the positions of its rows, increasing; the batches are put in the order
// of their first positions, which is the order one worker reading the
// table from its start would have given.
type gatherOp struct {
	opBase
	threads int

	mu      sync.Mutex // next may be called by any worker
	done    bool
	batches []*vec.Batch // in the table's order once run
	held    []int64      // each batch's charge, released as it is handed on
	at      int
}

func (g *gatherOp) detail() []string {
	return []string{fmt.Sprintf("input: %d workers; batches handed on in the table's order", g.threads)}
}

func (g *gatherOp) next(x *execCtx, w int) (*vec.Batch, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.done {
		g.done = true
		if err := g.run(x); err != nil {
			return nil, err
		}
	}
	if g.at == len(g.batches) {
		return nil, nil
	}
	b := g.batches[g.at]
	x.release(g, g.held[g.at])
	g.batches[g.at], g.held[g.at] = nil, 0
	g.at++
	g.stats.rowsOut.Add(int64(b.Len))
	return b, nil
}

func (g *gatherOp) run(x *execCtx) error {
	child := g.children[0]
	var mu sync.Mutex
	var failed atomic.Bool
	type ordered struct {
		first int64
		b     *vec.Batch
		n     int64
	}
	var got []ordered
	ws, err := x.runWorkers(g.threads, workerPhase{name: "scan", run: func(w, _ int) (int64, time.Duration, error) {
		var rows int64
		for !failed.Load() {
			if err := x.ctx.Err(); err != nil {
				failed.Store(true)
				return rows, 0, err
			}
			b, err := child.next(x, w)
			if err != nil {
				failed.Store(true)
				return rows, 0, err
			}
			if b == nil {
				return rows, 0, nil
			}
			if b.Len == 0 {
				continue
			}
			rows += int64(b.Len)
			n := liveBytes(b.Vecs)
			if err := x.grow(g, n); err != nil {
				failed.Store(true)
				return rows, 0, err
			}
			pos := b.Vecs[len(b.Vecs)-1]
			mu.Lock()
			got = append(got, ordered{first: pos.I64[0], b: b, n: n})
			mu.Unlock()
		}
		return rows, 0, nil
	}})
	g.stats.mu.Lock()
	g.stats.workers = ws
	g.stats.mu.Unlock()
	if err != nil {
		for _, o := range got {
			x.release(g, o.n)
		}
		return err
	}
	slices.SortFunc(got, func(a, b ordered) int { return cmp.Compare(a.first, b.first) })
	g.batches = make([]*vec.Batch, len(got))
	g.held = make([]int64, len(got))
	for i, o := range got {
		g.batches[i], g.held[i] = o.b, o.n
		g.stats.rowsIn.Add(int64(o.b.Len))
	}
	return nil
}

// close releases what was not handed on.
func (g *gatherOp) close(x *execCtx) {
	for i := g.at; i < len(g.held); i++ {
		x.release(g, g.held[i])
		g.held[i] = 0
	}
}
