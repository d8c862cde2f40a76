package engine

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"cachebook/engine/expr"
	"cachebook/engine/storage"
	"cachebook/engine/vec"
)

// scanPush is the part of a scan's filter evaluated inside the reading
// of one string column of a streamed row group (storage.StringTest):
// conjuncts that test the column against constants (MobilePhoneModel
// not empty, URL LIKE '%google%'). A page encoded with a dictionary is tested
// once per dictionary entry and its rows selected by their indexes; a
// PLAIN page under a comparison with the empty string is tested on its strings'
// lengths; only the strings of the rows that pass are copied out of the
// page. Before, every row's string was copied into a vector, the filter
// tested the copies, and the passing rows were copied again.
type scanPush struct {
	col   int
	terms []expr.Expr
	test  *storage.StringTest
	f     *expr.Filter // the pushed conjuncts
	rest  *expr.Filter // the filter's other conjuncts; nil when none
	// other: the filter's columns but col, read for the rows the pushed
	// conjuncts pass; restReadsCol: rest reads col too.
	other        []int
	restReadsCol bool
	// colOnly is col alone, firstCols the scan's filter columns: which
	// of them a morsel may hold compact (see streamPushed).
	colOnly, firstCols []int
	// stages order the reading of other for the rows the pushed
	// conjuncts pass (see streamPushed): the fixed-width columns first,
	// then the strings, each stage's conjuncts (those of rest whose
	// columns are read by then; nil when none) narrowing the rows the
	// next stage reads. otherStrings: a column of other is a string.
	stages       []pushStage
	otherStrings bool
	// staged counts the rows the stages read (for EXPLAIN), of the
	// rows the pushed conjuncts passed.
	staged atomic.Int64
}

// pushStage is one column of scanPush.other, read for the rows left,
// and the conjuncts then evaluated over those rows (nil when none).
type pushStage struct {
	col   int
	terms []expr.Expr
	f     *expr.Filter
}

// planPush chooses the conjuncts of the filter a streamed row group's
// string column tests as it is read (see scanPush), when the filter has
// any and the scan evaluates it whole: not split (scanOp.early), without
// a top-N's bound, building no strings.
func (s *scanOp) planPush() {
	if s.noPush || s.where == nil || s.early != nil || s.bound != nil || len(s.whereTemps) > 0 {
		return
	}
	conjs := expr.Conjuncts(s.where)
	col, empty := -1, false
	for _, t := range conjs {
		j, ok := expr.StringColumnTest(t)
		if !ok || j < 0 || j >= len(s.table.Columns) || s.table.Columns[j].Type != vec.String {
			continue
		}
		_, _, e := expr.EmptyStringTest(t)
		// A test of emptiness is preferred: it is decided on PLAIN pages
		// too without converting their strings.
		if col < 0 || e && !empty {
			col, empty = j, e
		}
	}
	if col < 0 {
		return
	}
	p := &scanPush{col: col, test: &storage.StringTest{}}
	var rest []expr.Expr
	for _, t := range conjs {
		if j, ok := expr.StringColumnTest(t); ok && j == col {
			p.terms = append(p.terms, t)
			if _, nonEmpty, ok := expr.EmptyStringTest(t); ok && len(p.terms) == 1 {
				p.test.Empty = storage.EmptyOnly
				if nonEmpty {
					p.test.Empty = storage.NonEmpty
				}
			} else {
				p.test.Empty = storage.EmptyAny // not emptiness alone
			}
			continue
		}
		rest = append(rest, t)
	}
	p.f = expr.NewFilterOf(p.terms)
	if len(rest) > 0 {
		p.rest = expr.NewFilterOf(rest)
		for _, t := range rest {
			p.restReadsCol = p.restReadsCol || slices.Contains(expr.Columns(t), col)
		}
	}
	p.colOnly, p.firstCols = []int{col}, s.first
	for _, j := range s.first {
		if j != col {
			p.other = append(p.other, j)
		}
	}
	if m, ok := expr.StringMatcher(p.terms); ok && p.test.Empty == storage.EmptyAny {
		p.test.Match = m
		p.test.Contains, p.test.NotContains, _ = expr.StringContains(p.terms)
	}
	p.planStages(s.table.Columns, rest)
	width := len(s.table.Columns)
	p.test.Lengths = slices.Contains(s.lengths, col) && !p.restReadsCol
	p.test.Values = func(v *vec.Vector) ([]int32, error) {
		b := &vec.Batch{Vecs: make([]*vec.Vector, width), Len: v.Len}
		b.Vecs[col] = v
		sc := s.filterScratch()
		defer s.scratch.Put(sc)
		sel, err := p.f.Select(b, sc)
		if err != nil {
			return nil, err
		}
		return slices.Clone(sel), nil
	}
	s.push = p
}

