package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"cachebook/engine/agg"
	"cachebook/engine/expr"
	"cachebook/engine/vec"
)

// splitDistinct builds the aggregation of a GROUP BY K with DISTINCT
// aggregates of one argument x and other, plain aggregates alongside as
// two aggregations over one scan, joined on K:
//
//   - the plain aggregates run as an ordinary GROUP BY K (sideAggOp),
//     fed by the rows as they pass on their way up: K's groups only,
//     each with its states;
//   - the DISTINCT ones run in two steps (groupedDistinct): an inner
//     GROUP BY (K, x) without states, an outer GROUP BY K;
//   - a join (distinctJoinOp) puts each group's plain aggregates next to
//     its DISTINCT ones, matching K by group identity (NULL matches NULL).
//
// One GROUP BY of both kinds would carry the plain aggregates' states (or
// inputs) per (K, x) pair, through partitions that spill: at 100M rows,
// ClickBench's Q9 spilled 4.7 GB that way, where the split's inner GROUP
// BY carries (K, x) alone and the plain aggregates keep a state per group
// of K. The query must split (splitsDistinct).
func (s *Session) splitDistinct(q *query, child operator, hint int64) (inner *hashAggOp, top operator, err error) {
	dq, plainSpecs, plainArgs, plainNames, from, ok := splitQuery(q)
	if !ok {
		return nil, nil, errors.New("internal error: the query does not split")
	}
	x, _ := groupedDistinctArg(dq)
	dq.rewritten = 0 // sum_rewrite rewrote plain sums, which the side computes
	side := &sideAggOp{opBase: opBase{label: "HASH_GROUP_BY", children: []operator{child}},
		keys: q.keys, keyNames: q.keyNames, args: plainArgs, specs: plainSpecs, aggNames: plainNames,
		settings: s.settings}
	inner, dtop, err := s.groupedDistinct(dq, x, side, hint)
	if err != nil {
		return nil, nil, err
	}
	keyList := strings.Join(q.keyNames, ", ")
	if len(q.keys) > 1 {
		keyList = "(" + keyList + ")"
	}
	inner.notes = append(inner.notes, fmt.Sprintf("no other aggregate: %s run per %s in the GROUP BY below, as the rows pass",
		strings.Join(plainNames, ", "), keyList))
	outTypes := make([]vec.Type, len(q.specs))
	for i, sp := range q.specs {
		outTypes[i] = sp.OutType()
	}
	join := &distinctJoinOp{opBase: opBase{label: "GROUP_JOIN", children: []operator{dtop}},
		side: side, nk: len(q.keys), from: from, outTypes: outTypes, keyList: keyList,
		distinctNames: dq.aggNames, plainNames: plainNames}
	return inner, join, nil
}

// splitsDistinct reports whether splitDistinct applies to q.
func splitsDistinct(q *query) bool {
	_, _, _, _, _, ok := splitQuery(q)
	return ok
}

// splitQuery splits the aggregates of q into its DISTINCT ones, returned
// as a query of its own, and its plain ones; from says where each of q's
// aggregates went. ok is false where the split does not apply: no keys,
// no plain aggregate, DISTINCT aggregates of several arguments, or a
// plain aggregate whose states cannot merge across workers.
func splitQuery(q *query) (dq *query, plainSpecs []agg.Spec, plainArgs []expr.Expr, plainNames []string, from []splitCol, ok bool) {
	if len(q.keys) == 0 || len(q.aggCalls) != len(q.specs) {
		return nil, nil, nil, nil, nil, false
	}
	for _, k := range q.keys {
		if k.Type() == vec.Null {
			return nil, nil, nil, nil, nil, false
		}
	}
	d := *q // the DISTINCT aggregates alone
	dq = &d
	dq.specs, dq.args, dq.aggCalls, dq.aggNames = nil, nil, nil, nil
	from = make([]splitCol, len(q.specs))
	for i, sp := range q.specs {
		if sp.Kind == agg.CountDistinct || sp.Distinct {
			from[i] = splitCol{distinct: true, col: len(dq.specs)}
			dq.specs = append(dq.specs, sp)
			dq.args = append(dq.args, q.args[i])
			dq.aggCalls = append(dq.aggCalls, q.aggCalls[i])
			dq.aggNames = append(dq.aggNames, q.aggNames[i])
			continue
		}
		from[i] = splitCol{col: len(plainSpecs)}
		plainSpecs = append(plainSpecs, sp)
		plainArgs = append(plainArgs, q.args[i])
		plainNames = append(plainNames, q.aggNames[i])
	}
	if len(plainSpecs) == 0 || len(dq.specs) == 0 || agg.NaiveWorkers(plainSpecs, 2) < 2 {
		return nil, nil, nil, nil, nil, false
	}
	if _, ok := groupedDistinctArg(dq); !ok {
		return nil, nil, nil, nil, nil, false
	}
	return dq, plainSpecs, plainArgs, plainNames, from, true
}

