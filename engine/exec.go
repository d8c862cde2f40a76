package engine

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"cachebook/engine/agg"
	"cachebook/engine/expr"
	"cachebook/engine/vec"
)

// morselRows is the number of rows each operator step works on: small
// enough that a batch's intermediate vectors stay in the L2 cache.
const morselRows = 16384

// morsel is a range of rows of one loaded batch.
type morsel struct {
	batch      *vec.Batch
	start, end int
}

// morsels splits batches into ranges of at most morselRows rows.
func morsels(batches []*vec.Batch) []morsel {
	var ms []morsel
	for _, b := range batches {
		for s := 0; s < b.Len; s += morselRows {
			ms = append(ms, morsel{b, s, min(s+morselRows, b.Len)})
		}
	}
	return ms
}

// view returns the morsel's rows as a batch (zero copy).
func (m morsel) view() *vec.Batch {
	out := &vec.Batch{Vecs: make([]*vec.Vector, len(m.batch.Vecs)), Len: m.end - m.start}
	for i, v := range m.batch.Vecs {
		out.Vecs[i] = sliceVec(v, m.start, m.end)
	}
	return out
}

// execCtx carries what one statement's execution needs.
type execCtx struct {
	ctx    context.Context
	hooks  *Hooks
	budget *agg.Budget
	hasher *agg.Hasher
}

func (x *execCtx) phaseStart(w int, name string) {
	if x.hooks != nil && x.hooks.PhaseStart != nil {
		x.hooks.PhaseStart(w, name)
	}
}

func (x *execCtx) phaseEnd(w int, name string) {
	if x.hooks != nil && x.hooks.PhaseEnd != nil {
		x.hooks.PhaseEnd(w, name)
	}
}

// filterBatch applies the WHERE predicate to b, keeping only the needed
// columns of the rows that pass.
func filterBatch(where expr.Expr, b *vec.Batch, need []bool) (*vec.Batch, error) {
	if where == nil {
		return b, nil
	}
	pred, err := where.Eval(b)
	if err != nil {
		return nil, err
	}
	sel := expr.Select(pred, nil)
	if len(sel) == b.Len {
		return b, nil
	}
	out := &vec.Batch{Vecs: make([]*vec.Vector, len(b.Vecs)), Len: len(sel)}
	for i, v := range b.Vecs {
		if v != nil && need[i] {
			out.Vecs[i] = gather(v, sel)
		}
	}
	return out, nil
}