// planStages orders p.other into stages (see scanPush.stages): the
// fixed-width columns before the strings, each stage's conjuncts those
// of rest that read no column of a later stage.
func (p *scanPush) planStages(cols []vec.Column, rest []expr.Expr) {
	order := make([]int, 0, len(p.other))
	for _, j := range p.other {
		if cols[j].Type != vec.String {
			order = append(order, j)
		}
	}
	for _, j := range p.other {
		if cols[j].Type == vec.String {
			order = append(order, j)
			p.otherStrings = true
		}
	}
	read := map[int]bool{p.col: true}
	done := make([]bool, len(rest))
	for _, j := range order {
		read[j] = true
		var terms []expr.Expr
		for i, t := range rest {
			if done[i] {
				continue
			}
			ready := true
			for _, c := range expr.Columns(t) {
				ready = ready && read[c]
			}
			if ready {
				terms, done[i] = append(terms, t), true
			}
		}
		p.stages = append(p.stages, pushStage{col: j, terms: terms})
	}
	var left []expr.Expr
	for i, t := range rest {
		if !done[i] {
			left = append(left, t) // reads no column of the scan's
		}
	}
	if len(left) > 0 {
		if len(p.stages) == 0 {
			p.stages = append(p.stages, pushStage{col: -1})
		}
		last := &p.stages[len(p.stages)-1]
		last.terms = append(last.terms, left...)
	}
	for i := range p.stages {
		if st := &p.stages[i]; len(st.terms) > 0 {
			st.f = expr.NewFilterOf(st.terms)
		}
	}
}

// streamPushed evaluates the filter over the streamed morsel b with the
// pushed conjuncts (s.push) tested as their column is read, and returns
// the rows that pass, and which of the filter's columns b then holds for
// those rows only (compact); the others it holds for the morsel's rows.
// The filter's other columns are read for the rows the pushed conjuncts
// pass, and the other conjuncts evaluated over those rows: when the rows
// are few, the columns are converted for them only (and are compact).
func (s *scanOp) streamPushed(x *execCtx, c *scanCursor, b *vec.Batch) (sel []int32, compact []int, err error) {
	p, n := s.push, b.Len
	t0 := time.Now()
	defer func() { s.decodeNanos.Add(int64(time.Since(t0))) }()
	v, sel, err := c.streams[p.col].NextTest(x.ctx, n, p.test)
	if err != nil {
		return nil, nil, err
	}
	b.Vecs[p.col] = v
	if len(sel) == 0 || p.rest == nil {
		for _, j := range p.other {
			if err := c.streams[j].Skip(x.ctx, n); err != nil {
				return nil, nil, err
			}
		}
		return sel, p.colOnly, nil
	}
	if len(sel)*sparseRows > n && !p.restReadsCol && !p.otherStrings {
		// Many rows passed, and the other columns are fixed-width: they
		// convert the whole morsel.
		for _, j := range p.other {
			w, err := c.streams[j].Next(x.ctx, n)
			if err != nil {
				return nil, nil, err
			}
			b.Vecs[j] = w
		}
		sc := s.filterScratch()
		defer s.scratch.Put(sc)
		kept, err := p.rest.SelectFrom(b, sel, sc)
		if err != nil {
			return nil, nil, err
		}
		if len(kept) < len(sel) {
			// v holds the rows of sel: keep those of kept.
			at := make([]int32, 0, len(kept))
			i := 0
			for _, r := range kept {
				for sel[i] != r {
					i++
				}
				at = append(at, int32(i))
			}
			b.Vecs[p.col] = gather(v, at)
		}
		return slices.Clone(kept), p.colOnly, nil
	}
	// The other columns are read stage by stage for the rows left (a
	// string column copying only their strings, see selRead), each
	// stage's conjuncts narrowing the rows the next one reads: Title
	// LIKE '%Google%' decides which rows' URLs are copied at all.
	m := &vec.Batch{Vecs: make([]*vec.Vector, len(b.Vecs)), Len: len(sel)}
	m.Vecs[p.col] = v
	rows := sel
	p.staged.Add(int64(len(sel)))
	for i, st := range p.stages {
		if st.col >= 0 {
			w, err := s.readSel(x, st.col, c.streams[st.col], rows, n)
			if err != nil {
				return nil, nil, err
			}
			m.Vecs[st.col] = w
		}
		if st.f == nil {
			continue
		}
		kept, err := s.filterWith(x, st.f, m)
		if err != nil {
			return nil, nil, err
		}
		if len(kept) == len(rows) {
			continue
		}
		if len(kept) == 0 {
			for _, later := range p.stages[i+1:] {
				if later.col >= 0 {
					if err := c.streams[later.col].Skip(x.ctx, n); err != nil {
						return nil, nil, err
					}
				}
			}
			return []int32{}, p.colOnly, nil
		}
		left := make([]int32, len(kept))
		for i, k := range kept {
			left[i] = rows[k]
		}
		rows = left
		for j, w := range m.Vecs {
			if w != nil {
				m.Vecs[j] = gather(w, kept)
			}
		}
		m.Len = len(rows)
	}
	for _, j := range s.first {
		b.Vecs[j] = m.Vecs[j]
	}
	return rows, p.firstCols, nil
}

