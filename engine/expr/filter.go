package expr

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// Filter is a WHERE clause compiled for selecting rows. Its AND-ed
// conjuncts are evaluated one after another into a selection vector: the
// first over every row of a batch, each next one only over the rows still
// selected, so a selective first conjunct makes the others nearly free.
// The common conjuncts — a column compared with a constant (= <> < <= > >=),
// [NOT] IN a list of constants, [NOT] LIKE a constant pattern, IS [NOT]
// NULL, a BOOLEAN column — run as typed loops over the column's own slice
// and allocate nothing; the cheapest of them run first. Any other conjunct
// is evaluated with Eval over the whole batch, as before, and intersected
// with the selection. The order adapts to what is measured: conjuncts
// that are cheap and drop many rows move first.
//
// A row passes when every conjunct is true: NULL never passes, as with
// Eval and Select. A Filter may be used by several goroutines at once
// (its measurements are atomic), each with its own FilterScratch. A
// conjunct that would fail with an error may not be evaluated at all when
// the conjuncts before it select no row, as in DuckDB.
type Filter struct {
	conjs []conjunct
	// Adaptive order, as DuckDB's adaptive filter: each conjunct's time,
	// rows in and rows out are measured, and every reorderEvery calls the
	// conjuncts are reordered by time per row over the fraction of rows
	// they drop (the order that minimises the expected work of
	// independent conjuncts). order is the current order; its slice is
	// replaced, never modified.
	stats []conjStat
	order atomic.Pointer[[]int]
	calls atomic.Int64
}

// conjStat is what Select measured of one conjunct since the last
// reordering.
type conjStat struct {
	nanos, in, out atomic.Int64
}

// reorderEvery is how many Select calls pass between reorderings.
const reorderEvery = 64

// FilterScratch is one worker's reusable memory for Filter.Select.
type FilterScratch struct {
	sel []int32
}

// conjKind is how a conjunct is evaluated.
type conjKind uint8

const (
	conjCmp     conjKind = iota // x op constant
	conjIn                      // x [NOT] IN (constants)
	conjLike                    // x [NOT] LIKE constant pattern
	conjIsNull                  // x IS NULL
	conjNotNull                 // x IS NOT NULL
	conjNone                    // never true (a comparison with NULL)
	conjEval                    // anything else: Eval, then intersect
)

// conjunct is one AND-ed term of a Filter.
type conjunct struct {
	kind conjKind
	x    Expr // the operand (widening casts removed), or the whole term for conjEval
	op   sql.Op
	lane cmpLane
	i    int64   // laneInt, laneUint constant
	f    float64 // laneFloat constant
	s    []byte  // laneStr constant
	in   *inSet
	like *likeMatcher
	not  bool // NOT LIKE
	cost int  // relative cost per row, for the order
}

// NewFilter compiles the predicate e (a BOOLEAN expression) for Select.
func NewFilter(e Expr) *Filter {
	return NewFilterOf(Conjuncts(e))
}

// NewFilterOf compiles the conjunction of the BOOLEAN terms for Select.
func NewFilterOf(terms []Expr) *Filter {
	f := &Filter{}
	for _, t := range terms {
		f.conjs = append(f.conjs, compileConjunct(t))
	}
	slices.SortStableFunc(f.conjs, func(a, b conjunct) int { return a.cost - b.cost })
	f.stats = make([]conjStat, len(f.conjs))
	order := make([]int, len(f.conjs))
	for i := range order {
		order[i] = i
	}
	f.order.Store(&order)
	return f
}

