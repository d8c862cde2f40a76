package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"cachebook/engine/agg"
	"cachebook/engine/expr"
	"cachebook/engine/vec"
)

// denseKeys reports whether the two-step DISTINCT aggregation of q (its
// aggregates all DISTINCT) groups dense ids of its keys rather than the
// keys: where a key is a string, whose bytes the inner GROUP BY's
// partitions would copy with every row (ClickBench's Q10 and Q11, 32 to
// 200 phone models over millions of rows).
func (s *Session) denseKeys(q *query) bool {
	if s.noDenseKeys || s.replan.noDense {
		return false
	}
	for _, sp := range q.specs {
		if sp.Kind != agg.CountDistinct && !sp.Distinct {
			return false
		}
	}
	for _, k := range q.keys {
		if k.Type() == vec.String {
			s.replan.dense = true
			return true
		}
	}
	return false
}

// maxDenseIDs is the most ids a denseKeyOp gives. Many groups of a
// string key (Q13's search phrases: millions) take a map probe per row
// that misses the caches, which cost more than the inner GROUP BY's
// partitions save (Q13 at 20M rows: 3.5 s user against 1.0 s): past
// this many, the statement runs again grouping the keys themselves
// (retryWithoutDenseKeys). A morsel or two is read twice.
const maxDenseIDs = 1 << 16

// errDenseIDs is the error of a denseKeyOp past its most ids, or past
// the memory limit with them.
var errDenseIDs = errors.New("too many groups for dense ids")

// retryWithoutDenseKeys reports whether a statement that failed with err
// is to be planned and run again without dense ids: its keys passed
// maxDenseIDs or an eighth of the memory limit, or passed the limit
// (with the memory the ids held). It sets the session to plan so for the
// rest of the statement (Session.replan).
func (s *Session) retryWithoutDenseKeys(ctx context.Context, err error) bool {
	if ctx.Err() != nil || !errors.Is(err, errDenseIDs) && !(s.replan.dense && errors.Is(err, ErrMemoryLimit)) {
		return false
	}
	s.replan.noDense = true
	s.notes = append(s.notes, fmt.Sprintf("a COUNT(DISTINCT) GROUP BY had more groups of its string keys than dense ids serve (%d, or what fits in memory_limit): ran again grouping the keys, not dense ids of them", maxDenseIDs))
	return true
}

// denseKeyOp numbers the groups of its keys as the rows pass, from 0 in
// the order they are first seen, and hands on each batch as two columns:
// the id of each row's keys (INTEGER) and x, the argument of the DISTINCT
// aggregates. The GROUP BYs above group the ids, fixed-width, where they
// would group the keys, and denseAttachOp puts the keys' values back by
// id at the top. The ids are kept in one map of the keys' encodings
// (encodeKey: NULL a value of its own), read under a shared lock and
// added to under the lock; the keys' values are kept by id. Both are
// charged to the statement's budget.
type denseKeyOp struct {
	opBase
	keys     []expr.Expr
	keyNames []string
	x        expr.Expr
	max      int // the most ids it gives (maxDenseIDs)

	mu  sync.RWMutex
	ids map[string]int32
	// byString is ids by the value of a lone string key, NULL aside.
	byString map[string]int32
	dict     []*vec.Vector // per key: its values by id
	held     int64         // the charge of ids and dict
	given    int           // the ids given, kept after close for EXPLAIN ANALYZE
}

func (d *denseKeyOp) detail() []string {
	out := []string{
		fmt.Sprintf("dense ids of (%s), numbered as first seen: the GROUP BYs above group the ids, fixed-width, not the keys' bytes",
			strings.Join(d.keyNames, ", ")),
		"hands on: the id, " + d.x.String(),
		fmt.Sprintf("at most %d ids, within memory_limit: past them, the statement runs again grouping the keys", d.max),
	}
	if n := d.groups(); n > 0 {
		out = append(out, fmt.Sprintf("ids: %d", n))
	}
	return out
}

// groups is the number of ids given so far.
func (d *denseKeyOp) groups() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.given
}

func (d *denseKeyOp) next(x *execCtx, w int) (*vec.Batch, error) {
	b, err := d.children[0].next(x, w)
	if err != nil || b == nil {
		return b, err
	}
	return d.convert(x, b)
}

// drain hands on the rest of the row group the scan below stopped in on
// worker from (see hashAggOp.source), converted as next converts.
func (d *denseKeyOp) drain(x *execCtx, from int) (*vec.Batch, error) {
	dr, ok := d.children[0].(drainer)
	if !ok {
		return nil, nil
	}
	b, err := dr.drain(x, from)
	if err != nil || b == nil {
		return b, err
	}
	return d.convert(x, b)
}