// pushDetail is the EXPLAIN line of the pushed conjuncts, once a
// streamed row group was read with them; "" before.
func (s *scanOp) pushDetail() string {
	p := s.push
	terms := make([]string, len(p.terms))
	for i, t := range p.terms {
		terms[i] = t.String()
	}
	name := s.table.Columns[p.col].Name
	kept := "only the passing rows' strings copied"
	if p.test.Lengths {
		kept = "only the passing rows' byte lengths kept, no string copied"
	}
	line := fmt.Sprintf("filter %s tested as %s is read: %s", strings.Join(terms, " AND "), name, kept)
	t := p.test
	var how []string
	if d := t.Dicts.Load(); d > 0 {
		how = append(how, fmt.Sprintf("%d rows on the dictionary (%d dictionaries, %d entries)", t.DictRows.Load(), d, t.DictEntries.Load()))
	}
	if r := t.LengthRows.Load(); r > 0 {
		how = append(how, fmt.Sprintf("%d rows on the strings' lengths", r))
	}
	if r := t.MatchRows.Load(); r > 0 {
		how = append(how, fmt.Sprintf("%d rows on their values where they lie in the page", r))
	}
	if r := t.ValueRows.Load(); r > 0 {
		how = append(how, fmt.Sprintf("%d rows on their values", r))
	}
	if len(how) == 0 {
		return "" // no row group was streamed
	}
	line += " (" + strings.Join(how, ", ") + ")"
	if r := p.staged.Load(); r > 0 {
		var st []string
		for _, g := range p.stages {
			name := "no column"
			if g.col >= 0 {
				name = s.table.Columns[g.col].Name
			}
			if len(g.terms) > 0 {
				terms := make([]string, len(g.terms))
				for i, t := range g.terms {
					terms[i] = t.String()
				}
				name += " (then " + strings.Join(terms, " AND ") + ")"
			}
			st = append(st, name)
		}
		line += fmt.Sprintf("; the filter's other columns read for the %d rows it passed only, in turn, each narrowing the rows the next reads: %s", r, strings.Join(st, ", "))
	}
	return line
}

// byteLengthCols returns the string columns of q's table that the
// operators above its scan read only as strlen(col) (ClickBench Q27's
// AVG(STRLEN(URL))), and rewrites those reads to take the column as
// the byte lengths of its strings (expr.UseByteLengths), which the scan
// hands on instead: a streamed row group whose filter tests the column
// then never copies its strings (storage.StringTest.Lengths). off
// turns it off (tests).
func byteLengthCols(q *query, off bool) []int {
	sc := q.rel.scan
	if off || sc == nil {
		return nil
	}
	var es []expr.Expr
	q.eachAbove(func(e expr.Expr) {
		if e != nil {
			es = append(es, e)
		}
	})
	var cols []int
	for j, c := range sc.table.Columns {
		if c.Type != vec.String || !q.need[j] || !expr.ByteLengthsOnly(es, j) {
			continue
		}
		for _, e := range es {
			expr.UseByteLengths(e, j)
		}
		cols = append(cols, j)
	}
	return cols
}