// splitCol says where one aggregate of a split query comes from: the
// DISTINCT side's column col (after the keys), or the plain side's.
type splitCol struct {
	distinct bool
	col      int
}

// sideAggOp computes the plain aggregates of a split DISTINCT query
// (splitDistinct) per group of its keys from the rows that pass through
// it on their way to the GROUP BY above: it hands every batch on as it
// came, after sinking it into an aggregator of its own (radix, with a
// partition writer per worker, spilling under the memory limit as any
// GROUP BY's). Its groups are read by the join above the DISTINCT
// aggregation once the rows have all passed.
type sideAggOp struct {
	opBase
	keys     []expr.Expr
	keyNames []string
	args     []expr.Expr
	specs    []agg.Spec
	aggNames []string
	settings Settings

	once     sync.Once
	startErr error
	ag       agg.Aggregator
	budget   *agg.Budget
	workers  int

	space lazySpace

	// After finish: the groups, their keys' encodings to their rows, and
	// what the aggregator did.
	finished bool
	out      []*vec.Vector // keys, then aggregates
	held     int64         // the charge of out
	index    map[string]int32
	groups   int
	spilled  agg.SpillStats
	preAgg   agg.PreAggStats
}

func (s *sideAggOp) detail() []string {
	d := []string{"keys: " + strings.Join(s.keyNames, ", ")}
	for _, n := range s.aggNames {
		d = append(d, "aggregate: "+n)
	}
	d = append(d, "the rows pass on to the GROUP BY above; the groups go to the GROUP_JOIN at the top")
	if s.finished {
		d = append(d, fmt.Sprintf("groups: %d", s.groups))
		if line := s.preAgg.Describe(); line != "" {
			d = append(d, line)
		}
		if sp := s.spilled; sp.Partitions > 0 {
			d = append(d, fmt.Sprintf("spilled: %d partitions, %s", sp.Partitions, agg.FormatBytes(sp.Bytes)))
		}
	}
	return d
}

// start makes the aggregator, once: a radix aggregation with a writer
// per worker slot (the estimate's worker 0 and workers 1 to threads).
func (s *sideAggOp) start(x *execCtx) error {
	s.once.Do(func() {
		s.budget = &agg.Budget{Parent: x.budget, Observe: s.stats.addMem}
		s.workers = max(s.settings.Threads, 1) + 1
		// Few partitions, sized as they fill: the pre-aggregation
		// folds the rows of a few groups (ClickBench's Q9: 8,000 regions
		// over 100M rows) into its tables, and the partitions see little.
		bits := s.settings.RadixBits
		if bits < 0 {
			bits = 4
		}
		cfg := agg.Config{Strategy: agg.Radix, Threads: s.workers, RadixBits: bits, HugePages: s.settings.HugePages,
			Generic: true, Budget: s.budget, Hasher: x.hasher, Pool: x.s.db.pool}
		if !s.settings.PreAggregate {
			cfg.PreAggGroups = -1
		}
		s.space.st, s.space.place = s.settings, x.s.db.spillPlace()
		cfg.Spill = s.space.open
		if l := x.budget.Limit; l > 0 {
			cfg.SpillAt = sideShare(l)
		}
		kt := make([]vec.Type, len(s.keys))
		for i, k := range s.keys {
			kt[i] = k.Type()
		}
		s.ag, s.startErr = agg.New(kt, s.specs, agg.Generic, cfg)
	})
	return s.startErr
}