// reorder sorts the conjuncts by their measured rank and restarts the
// measurements. A conjunct not yet measured keeps its place.
func (f *Filter) reorder() {
	old := *f.order.Load()
	rank := make([]float64, len(f.conjs))
	for i := range f.stats {
		st := &f.stats[i]
		in, out, ns := st.in.Load(), st.out.Load(), st.nanos.Load()
		if in == 0 { // never reached: stays behind the measured ones
			rank[i] = math.Inf(1)
			continue
		}
		drop := 1 - float64(out)/float64(in)
		rank[i] = float64(ns) / float64(in) / max(drop, 1e-3)
	}
	order := slices.Clone(old)
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rank[a], rank[b]) })
	for i := range f.stats {
		f.stats[i].nanos.Store(0)
		f.stats[i].in.Store(0)
		f.stats[i].out.Store(0)
	}
	f.order.Store(&order)
}

// Conjuncts returns the AND-ed terms of e (e itself when it is no AND).
func Conjuncts(e Expr) []Expr { return splitAnd(e, nil) }

// splitAnd appends the AND-ed terms of e to out.
func splitAnd(e Expr, out []Expr) []Expr {
	if g, ok := e.(*logic); ok && !g.or {
		return splitAnd(g.r, splitAnd(g.l, out))
	}
	return append(out, e)
}

// peel removes the casts around x that only relabel its values (widening
// integer casts, FLOAT → DOUBLE): a comparison reads the same slice.
func peel(x Expr) Expr {
	for {
		c, ok := x.(*cast)
		if !ok || !relabels(c.x.Type(), c.to) {
			return x
		}
		x = c.x
	}
}

// relabels reports whether CastVector from → to returns the same values
// in the same storage.
func relabels(from, to vec.Type) bool {
	return widens(from, to) || from == vec.Float32 && to == vec.Float64
}

func compileConjunct(t Expr) conjunct {
	generic := conjunct{kind: conjEval, x: t, cost: 100}
	switch n := t.(type) {
	case *compare:
		l, r, op := n.l, n.r, n.op
		if _, ok := l.(*Const); ok {
			l, r, op = r, l, flip(op)
		}
		k, ok := r.(*Const)
		if !ok {
			return generic
		}
		if _, lc := l.(*Const); lc {
			return generic // folded at bind time; keep Eval's semantics
		}
		if k.IsNull() {
			return conjunct{kind: conjNone}
		}
		c := conjunct{kind: conjCmp, x: peel(l), op: op, lane: n.lane}
		switch n.lane {
		case laneInt, laneUint:
			c.i, c.cost = k.Int(), 1
		case laneFloat:
			c.f, c.cost = k.Float(), 1
		case laneStr:
			c.s, c.cost = k.V.Str(0), 3
			if op != sql.OpEq && op != sql.OpNe {
				c.cost = 5
			}
		}
		if _, col := c.x.(*ColumnRef); !col {
			c.cost += 20 // the operand is computed over the whole batch
		}
		return c
	case *inSet:
		c := conjunct{kind: conjIn, x: peel(n.x), in: n, cost: 2}
		if n.intSet != nil || n.lane == laneStr {
			c.cost = 4
		}
		if _, col := c.x.(*ColumnRef); !col {
			c.cost += 20
		}
		return c
	case *like:
		if n.m == nil || n.ci {
			return generic
		}
		c := conjunct{kind: conjLike, x: n.x, like: n.m, not: n.not, cost: 8}
		if _, col := c.x.(*ColumnRef); !col {
			c.cost += 20
		}
		return c
	case *isNull:
		c := conjunct{kind: conjIsNull, x: n.x, cost: 1}
		if n.not {
			c.kind = conjNotNull
		}
		if _, col := c.x.(*ColumnRef); !col {
			c.cost += 20
		}
		return c
	case *ColumnRef:
		if n.T == vec.Bool {
			return conjunct{kind: conjCmp, x: n, op: sql.OpNe, lane: laneInt, cost: 1}
		}
	}
	return generic
}

// String renders the filter's conjuncts in the order Select evaluates them.
func (f *Filter) String() string {
	order := *f.order.Load()
	parts := make([]string, len(order))
	for i, j := range order {
		parts[i] = f.conjs[j].String()
	}
	return strings.Join(parts, " AND ")
}