// convert returns the ids of b's keys and x over b.
func (d *denseKeyOp) convert(x *execCtx, b *vec.Batch) (*vec.Batch, error) {
	t0 := time.Now()
	defer d.stats.since(t0)
	d.stats.rowsIn.Add(int64(b.Len))
	if b.Len == 0 {
		return &vec.Batch{Vecs: []*vec.Vector{vec.NewVector(vec.Int32, 0), vec.NewVector(d.x.Type(), 0)}}, nil
	}
	keys, err := evalAll(x, d, d.keys, b)
	if err != nil {
		return nil, err
	}
	xs, err := evalAll(x, d, []expr.Expr{d.x}, b)
	if err != nil {
		return nil, err
	}
	// The keys and x that are not the scan's columns, and the ids, live
	// until the consumer asks again: checked against the budget, as a
	// hash aggregate's evaluated input.
	temp := int64(b.Len) * 8
	for i, k := range d.keys {
		if !isColumnRef(k) {
			temp += vecBytes(keys[i : i+1])
		}
	}
	if !isColumnRef(d.x) {
		temp += vecBytes(xs)
	}
	if err := x.fits(d, temp); err != nil {
		return nil, err
	}
	ids := make([]int64, b.Len)
	var miss []int
	d.mu.RLock()
	if k := keys[0]; len(keys) == 1 && k.Type == vec.String && k.Valid == nil {
		// One string key without NULLs (Q10's): its bytes are the
		// encoding but for encodeKey's prefix, looked up in place.
		for i := range b.Len {
			s := k.Bytes[k.Offsets[i]:k.Offsets[i+1]]
			id, ok := d.byString[string(s)]
			if !ok {
				miss = append(miss, i)
				continue
			}
			ids[i] = int64(id)
		}
	} else {
		var buf []byte
		for i := range b.Len {
			buf = encodeKey(buf[:0], keys, i)
			id, ok := d.ids[string(buf)]
			if !ok {
				miss = append(miss, i)
				continue
			}
			ids[i] = int64(id)
		}
	}
	d.mu.RUnlock()
	if len(miss) > 0 {
		if err := d.add(x, keys, miss, ids); err != nil {
			return nil, err
		}
	}
	d.stats.rowsOut.Add(int64(b.Len))
	return &vec.Batch{Vecs: []*vec.Vector{{Type: vec.Int32, I64: ids, Len: b.Len}, xs[0]}, Len: b.Len}, nil
}

// add gives the keys of rows the ids they lack, new ones where no other
// row has them, and records the new ids' values.
func (d *denseKeyOp) add(x *execCtx, keys []*vec.Vector, rows []int, ids []int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ids == nil {
		d.ids, d.byString = map[string]int32{}, map[string]int32{}
		d.dict = make([]*vec.Vector, len(keys))
		for i, k := range keys {
			d.dict[i] = vec.NewVector(k.Type, 0)
		}
	}
	var buf []byte
	for _, i := range rows {
		buf = encodeKey(buf[:0], keys, i)
		id, ok := d.ids[string(buf)]
		if !ok {
			if len(d.ids) >= d.max {
				return fmt.Errorf("%s: %w", d.label, errDenseIDs)
			}
			// A map entry, its key, and the values kept.
			n := int64(48 + len(buf))
			for _, k := range keys {
				n += 8
				if k.Type == vec.String {
					n += int64(len(k.Str(i)))
				}
			}
			if err := d.grow(x, n); err != nil {
				return err
			}
			id = int32(len(d.ids))
			d.ids[string(buf)] = id
			d.given++
			if len(keys) == 1 && keys[0].Type == vec.String && !keys[0].IsNull(i) {
				n := int64(48 + len(keys[0].Str(i)))
				if err := d.grow(x, n); err != nil {
					return err
				}
				d.byString[string(keys[0].Str(i))] = id
			}
			for j, k := range keys {
				d.dict[j].AppendFrom(k, i)
			}
		}
		ids[i] = int64(id)
	}
	return nil
}

// grow charges n more bytes of the map and the values. Where they do
// not fit, the keys are better grouped themselves, by GROUP BYs that
// spill: it fails with errDenseIDs.
func (d *denseKeyOp) grow(x *execCtx, n int64) error {
	if l := x.budget.Limit; l > 0 && d.held+n > l/8 {
		return fmt.Errorf("%s: %w (an eighth of memory_limit)", d.label, errDenseIDs)
	}
	if err := x.grow(d, n); err != nil {
		if errors.Is(err, ErrMemoryLimit) {
			return fmt.Errorf("%s: %w (%v)", d.label, errDenseIDs, err)
		}
		return err
	}
	d.held += n
	return nil
}

func (d *denseKeyOp) close(x *execCtx) {
	d.mu.Lock()
	defer d.mu.Unlock()
	x.release(d, d.held)
	d.held, d.ids, d.byString, d.dict = 0, nil, nil, nil
}

// denseAttachOp hands on its child's groups with the dense id in their
// first column replaced by the values of the keys it numbers
// (denseKeyOp).
type denseAttachOp struct {
	opBase
	dense *denseKeyOp
	held  int64 // the charge of the keys handed out last
}

func (a *denseAttachOp) detail() []string {
	return []string{"the values of (" + strings.Join(a.dense.keyNames, ", ") + ") put back by their ids"}
}

func (a *denseAttachOp) next(x *execCtx, w int) (*vec.Batch, error) {
	x.release(a, a.held)
	a.held = 0
	b, err := a.children[0].next(x, w)
	if err != nil || b == nil {
		return nil, err
	}
	t0 := time.Now()
	defer a.stats.since(t0)
	a.stats.rowsIn.Add(int64(b.Len))
	ids := b.Vecs[0]
	sel := make([]int32, b.Len)
	d := a.dense
	d.mu.RLock()
	defer d.mu.RUnlock()
	for i := range b.Len {
		id := ids.I64[i]
		if ids.IsNull(i) || id < 0 || int(id) >= len(d.ids) {
			return nil, fmt.Errorf("internal error: dense id %d of %d", id, len(d.ids))
		}
		sel[i] = int32(id)
	}
	out := &vec.Batch{Len: b.Len}
	var held int64
	for _, v := range d.dict {
		g := v.Gather(sel)
		held += vecBytes([]*vec.Vector{g})
		out.Vecs = append(out.Vecs, g)
	}
	out.Vecs = append(out.Vecs, b.Vecs[1:]...)
	if err := x.grow(a, held); err != nil {
		return nil, err
	}
	a.held = held
	a.stats.rowsOut.Add(int64(b.Len))
	return out, nil
}

func (a *denseAttachOp) close(x *execCtx) {
	x.release(a, a.held)
	a.held = 0
}