// sink folds b into worker w's share of the groups.
func (s *sideAggOp) sink(x *execCtx, w int, b *vec.Batch) error {
	if b == nil || b.Len == 0 {
		return nil
	}
	if err := s.start(x); err != nil {
		return err
	}
	if w < 0 || w >= s.workers {
		return fmt.Errorf("internal error: worker %d of a GROUP BY with %d", w, s.workers)
	}
	t0 := time.Now()
	defer s.stats.since(t0)
	s.stats.rowsIn.Add(int64(b.Len))
	keys, err := evalAll(x, s, s.keys, b)
	if err != nil {
		return err
	}
	args, err := evalAll(x, s, s.args, b)
	if err != nil {
		return err
	}
	var temp int64
	for i, k := range s.keys {
		if !isColumnRef(k) {
			temp += vecBytes(keys[i : i+1])
		}
	}
	for i, e := range s.args {
		if e != nil && !isColumnRef(e) {
			temp += vecBytes(args[i : i+1])
		}
	}
	if err := x.fits(s, temp); err != nil {
		return err
	}
	if err := s.ag.Sink(w, agg.Input{Keys: keys, Args: args, N: b.Len}); err != nil {
		return fmt.Errorf("%s: %w", s.label, err)
	}
	return nil
}

func (s *sideAggOp) next(x *execCtx, w int) (*vec.Batch, error) {
	b, err := s.children[0].next(x, w)
	if err != nil || b == nil {
		return b, err
	}
	s.stats.rowsOut.Add(int64(b.Len))
	if err := s.sink(x, w, b); err != nil {
		return nil, err
	}
	return b, nil
}

// drain hands on the rest of the row group the scan below stopped in on
// worker from (see hashAggOp.source), sinking it as next does: the
// caller holds a lock, and worker from reads no more.
func (s *sideAggOp) drain(x *execCtx, from int) (*vec.Batch, error) {
	d, ok := s.children[0].(drainer)
	if !ok {
		return nil, nil
	}
	b, err := d.drain(x, from)
	if err != nil || b == nil {
		return b, err
	}
	s.stats.rowsOut.Add(int64(b.Len))
	if err := s.sink(x, from, b); err != nil {
		return nil, err
	}
	return b, nil
}

// finish computes the groups once every row has passed: all of them, in
// one set of vectors indexed by their keys.
func (s *sideAggOp) finish(x *execCtx) error {
	if s.finished {
		return nil
	}
	if err := s.start(x); err != nil {
		return err
	}
	t0 := time.Now()
	defer s.stats.since(t0)
	for w := range s.workers {
		if err := s.ag.Flush(w); err != nil {
			return fmt.Errorf("%s: %w", s.label, err)
		}
	}
	if err := s.ag.Finalize(x.ctx); err != nil {
		return fmt.Errorf("%s: %w", s.label, err)
	}
	ncols := len(s.keys) + len(s.specs)
	cols := make([][]*vec.Vector, ncols)
	var partBytes int64
	defer func() { s.budget.Grow(-partBytes) }()
	n := 0
	for {
		p, ok, err := s.ag.Next(x.ctx, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", s.label, err)
		}
		if !ok {
			break
		}
		partBytes += p.Bytes
		n += p.Groups
		for i, v := range slices.Concat(p.Keys, p.Aggs) {
			cols[i] = append(cols[i], v)
		}
	}
	out := make([]*vec.Vector, ncols)
	for i := range out {
		t := vec.Null
		if i < len(s.keys) {
			t = s.keys[i].Type()
		} else {
			t = s.specs[i-len(s.keys)].OutType()
		}
		v, err := vec.Concat(t, cols[i])
		if err != nil {
			return fmt.Errorf("%s: %w", s.label, err)
		}
		out[i] = v
	}
	// The copy, and the index: a key encoding and an entry per group.
	held := vecBytes(out) + int64(n)*48
	keys := out[:len(s.keys)]
	for i := range n {
		held += int64(keyLen(keys, i))
	}
	if err := s.budget.Grow(held); err != nil {
		return fmt.Errorf("%s: %w", s.label, err)
	}
	s.held = held
	st := s.ag.Stats()
	s.preAgg = st.PreAgg
	if sp, ok := s.ag.(interface{ SpillStats() agg.SpillStats }); ok {
		s.spilled = sp.SpillStats()
	}
	s.ag.Close()
	s.ag = nil
	s.space.close()
	s.index = make(map[string]int32, n)
	var buf []byte
	for i := range n {
		buf = encodeKey(buf[:0], keys, i)
		if _, dup := s.index[string(buf)]; dup {
			return fmt.Errorf("internal error: %s: group %d twice", s.label, i)
		}
		s.index[string(buf)] = int32(i)
	}
	s.out, s.groups, s.finished = out, n, true
	return nil
}