func (c conjunct) String() string {
	switch c.kind {
	case conjNone:
		return "NULL"
	case conjEval, conjIn:
		if c.kind == conjIn {
			return c.in.String()
		}
		return c.x.String()
	case conjIsNull:
		return "(" + c.x.String() + " IS NULL)"
	case conjNotNull:
		return "(" + c.x.String() + " IS NOT NULL)"
	case conjLike:
		op := " LIKE '"
		if c.not {
			op = " NOT LIKE '"
		}
		return "(" + c.x.String() + op + string(c.like.pattern) + "')"
	}
	var k string
	switch c.lane {
	case laneInt:
		k = fmt.Sprint(c.i)
	case laneUint:
		k = fmt.Sprint(uint64(c.i))
	case laneFloat:
		k = vec.FormatFloat(c.f)
	case laneStr:
		k = sql.QuoteString(string(c.s))
	}
	return "(" + c.x.String() + " " + c.op.String() + " " + k + ")"
}

// Fast reports how many of the filter's conjuncts run as typed loops and
// how many there are.
func (f *Filter) Fast() (fast, all int) {
	for _, c := range f.conjs {
		if c.kind != conjEval {
			fast++
		}
	}
	return fast, len(f.conjs)
}

// Select returns the indexes of the rows of b for which the filter is
// true, in increasing order. The result lives in sc's memory and is valid
// until sc's next use.
func (f *Filter) Select(b *vec.Batch, sc *FilterScratch) ([]int32, error) {
	return f.selectRows(b, nil, true, sc)
}

// SelectFrom is Select over the rows of b at the indexes from (in
// increasing order) only: it returns those of them for which the filter
// is true.
func (f *Filter) SelectFrom(b *vec.Batch, from []int32, sc *FilterScratch) ([]int32, error) {
	return f.selectRows(b, from, false, sc)
}

func (f *Filter) selectRows(b *vec.Batch, from []int32, dense bool, sc *FilterScratch) ([]int32, error) {
	n := b.Len
	if cap(sc.sel) < n {
		sc.sel = make([]int32, n)
	}
	out := sc.sel[:n]
	var sel []int32
	if !dense { // dense: every row is selected; sel is not materialised yet
		if len(from) == 0 {
			return out[:0], nil
		}
		if len(from) > n || from[len(from)-1] >= int32(n) || from[0] < 0 {
			return nil, fmt.Errorf("internal error: rows %d to %d of a batch of %d", from[0], from[len(from)-1], n)
		}
		sel = append(out[:0], from...)
	}
	order := *f.order.Load()
	measure := len(order) > 1
	for _, j := range order {
		c := &f.conjs[j]
		in := len(sel)
		if dense {
			in = n
		}
		var t0 time.Time
		if measure {
			t0 = time.Now()
		}
		var err error
		if sel, err = c.apply(b, sel, dense, out); err != nil {
			return nil, err
		}
		if measure {
			st := &f.stats[j]
			st.nanos.Add(int64(time.Since(t0)))
			st.in.Add(int64(in))
			st.out.Add(int64(len(sel)))
		}
		dense = false
		if len(sel) == 0 {
			break
		}
	}
	if measure && f.calls.Add(1)%reorderEvery == 0 {
		f.reorder()
	}
	if len(sel) == 0 && !dense {
		return sel, nil
	}
	if dense {
		return identity(out), nil
	}
	return sel, nil
}