// evalAll evaluates exprs over b.
func evalAll(exprs []expr.Expr, b *vec.Batch) ([]*vec.Vector, error) {
	out := make([]*vec.Vector, len(exprs))
	for i, e := range exprs {
		if e == nil {
			continue
		}
		v, err := e.Eval(b)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// run executes a planned SELECT and returns its result columns.
func (s *Session) run(x *execCtx, q *query, root *PlanNode) ([]*vec.Vector, int, error) {
	// Scan.
	scanNode := q.rel.node
	start := time.Now()
	if !q.rel.computed {
		x.phaseStart(0, "scan")
	}
	batches, err := q.rel.load(x, q.need)
	if !q.rel.computed {
		x.phaseEnd(0, "scan")
	}
	if err != nil {
		return nil, 0, err
	}
	var total int64
	for _, b := range batches {
		total += int64(b.Len)
	}
	scanNode.Rows = total
	scanNode.Time = time.Since(start)
	ms := morsels(batches)

	var done atomic.Int64
	progress := func(n int) {
		d := done.Add(int64(n))
		if x.hooks != nil && x.hooks.Progress != nil {
			x.hooks.Progress(d, total)
		}
	}
	filterNode := findNode(root, "FILTER")
	var filtered atomic.Int64
	var filterTime atomic.Int64

	var outVecs []*vec.Vector
	var n int
	if q.grouped {
		outVecs, n, err = s.runGrouped(x, q, ms, progress, &filtered, &filterTime, root)
	} else {
		outVecs, n, err = s.runPlain(x, q, ms, progress, &filtered, &filterTime)
	}
	if err != nil {
		return nil, 0, err
	}
	if filterNode != nil {
		filterNode.Rows = filtered.Load()
		filterNode.Time = time.Duration(filterTime.Load())
	}
	for _, name := range []string{"LIMIT", "TOP_N", "ORDER_BY"} {
		if nd := findNode(root, name); nd != nil {
			nd.Rows = int64(n)
		}
	}
	return outVecs, n, nil
}

func findNode(n *PlanNode, name string) *PlanNode {
	if n == nil {
		return nil
	}
	if n.Name == name {
		return n
	}
	if n.Name == "SUBQUERY" {
		// A subquery's nodes belong to the query that runs it.
		return nil
	}
	for _, c := range n.Children {
		if f := findNode(c, name); f != nil {
			return f
		}
	}
	return nil
}

// runPlain executes a SELECT without aggregation: filter, project, then
// sort and cut, keeping at most a bounded buffer when LIMIT is small.
func (s *Session) runPlain(x *execCtx, q *query, ms []morsel, progress func(int), filtered, filterTime *atomic.Int64) ([]*vec.Vector, int, error) {
	acc := make([]*vec.Vector, len(q.out))
	for i, c := range q.cols {
		acc[i] = emptyVec(c.Type)
	}
	accLen := 0
	keep := int64(-1)
	if q.limit >= 0 {
		keep = q.limit + q.offset
	}
	compact := func() {
		if len(q.order) == 0 || keep < 0 || int64(accLen) <= keep {
			return
		}
		idx := sortIndices(q.sortKeys(acc), accLen, int(keep))
		for i := range acc {
			acc[i] = gather(acc[i], idx)
		}
		accLen = len(idx)
	}
	x.phaseStart(0, "project")
	defer x.phaseEnd(0, "project")
	for _, m := range ms {
		if err := x.ctx.Err(); err != nil {
			return nil, 0, err
		}
		t0 := time.Now()
		b, err := filterBatch(q.where, m.view(), q.need)
		if err != nil {
			return nil, 0, err
		}
		filtered.Add(int64(b.Len))
		filterTime.Add(int64(time.Since(t0)))
		progress(m.end - m.start)
		if b.Len == 0 {
			continue
		}
		vs, err := evalAll(q.out, b)
		if err != nil {
			return nil, 0, err
		}
		for i, v := range vs {
			acc[i].AppendVector(v)
		}
		accLen += b.Len
		if err := x.budget.Grow(0); err != nil {
			return nil, 0, err
		}
		if len(q.order) == 0 && keep >= 0 && int64(accLen) >= keep {
			break
		}
		if keep >= 0 && int64(accLen) > 4*keep+4*morselRows {
			compact()
		}
	}
	return q.finish(acc, accLen)
}

// sortKeys returns the ORDER BY keys over the projected columns.
func (q *query) sortKeys(cols []*vec.Vector) []sortKey {
	keys := make([]sortKey, len(q.order))
	for i, o := range q.order {
		keys[i] = sortKey{v: cols[o.col], desc: o.desc, nullsFirst: o.nullsFirst}
	}
	return keys
}

// finish sorts, applies OFFSET and LIMIT and drops hidden sort columns.
// The columns must belong to the query (results of its own operators, never
// a table's cached columns): they may be returned as they are.
func (q *query) finish(cols []*vec.Vector, n int) ([]*vec.Vector, int, error) {
	keep := -1
	if q.limit >= 0 {
		keep = int(q.limit + q.offset)
	}
	if len(q.order) == 0 && q.offset == 0 && (keep < 0 || keep >= n) {
		// Every row in its order: the columns, built by this query, are
		// the result as they are. Copying millions of strings here cost
		// as much as the aggregation that produced them.
		return cols[:q.nVisible], n, nil
	}
	var idx []int32
	if len(q.order) > 0 {
		idx = sortIndices(q.sortKeys(cols), n, keep)
	} else {
		end := n
		if keep >= 0 && keep < n {
			end = keep
		}
		idx = make([]int32, end)
		for i := range idx {
			idx[i] = int32(i)
		}
	}
	if int(q.offset) < len(idx) {
		idx = idx[q.offset:]
	} else {
		idx = nil
	}
	out := make([]*vec.Vector, q.nVisible)
	for i := range out {
		out[i] = gather(cols[i], idx)
	}
	return out, len(idx), nil
}

// runGrouped executes a SELECT with GROUP BY or aggregates.
func (s *Session) runGrouped(x *execCtx, q *query, ms []morsel, progress func(int), filtered, filterTime *atomic.Int64, root *PlanNode) ([]*vec.Vector, int, error) {
	var next atomic.Int64
	src := func(w int) (agg.Input, bool, error) {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(ms) {
				return agg.Input{}, false, nil
			}
			m := ms[i]
			t0 := time.Now()
			b, err := filterBatch(q.where, m.view(), q.need)
			if err != nil {
				return agg.Input{}, false, err
			}
			filtered.Add(int64(b.Len))
			filterTime.Add(int64(time.Since(t0)))
			progress(m.end - m.start)
			if b.Len == 0 {
				continue
			}
			keys, err := evalAll(q.keys, b)
			if err != nil {
				return agg.Input{}, false, err
			}
			args, err := evalAll(q.args, b)
			if err != nil {
				return agg.Input{}, false, err
			}
			return agg.Input{Keys: keys, Args: args, N: b.Len}, true, nil
		}
	}

	keyTypes := make([]vec.Type, len(q.keys))
	for i, k := range q.keys {
		keyTypes[i] = k.Type()
	}
	choice := s.chooseStrategy(q, ms, keyTypes, x.hasher)
	q.strategy = choice
	// The input size sizes the partition buffers; with a WHERE clause the
	// rows that reach the aggregation are unknown, so buffers grow instead.
	var rows int64
	if q.where == nil {
		for _, m := range ms {
			rows += int64(m.end - m.start)
		}
	}
	cfg := agg.Config{Threads: choice.threads, RadixBits: choice.bits, Budget: x.budget, Hasher: x.hasher,
		HugePages: s.settings.HugePages, Pool: s.db.pool, RowsHint: rows, Generic: s.settings.GenericAgg}
	if choice.name != "naive" {
		cfg.Strategy = agg.Radix
	}
	if x.hooks != nil {
		cfg.Observer = agg.Observer{LockThreads: x.hooks.LockThreads, WorkerStart: x.hooks.WorkerStart,
			WorkerStop: x.hooks.WorkerStop, PhaseStart: x.hooks.PhaseStart, PhaseEnd: x.hooks.PhaseEnd}
	}
	aggName := "HASH_GROUP_BY"
	if len(q.keys) == 0 {
		aggName = "UNGROUPED_AGGREGATE"
	}
	aggNode := findNode(root, aggName)
	if aggNode != nil {
		aggNode.Detail = append(aggNode.Detail, "strategy: "+choice.describe())
	}
	if x.hooks != nil && x.hooks.Aggregate != nil {
		src = x.hooks.Aggregate(AggregateInfo{KeyTypes: keyTypes, Specs: q.specs, Config: cfg}, src)
	}
	t0 := time.Now()
	out, err := agg.Aggregate(x.ctx, keyTypes, q.specs, cfg, src)
	if err != nil {
		return nil, 0, err
	}
	if aggNode != nil {
		aggNode.Rows = int64(out.Groups)
		aggNode.Time = time.Since(t0)
		phases := map[string]*PhaseStat{}
		var order []string
		for _, st := range out.Stats {
			aggNode.Workers = append(aggNode.Workers, WorkerStat{Worker: st.Worker, Phase: st.Phase, Rows: st.Rows, Time: st.Time})
			p := phases[st.Phase]
			if p == nil {
				p = &PhaseStat{Name: st.Phase}
				phases[st.Phase] = p
				order = append(order, st.Phase)
			}
			p.Rows += st.Rows
			if st.Time > p.Time {
				p.Time = st.Time // phases run in parallel: the slowest worker bounds it
			}
		}
		for _, name := range order {
			aggNode.Phases = append(aggNode.Phases, *phases[name])
		}
		aggNode.Detail = append(aggNode.Detail, fmt.Sprintf("groups: %d, largest table: %d slots", out.Groups, out.TableSlots))
	}

	b := &vec.Batch{Vecs: append(append([]*vec.Vector{}, out.Keys...), out.Aggs...), Len: out.Groups}
	if q.having != nil {
		hb, err := filterBatch(q.having, b, allTrue(len(b.Vecs)))
		if err != nil {
			return nil, 0, err
		}
		b = hb
		if nd := findNode(root, "HAVING"); nd != nil {
			nd.Rows = int64(b.Len)
		}
	}
	x.phaseStart(0, "sort")
	defer x.phaseEnd(0, "sort")
	vs, err := evalAll(q.out, b)
	if err != nil {
		return nil, 0, err
	}
	return q.finish(vs, b.Len)
}

func allTrue(n int) []bool {
	b := make([]bool, n)
	for i := range b {
		b[i] = true
	}
	return b
}

func (c strategyChoice) describe() string {
	var b strings.Builder
	b.WriteString(c.name)
	if c.name != "naive" {
		fmt.Fprintf(&b, " (%d partitions", 1<<c.bits)
		if c.threads > 1 {
			fmt.Fprintf(&b, ", %d threads", c.threads)
		}
		b.WriteString(")")
	}
	if c.why != "" {
		b.WriteString(": " + c.why)
	}
	return b.String()
}

// chooseStrategy applies the session's group_by setting. For auto it
// estimates the number of groups from the first morsels with a
// HyperLogLog sketch and compares the naive table's size with the caches.
func (s *Session) chooseStrategy(q *query, ms []morsel, keyTypes []vec.Type, h *agg.Hasher) strategyChoice {
	st := s.settings
	threads := st.Threads
	if threads < 1 {
		threads = 1
	}
	if len(keyTypes) == 0 {
		return strategyChoice{name: "naive", threads: 1, why: "no GROUP BY keys: one group"}
	}
	cache := s.db.cache
	var est groupEstimate
	var tableBytes int64
	estimate := func() {
		est = estimateGroups(q, ms, h)
		perGroup := int64(16*10/7 + 8*len(q.specs) + 8*len(keyTypes))
		tableBytes = est.groups * perGroup
	}
	// bits picks the radix bits: the setting, or enough partitions that
	// each partition's table fits in half of L2.
	bits := func() (int, string) {
		if st.RadixBits >= 0 {
			return st.RadixBits, ""
		}
		if ms == nil {
			return 12, "; radix_bits derived from the cache sizes when the query runs"
		}
		if tableBytes == 0 {
			estimate()
		}
		b := 1
		for b < 12 && tableBytes>>b > cache.L2/2 {
			b++
		}
		return b, fmt.Sprintf("; ~%d groups (HyperLogLog over %d rows) need ~%s: %d partitions keep each table within half the L2 cache (%s)",
			est.groups, est.rows, agg.FormatBytes(tableBytes), 1<<b, agg.FormatBytes(cache.L2))
	}
	switch st.GroupBy {
	case "naive":
		return strategyChoice{name: "naive", threads: 1, why: "SET group_by = 'naive'"}
	case "radix":
		b, why := bits()
		return strategyChoice{name: "radix", threads: 1, bits: b, why: "SET group_by = 'radix'" + why}
	case "parallel":
		b, why := bits()
		return strategyChoice{name: "parallel", threads: threads, bits: b, why: fmt.Sprintf("SET group_by = 'parallel', threads = %d", threads) + why}
	}
	estimate()
	threshold := cache.L3 / 2
	if tableBytes <= threshold {
		return strategyChoice{name: "naive", threads: 1, why: fmt.Sprintf("auto: ~%d groups (HyperLogLog over %d rows) need ~%s, within half the L3 cache (%s)",
			est.groups, est.rows, agg.FormatBytes(tableBytes), agg.FormatBytes(cache.L3))}
	}
	b, why := bits()
	name := "radix"
	if threads > 1 {
		name = "parallel"
	}
	return strategyChoice{name: name, threads: threads, bits: b, why: fmt.Sprintf("auto: more than half the L3 cache (%s)", agg.FormatBytes(cache.L3)) + why}
}

type groupEstimate struct {
	groups int64
	rows   int64
}

// estimateGroups sketches the distinct keys of the first million rows and
// scales the count by the fraction of rows seen when the sketch shows no
// sign of saturating.
func estimateGroups(q *query, ms []morsel, h *agg.Hasher) groupEstimate {
	var sk hll
	var rows, total int64
	for _, m := range ms {
		total += int64(m.end - m.start)
	}
	var hashes []uint64
	for _, m := range ms {
		if rows >= 1<<20 {
			break
		}
		b, err := filterBatch(q.where, m.view(), q.need)
		if err != nil || b.Len == 0 {
			rows += int64(m.end - m.start)
			continue
		}
		keys, err := evalAll(q.keys, b)
		if err != nil {
			break
		}
		if cap(hashes) < b.Len {
			hashes = make([]uint64, b.Len)
		}
		h.Hash(keys, b.Len, hashes)
		for _, x := range hashes[:b.Len] {
			sk.add(x)
		}
		rows += int64(m.end - m.start)
	}
	d := sk.estimate()
	if rows > 0 && rows < total && float64(d) > 0.5*float64(rows) {
		// Mostly distinct so far: assume the rest keeps adding groups.
		d = int64(float64(d) * float64(total) / float64(rows))
	}
	return groupEstimate{groups: d, rows: rows}
}