func (s *sideAggOp) close(x *execCtx) {
	if s.ag != nil {
		s.ag.Close()
		s.ag = nil
	}
	s.space.close()
	if s.budget != nil {
		s.budget.Grow(-s.held)
	}
	s.held, s.out, s.index = 0, nil, nil
}

// keyLen is the length of encodeKey's encoding of row i of keys.
func keyLen(keys []*vec.Vector, i int) int {
	n := 0
	for _, k := range keys {
		n++
		if k.IsNull(i) {
			continue
		}
		if k.Type == vec.String {
			n += 4 + len(k.Str(i))
		} else {
			n += 8
		}
	}
	return n
}

// encodeKey appends an encoding of row i of keys to buf that is equal for
// two rows exactly when they are the same group: NULL is a value of its
// own, and floats are compared as the GROUP BY compares them (-0 is 0,
// every NaN one NaN).
func encodeKey(buf []byte, keys []*vec.Vector, i int) []byte {
	for _, k := range keys {
		if k.IsNull(i) {
			buf = append(buf, 0)
			continue
		}
		buf = append(buf, 1)
		switch {
		case k.Type == vec.String:
			s := k.Str(i)
			buf = binary.LittleEndian.AppendUint32(buf, uint32(len(s)))
			buf = append(buf, s...)
		case k.Type.IsFloat():
			buf = binary.LittleEndian.AppendUint64(buf, agg.FloatBits(k.F64[i]))
		default:
			buf = binary.LittleEndian.AppendUint64(buf, uint64(k.I64[i]))
		}
	}
	return buf
}

// distinctJoinOp puts the plain aggregates of a split DISTINCT query
// (splitDistinct), which its side computed, next to the DISTINCT ones its
// child hands on, group by group: the output is the keys, then the
// query's aggregates in its order, as a single GROUP BY's.
type distinctJoinOp struct {
	opBase
	side          *sideAggOp
	nk            int
	from          []splitCol
	outTypes      []vec.Type
	keyList       string
	distinctNames []string
	plainNames    []string

	held int64 // the charge of the batch handed out last
}

func (j *distinctJoinOp) detail() []string {
	return []string{
		fmt.Sprintf("per %s: %s from the GROUP BY below, %s from the one that read the rows on their way (matched by group, NULL keys too)",
			j.keyList, strings.Join(j.distinctNames, ", "), strings.Join(j.plainNames, ", ")),
	}
}

func (j *distinctJoinOp) next(x *execCtx, w int) (*vec.Batch, error) {
	x.release(j, j.held)
	j.held = 0
	b, err := j.children[0].next(x, w)
	if err != nil || b == nil {
		return nil, err
	}
	// The DISTINCT aggregation's first groups come after its input's
	// last row: the side has seen every row.
	if err := j.side.finish(x); err != nil {
		return nil, err
	}
	t0 := time.Now()
	defer j.stats.since(t0)
	j.stats.rowsIn.Add(int64(b.Len))
	keys := b.Vecs[:j.nk]
	sel := make([]int32, b.Len)
	var buf []byte
	for i := range b.Len {
		buf = encodeKey(buf[:0], keys, i)
		r, ok := j.side.index[string(buf)]
		if !ok {
			return nil, errors.New("internal error: a group of the DISTINCT aggregation has no plain aggregates")
		}
		sel[i] = r
	}
	out := &vec.Batch{Vecs: slices.Clone(keys), Len: b.Len}
	var held int64
	for i, f := range j.from {
		if f.distinct {
			out.Vecs = append(out.Vecs, b.Vecs[j.nk+f.col])
			continue
		}
		v := j.side.out[j.nk+f.col].Gather(sel)
		v.Type = j.outTypes[i]
		held += vecBytes([]*vec.Vector{v})
		out.Vecs = append(out.Vecs, v)
	}
	if err := x.grow(j, held); err != nil {
		return nil, err
	}
	j.held = held
	j.stats.rowsOut.Add(int64(b.Len))
	return out, nil
}

func (j *distinctJoinOp) close(x *execCtx) {
	x.release(j, j.held)
	j.held = 0
}