// identity fills out with 0, 1, … and returns it.
func identity(out []int32) []int32 {
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// apply narrows the selection sel (every row when dense) to the rows where
// c is true, writing the result to out, which may be sel itself.
func (c *conjunct) apply(b *vec.Batch, sel []int32, dense bool, out []int32) ([]int32, error) {
	if c.kind == conjNone {
		return out[:0], nil
	}
	v, err := c.x.Eval(b)
	if err != nil {
		return nil, err
	}
	n := b.Len
	if c.kind == conjEval || c.kind == conjIsNull || c.kind == conjNotNull {
		// These read only validity and I64; no typed kernel needed.
		if dense {
			sel = identity(out[:n])
		}
		return keepRows(c, v, sel, out), nil
	}
	if v.Type == vec.Null {
		return out[:0], nil
	}
	switch c.kind {
	case conjCmp:
		switch c.lane {
		case laneInt:
			sel = selCmp(c.op, v.I64[:n], c.i, sel, dense, out)
		case laneUint:
			x := v.I64[:n]
			var u []uint64
			if len(x) > 0 {
				u = unsafe.Slice((*uint64)(unsafe.Pointer(&x[0])), len(x))
			}
			sel = selCmp(c.op, u, uint64(c.i), sel, dense, out)
		case laneFloat:
			if c.f != c.f { // NaN: DuckDB's order, row by row
				if dense {
					sel = identity(out[:n])
				}
				sel = selNaN(c.op, v.F64[:n], c.f, sel, out)
			} else {
				sel = selCmp(c.op, v.F64[:n], c.f, sel, dense, out)
			}
		case laneStr:
			if dense {
				sel = identity(out[:n])
			}
			sel = selStr(c.op, v, c.s, sel, out)
		}
	case conjIn:
		if dense {
			sel = identity(out[:n])
		}
		sel = selIn(c.in, v, sel, out)
	case conjLike:
		if dense && c.like.kind == likeContains {
			sel = containsDense(v.Offsets[:n+1], v.Bytes, c.like.lit, c.not, out)
			break
		}
		if dense {
			sel = identity(out[:n])
		}
		sel = selLike(c.like, c.not, v, sel, out)
	}
	if v.Valid != nil {
		sel = selValid(v.Valid, sel)
	}
	return sel, nil
}

// keepRows narrows sel for the conjuncts read from v's validity or truth.
func keepRows(c *conjunct, v *vec.Vector, sel, out []int32) []int32 {
	k := 0
	switch c.kind {
	case conjIsNull, conjNotNull:
		want := c.kind == conjNotNull
		switch {
		case v.Type == vec.Null:
			if want {
				return out[:0]
			}
			return sel
		case v.Valid == nil:
			if !want {
				return out[:0]
			}
			return sel
		}
		valid := v.Valid
		for _, i := range sel {
			out[k] = i
			k += int(b2i(valid[i] == want))
		}
		return out[:k]
	}
	if v.Type == vec.Null {
		return out[:0]
	}
	x := v.I64
	if v.Valid == nil {
		for _, i := range sel {
			out[k] = i
			k += int(x[i] & 1)
		}
		return out[:k]
	}
	valid := v.Valid
	for _, i := range sel {
		out[k] = i
		k += int(x[i]&1) & int(b2i(valid[i]))
	}
	return out[:k]
}

// selValid keeps the rows of sel that are not NULL, in place.
func selValid(valid []bool, sel []int32) []int32 {
	k := 0
	for _, i := range sel {
		sel[k] = i
		k += int(b2i(valid[i]))
	}
	return sel[:k]
}

// selCmp keeps the rows i of sel (of every row of x when dense) where
// x[i] op c. > and >= are written as the negation of <= and <, so that a
// NaN compares as the greatest value, as in DuckDB (c is not NaN).
// selEqDense returns in out the rows of x equal to c. Equality to a
// constant is often rare (a user's id, a counter): blocks of 8 values are
// tested with one branch, and only a block with a match writes rows. That
// costs twice the branchless loop's time when most blocks match, so after
// the first 1024 rows, if more than a quarter of the blocks had a match,
// the rest is done branchless.
func selEqDense[T int64 | uint64 | float64](x []T, c T, out []int32) []int32 {
	out = out[:len(x)]
	k, i, hits := 0, 0, 0
	for ; i+8 <= len(x); i += 8 {
		if i == 1024 && hits > 1024/8/4 {
			break
		}
		b := x[i : i+8 : i+8]
		if b2i(b[0] == c)|b2i(b[1] == c)|b2i(b[2] == c)|b2i(b[3] == c)|
			b2i(b[4] == c)|b2i(b[5] == c)|b2i(b[6] == c)|b2i(b[7] == c) == 0 {
			continue
		}
		hits++
		for j, a := range b {
			out[k] = int32(i + j)
			k += int(b2i(a == c))
		}
	}
	for ; i < len(x); i++ {
		out[k] = int32(i)
		k += int(b2i(x[i] == c))
	}
	return out[:k]
}

func selCmp[T int64 | uint64 | float64](op sql.Op, x []T, c T, sel []int32, dense bool, out []int32) []int32 {
	k := 0
	if dense {
		out = out[:len(x)]
		switch op {
		case sql.OpEq:
			return selEqDense(x, c, out)
		case sql.OpNe:
			for i, a := range x {
				out[k] = int32(i)
				k += int(b2i(a != c))
			}
		case sql.OpLt:
			for i, a := range x {
				out[k] = int32(i)
				k += int(b2i(a < c))
			}
		case sql.OpLe:
			for i, a := range x {
				out[k] = int32(i)
				k += int(b2i(a <= c))
			}
		case sql.OpGt:
			for i, a := range x {
				out[k] = int32(i)
				k += int(b2i(!(a <= c)))
			}
		case sql.OpGe:
			for i, a := range x {
				out[k] = int32(i)
				k += int(b2i(!(a < c)))
			}
		}
		return out[:k]
	}
	switch op {
	case sql.OpEq:
		for _, i := range sel {
			out[k] = i
			k += int(b2i(x[i] == c))
		}
	case sql.OpNe:
		for _, i := range sel {
			out[k] = i
			k += int(b2i(x[i] != c))
		}
	case sql.OpLt:
		for _, i := range sel {
			out[k] = i
			k += int(b2i(x[i] < c))
		}
	case sql.OpLe:
		for _, i := range sel {
			out[k] = i
			k += int(b2i(x[i] <= c))
		}
	case sql.OpGt:
		for _, i := range sel {
			out[k] = i
			k += int(b2i(!(x[i] <= c)))
		}
	case sql.OpGe:
		for _, i := range sel {
			out[k] = i
			k += int(b2i(!(x[i] < c)))
		}
	}
	return out[:k]
}

// selNaN is selCmp for a NaN constant, in DuckDB's order.
func selNaN(op sql.Op, x []float64, c float64, sel, out []int32) []int32 {
	k := 0
	for _, i := range sel {
		out[k] = i
		k += int(b2i(cmpResult(op, vec.CompareFloat(x[i], c))))
	}
	return out[:k]
}

// selStr keeps the rows of sel whose string op c holds, bytewise.
func selStr(op sql.Op, v *vec.Vector, c []byte, sel, out []int32) []int32 {
	offs, data := v.Offsets, v.Bytes
	k := 0
	switch op {
	case sql.OpEq, sql.OpNe:
		want := op == sql.OpEq
		n := uint32(len(c))
		if n == 0 { // s = '' and s <> '' read only the offsets
			for _, i := range sel {
				out[k] = i
				k += int(b2i((offs[i+1] == offs[i]) == want))
			}
			return out[:k]
		}
		for _, i := range sel {
			a, b := offs[i], offs[i+1]
			out[k] = i
			k += int(b2i((b-a == n && string(data[a:b]) == string(c)) == want))
		}
	default:
		for _, i := range sel {
			out[k] = i
			k += int(b2i(cmpResult(op, bytes.Compare(data[offs[i]:offs[i+1]], c))))
		}
	}
	return out[:k]
}

// selIn keeps the rows of sel where s holds: a hit for IN, a miss for NOT
// IN, which never holds when the list has a NULL.
func selIn(s *inSet, v *vec.Vector, sel, out []int32) []int32 {
	if s.not && s.hasNull {
		return out[:0]
	}
	miss := int64(b2i(s.not)) // the outcome of hit XOR miss that passes
	k := 0
	switch s.lane {
	case laneInt, laneUint:
		x := v.I64
		switch {
		case s.intSet != nil:
			for _, i := range sel {
				_, hit := s.intSet[x[i]]
				out[k] = i
				k += int(b2i(hit) ^ miss)
			}
		default:
			for _, i := range sel {
				hit := false
				for _, c := range s.ints {
					hit = hit || x[i] == c
				}
				out[k] = i
				k += int(b2i(hit) ^ miss)
			}
		}
	case laneFloat:
		x := v.F64
		for _, i := range sel {
			hit := false
			for _, c := range s.floats {
				hit = hit || vec.CompareFloat(x[i], c) == 0
			}
			out[k] = i
			k += int(b2i(hit) ^ miss)
		}
	case laneStr:
		offs, data := v.Offsets, v.Bytes
		for _, i := range sel {
			_, hit := s.strs[string(data[offs[i]:offs[i+1]])]
			out[k] = i
			k += int(b2i(hit) ^ miss)
		}
	}
	return out[:k]
}

// selLike keeps the rows of sel whose string matches m (does not, with
// not).
func selLike(m *likeMatcher, not bool, v *vec.Vector, sel, out []int32) []int32 {
	offs, data := v.Offsets, v.Bytes
	k := 0
	switch m.kind {
	case likeContains:
		lit := m.lit
		for _, i := range sel {
			out[k] = i
			k += int(b2i(bytes.Contains(data[offs[i]:offs[i+1]], lit) != not))
		}
	case likePrefix:
		lit := m.lit
		for _, i := range sel {
			out[k] = i
			k += int(b2i(bytes.HasPrefix(data[offs[i]:offs[i+1]], lit) != not))
		}
	default:
		for _, i := range sel {
			out[k] = i
			k += int(b2i(m.match(data[offs[i]:offs[i+1]]) != not))
		}
	}
	return out[:k]
}

// containsDense selects the rows, of all of them, whose string contains
// lit (does not, with not). It searches the strings' bytes as one buffer,
// so that a rare literal costs one vectorised scan rather than a call per
// row, and maps each hit to its row through the offsets; a hit that spans
// two rows is no match and the search resumes one byte on.
func containsDense(offs []uint32, data, lit []byte, not bool, out []int32) []int32 {
	n := len(offs) - 1
	k, r := 0, 0 // rows before r are decided
	pos, end := int(offs[0]), int(offs[n])
	for r < n {
		j := bytes.Index(data[pos:end], lit)
		if j < 0 {
			break
		}
		at := pos + j
		for int(offs[r+1]) <= at { // rows ending before the hit: no match
			out[k] = int32(r)
			k += int(b2i(not))
			r++
		}
		if at+len(lit) > int(offs[r+1]) { // spans into the next row
			pos = at + 1
			continue
		}
		out[k] = int32(r)
		k += int(b2i(!not))
		r++
		pos = int(offs[r])
	}
	if not {
		for ; r < n; r++ {
			out[k] = int32(r)
			k++
		}
	}
	return out[:k]
}

// IntEq reports whether f is one test of an integer column for equality
// with a constant, col = c (a widening cast of the column allowed), and
// which column and constant: a reader may then compare the column's
// stored integers with c where they lie, without converting them.
func (f *Filter) IntEq() (col int, c int64, ok bool) {
	if len(f.conjs) != 1 {
		return 0, 0, false
	}
	cj := f.conjs[0]
	if cj.kind != conjCmp || cj.op != sql.OpEq || cj.lane != laneInt {
		return 0, 0, false
	}
	r, isCol := cj.x.(*ColumnRef)
	if !isCol {
		return 0, 0, false
	}
	switch r.T {
	case vec.Int16, vec.Int32, vec.Int64, vec.Date:
		return r.Index, cj.i, true
	}
	return 0, 0, false
}
