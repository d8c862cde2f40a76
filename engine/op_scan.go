package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cachebook/engine/expr"
	"cachebook/engine/sql"
	"cachebook/engine/storage"
	"cachebook/engine/vec"
)

// morselRows is the number of rows each operator step works on: small
// enough that a batch's intermediate vectors stay in the L2 cache.
const morselRows = 16384

// scanOp reads a table row group by row group. Only the columns the query
// needs are decoded, and only when a worker reaches the row group; they are
// released when it moves on. A WHERE clause is evaluated inside the scan:
// row groups whose min/max statistics rule it out are skipped unread, the
// columns the filter reads are decoded first, and the other columns of a
// row group where no row passes are never decoded (late materialisation).
type scanOp struct {
	opBase
	cat   *storage.Catalog
	table *storage.Table
	need  []bool // table columns the query reads
	// above, when set, is the table columns the operators above the scan
	// read: a column the filter alone reads is not handed on (nor copied
	// out for the passing rows).
	above []bool
	where expr.Expr // pushed-down filter, or nil
	// proven are the WHERE conjuncts left out of where: the row groups'
	// statistics prove them true for every row.
	proven []string
	// whereTemps are the filter's sub-expressions that build strings
	// (stringTemps), found once when the plan is built.
	whereTemps []expr.Expr
	prune      []bound // conjuncts of the filter the statistics can decide
	// stream reads pages only as rows are needed, for a query that may
	// stop early (LIMIT without ORDER BY), instead of whole column chunks
	// through the cache.
	stream bool
	// streamRows is the rows of a streaming scan's next morsel: it starts
	// at the rows the LIMIT needs, so that SELECT * … LIMIT 10 converts ten
	// rows of each column's first page, and doubles with each morsel (a
	// filter may pass few rows) up to morselRows.
	streamRows atomic.Int64
	// streamMax, when positive, caps the rows of a morsel converted page
	// by page below morselRows (see groupStreamRows).
	streamMax int
	// bound, set for a top-N over the scan ordered by a column of the
	// table, drops the rows that cannot be among the top-N's rows before
	// the columns outside the filter are decoded (see topNBound).
	bound *topNBound
	// positions: each batch carries, after the table's columns, each
	// row's position in the table (row group << 32 | row), the last key
	// of a top-N that several workers feed.
	positions bool

	open    sync.Once
	rd      *storage.Reader
	openErr error
	// The columns read, split once when the scan opens: the filter's
	// (decoded first), the others, and all of them in that order.
	first, rest, cols []int
	// filterOnly: the filter's columns no operator above reads.
	filterOnly []int
	// firstRest: the filter's columns but the bound's key, which a
	// streamed morsel reads only when a row of it passes the bound.
	firstRest []int
	// early and late split a filter whose conjuncts read both string
	// columns and columns that decode cheaply: early holds the conjuncts
	// without a string column, evaluated first over earlyCols (the other
	// filter columns) decoded whole; late the others, evaluated over the
	// rows early passed. When early passes few of a row group's rows, the
	// string columns (lateCols) are read page by page and converted for
	// those rows only (loadLate), not decoded whole. Nil otherwise.
	early, late         *expr.Filter
	earlyCols, lateCols []int
	earlyTerms          []expr.Expr // early's conjuncts
	lateTerms           []expr.Expr // late's conjuncts
	// latePush tests the late conjuncts as their one column is read for
	// the rows the early ones passed (NextSelTest): only the strings
	// that pass are copied. nil when late reads other columns too, or
	// tests the column otherwise. latePushRows counts the rows tested.
	latePush     *storage.StringTest
	latePushRows atomic.Int64
	// stages evaluate a streamed morsel's filter a column at a time
	// (see filterStage): the early conjuncts' when the filter is split,
	// else the filter's when nothing is pushed; nil when its conjuncts
	// do not read one column each.
	stages []*filterStage
	// push: conjuncts a streamed row group's string column tests as it
	// is read (see scanPush); nil when none. noPush turns it off (tests).
	push   *scanPush
	noPush bool
	// noStages turns filterStage off (tests).
	noStages bool
	// lengths are the string columns the operators above read only as
	// strlen(col) (see byteLengthCols): handed on as their strings'
	// byte lengths.
	lengths []int

	nextRG atomic.Int64

	mu      sync.Mutex
	cursors map[int]*scanCursor // per worker
	workers map[int]*WorkerStat // per worker: rows produced, time in the scan

	groupsRead, groupsPruned, groupsNoMatch atomic.Int64
	decodeNanos, decodedRows                atomic.Int64
	lazyGroups                              atomic.Int64 // row groups whose other columns were read page by page
	onceGroups                              atomic.Int64 // row groups streamed because the cache would not keep them
	lateGroups                              atomic.Int64 // row groups whose string filter columns were read for early's rows only
	filterStep                              atomic.Int64 // rows per filter evaluation; 0: a morsel

	// filter is where compiled for selection, once the plan is final;
	// scratch holds the workers' FilterScratch buffers between morsels,
	// and ident is 0, 1, …, morselRows-1, the selection when every row of
	// a morsel passes.
	filterOnce sync.Once
	filter     *expr.Filter
	scratch    sync.Pool
	ident      []int32
	// eq and earlyEq are where and early as one col = constant on an
	// integer column, where they are that (readEq), planned once with
	// filter.
	eq, earlyEq intEq
}

// intEq is a filter that is one col = c on an integer column, where ok
// (expr.Filter.IntEq).
type intEq struct {
	col int
	c   int64
	ok  bool
}

// intEqOf returns f as an intEq; not ok for a nil f.
func intEqOf(f *expr.Filter) intEq {
	if f == nil {
		return intEq{}
	}
	col, c, ok := f.IntEq()
	return intEq{col: col, c: c, ok: ok}
}

// bound is a conjunct "column op constant" of a WHERE clause over an
// integer column, which row-group statistics can prove false.
type bound struct {
	col int
	op  sql.Op // =, <, <=, >, >=, seen from the column
	c   int64
}

func (b bound) String(cols []vec.Column) string {
	return fmt.Sprintf("%s %s %d", cols[b.col].Name, b.op, b.c)
}

// excludes reports whether no value in [lo, hi] satisfies the bound.
func (b bound) excludes(lo, hi int64) bool {
	switch b.op {
	case sql.OpEq:
		return b.c < lo || b.c > hi
	case sql.OpLt:
		return lo >= b.c
	case sql.OpLe:
		return lo > b.c
	case sql.OpGt:
		return hi <= b.c
	case sql.OpGe:
		return hi < b.c
	}
	return false
}

// holds reports whether every value in [lo, hi] satisfies the bound.
func (b bound) holds(lo, hi int64) bool {
	switch b.op {
	case sql.OpEq:
		return lo == b.c && hi == b.c
	case sql.OpLt:
		return hi < b.c
	case sql.OpLe:
		return hi <= b.c
	case sql.OpGt:
		return lo > b.c
	case sql.OpGe:
		return lo >= b.c
	}
	return false
}

// scanCursor is one worker's position: the row group it holds and the
// next morsel in it.
type scanCursor struct {
	g     int
	vecs  []*vec.Vector // as wide as the table; nil for columns not read
	rows  int
	pos   int
	sels  [][]int32 // per morsel: the rows that passed the filter
	held  int64     // bytes charged for vecs
	valid bool

	// In stream mode: a stream per column read, and rows of the columns
	// outside the filter still to skip; skipFirst: rows of the filter's
	// columns but the bound's key still to skip (morsels no row of which
	// passed the bound).
	streams   map[int]*storage.ColumnStream
	skip      int
	skipFirst int

	// After a selective filter: the other columns, read page by page
	// for the morsels with matches only.
	lazy map[int]*storage.ColumnStream
	// late: lazy also holds the scan's lateCols, read for the rows the
	// early conjuncts pass, skipLate rows of which are still to skip.
	late     bool
	skipLate int
}

// selective is the fraction of a row group's rows a filter may pass for
// the scan to read the other columns page by page, for the matching
// morsels only, rather than decode their whole chunks.
const selective = 8 // at most 1 row in 8

func newScan(label string, cat *storage.Catalog, t *storage.Table) *scanOp {
	return &scanOp{opBase: opBase{label: label}, cat: cat, table: t, need: make([]bool, len(t.Columns)), cursors: map[int]*scanCursor{}, workers: map[int]*WorkerStat{}}
}

func (s *scanOp) detail() []string {
	d := []string{"table: " + s.table.Name}
	var names []string
	for i, c := range s.table.Columns {
		if s.need[i] {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		d = append(d, "columns: none (row counts from the footer)")
	} else {
		d = append(d, "columns: "+strings.Join(names, ", "))
	}
	if s.where != nil {
		d = append(d, "filter: "+s.where.String())
		if cols := expr.Columns(s.where); len(cols) > 0 {
			var fc []string
			seen := map[int]bool{}
			for _, c := range cols {
				if !seen[c] {
					seen[c] = true
					fc = append(fc, s.table.Columns[c].Name)
				}
			}
			d = append(d, "late materialisation: "+strings.Join(fc, ", ")+" decoded first; other columns only for row groups with matches")
		}
	}
	if s.push != nil {
		if line := s.pushDetail(); line != "" {
			d = append(d, line)
		}
	}
	if s.stages != nil {
		if line := s.stagesDetail(s.stages); line != "" {
			d = append(d, line)
		}
	}
	if r := s.latePushRows.Load(); r > 0 {
		j := s.lateCols[0]
		d = append(d, fmt.Sprintf("filter %s tested as %s is read for the %d rows the other conjuncts passed: only the passing rows' strings copied", s.late, s.table.Columns[j].Name, r))
	}
	for _, j := range s.lengths {
		d = append(d, fmt.Sprintf("%s: read only as strlen(%[1]s): its strings' byte lengths handed on", s.table.Columns[j].Name))
	}
	if len(s.proven) > 0 {
		d = append(d, "true for every row by the row-group statistics, not evaluated: "+strings.Join(s.proven, " AND "))
	}
	if s.bound != nil {
		d = append(d, s.bound.scanDetail())
	}
	if s.stream {
		d = append(d, "streaming: pages decoded only as rows are needed (LIMIT without ORDER BY)")
	}
	if len(s.prune) > 0 {
		var ps []string
		for _, b := range s.prune {
			ps = append(ps, b.String(s.table.Columns))
		}
		d = append(d, "row-group min/max pruning on: "+strings.Join(ps, " AND "))
	}
	n := len(s.table.RowGroupRows)
	if r, p, m := s.groupsRead.Load(), s.groupsPruned.Load(), s.groupsNoMatch.Load(); r+p > 0 {
		line := fmt.Sprintf("row groups: %d of %d read", r, n)
		if p > 0 {
			line += fmt.Sprintf(", %d skipped by min/max statistics", p)
		}
		if m > 0 {
			line += fmt.Sprintf(", %d without a matching row (other columns not decoded)", m)
		}
		if l := s.lazyGroups.Load(); l > 0 {
			line += fmt.Sprintf(", %d with few matches (other columns read page by page for matching morsels)", l)
		}
		if l := s.lateGroups.Load(); l > 0 {
			var names []string
			for _, j := range s.lateCols {
				names = append(names, s.table.Columns[j].Name)
			}
			line += fmt.Sprintf(", %d with few rows past the conjuncts without strings (%s converted for those rows only)", l, strings.Join(names, ", "))
		}
		if o := s.onceGroups.Load(); o > 0 {
			line += fmt.Sprintf(", %d page by page (a first read of columns too large for the cache to keep: converted a morsel at a time, not decoded whole)", o)
		}
		if r+p < int64(n) {
			line += fmt.Sprintf(", %d never reached (the query stopped early)", int64(n)-r-p)
		}
		d = append(d, line)
	} else {
		d = append(d, fmt.Sprintf("row groups: %d", n))
	}
	return d
}

// cursor returns worker w's cursor and its share of the work.
func (s *scanOp) cursor(w int) (*scanCursor, *WorkerStat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cursors[w]
	if c == nil {
		c = &scanCursor{}
		s.cursors[w] = c
		s.workers[w] = &WorkerStat{Worker: w, Phase: "scan"}
	}
	return c, s.workers[w]
}

func (s *scanOp) next(x *execCtx, w int) (*vec.Batch, error) {
	c, ws := s.cursor(w)
	t0 := time.Now()
	b, err := s.nextOf(x, w, c)
	s.mu.Lock()
	ws.Time += time.Since(t0)
	if b != nil {
		ws.Rows += int64(b.Len)
	}
	s.mu.Unlock()
	return b, err
}

// recycle gives the vectors of b, worker w's last morsel, back to the
// streams of its row group, once its consumer is done with them and with
// anything made from them: the next morsel is converted into their
// arrays (storage.ColumnStream.Recycle). A row group decoded whole, or a
// column served from the cache, reuses nothing; nor does a filtered scan.
func (s *scanOp) recycle(w int, b *vec.Batch) {
	s.mu.Lock()
	c := s.cursors[w]
	s.mu.Unlock()
	// After a filter, b holds copies of the passing rows (the streams were
	// given back the morsel's own vectors already) or vectors the streams
	// made of those rows only: either is the batch's alone, to convert
	// the next morsel into.
	if c == nil || c.streams == nil {
		return
	}
	for j, v := range b.Vecs {
		if st := c.streams[j]; st != nil && v != nil {
			st.Recycle(v)
		}
	}
}

// nextOf returns worker w's next morsel.
func (s *scanOp) nextOf(x *execCtx, w int, c *scanCursor) (*vec.Batch, error) {
	for {
		if err := x.ctx.Err(); err != nil {
			return nil, err
		}
		if c.valid && c.pos < c.rows {
			b, err := s.step(x, c)
			if err != nil || b != nil {
				return b, err
			}
			continue
		}
		if c.valid {
			s.drop(x, c)
		}
		ok, err := s.advance(x, w, c)
		if err != nil || !ok {
			return nil, err
		}
	}
}

// drain returns the next morsel left in the row group worker from holds,
// without claiming another row group; nil when none is left. The hash
// aggregate's estimate reads on worker 0, and its parallel workers finish
// that row group through drain. Callers serialise their calls.
func (s *scanOp) drain(x *execCtx, from int) (*vec.Batch, error) {
	s.mu.Lock()
	c, ws := s.cursors[from], s.workers[from]
	s.mu.Unlock()
	if c == nil || !c.valid {
		return nil, nil
	}
	for c.pos < c.rows {
		t0 := time.Now()
		b, err := s.step(x, c)
		s.mu.Lock()
		ws.Time += time.Since(t0)
		if b != nil {
			ws.Rows += int64(b.Len)
		}
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if b != nil && b.Len > 0 {
			return b, nil
		}
	}
	s.drop(x, c)
	return nil, nil
}

// step returns the cursor's next morsel, from its streams or from its
// decoded row group; nil when no row of the morsel (of a streamed row
// group: of its rest) passes the filter.
func (s *scanOp) step(x *execCtx, c *scanCursor) (*vec.Batch, error) {
	var b *vec.Batch
	var err error
	if c.streams != nil {
		b, err = s.streamMorsel(x, c)
	} else {
		b, err = s.morsel(x, c)
	}
	if b != nil {
		for _, j := range s.lengths {
			if v := b.Vecs[j]; v != nil && v.Type == vec.String {
				b.Vecs[j] = storage.ByteLengths(v)
			}
		}
	}
	return b, err
}

// morsel returns the cursor's next morsel; nil when no row of it passes
// the filter.
func (s *scanOp) morsel(x *execCtx, c *scanCursor) (*vec.Batch, error) {
	t0 := time.Now()
	defer s.stats.since(t0)
	start, end := c.pos, min(c.pos+morselRows, c.rows)
	c.pos = end
	x.progress(end - start)
	if c.late {
		return s.lateMorsel(x, c, start, end)
	}
	var sel []int32
	if c.sels != nil || c.lazy != nil {
		if c.sels != nil {
			if sel = c.sels[start/morselRows]; sel == nil {
				sel = []int32{} // none passed (nil, to the bound, is all)
			}
		}
		if s.bound != nil {
			sel = s.bound.filter(c.vecs[s.bound.col].Slice(start, end), sel, end-start)
		}
		if sel != nil && len(sel) == 0 {
			// Nothing to hand on. A batch of no columns is no answer: the
			// operators above index its columns by the table's positions
			// (a lookup failed with "index 8 out of range for a batch of
			// 0 columns"). The other columns' rows of a lazily read row
			// group are skipped when the next morsel with a match reads.
			if c.lazy != nil {
				c.skip += end - start
			}
			return nil, nil
		}
	}
	b := &vec.Batch{Vecs: make([]*vec.Vector, len(c.vecs)), Len: end - start}
	for i, v := range c.vecs {
		b.Vecs[i] = sliceVec(v, start, end)
	}
	s.handOnly(b)
	if c.sels != nil || c.lazy != nil {
		if c.lazy != nil {
			t1 := time.Now()
			for _, j := range s.rest {
				st := c.lazy[j]
				if err := st.Skip(x.ctx, c.skip); err != nil {
					return nil, err
				}
				v, err := st.Next(x.ctx, b.Len)
				if err != nil {
					return nil, err
				}
				b.Vecs[j] = v
			}
			c.skip = 0
			s.decodeNanos.Add(int64(time.Since(t1)))
		}
		if sel != nil && len(sel) < b.Len {
			out := &vec.Batch{Vecs: make([]*vec.Vector, len(b.Vecs)), Len: len(sel)}
			for i, v := range b.Vecs {
				out.Vecs[i] = gather(v, sel)
			}
			// The passing rows are copied out: the lazy streams may
			// convert their next morsels into these vectors.
			for j, st := range c.lazy {
				st.Recycle(b.Vecs[j])
			}
			b = out
		}
	}
	s.addPositions(b, c.g, start, sel)
	s.stats.rowsOut.Add(int64(b.Len))
	return b, nil
}

// handOnly removes from b, a morsel about to be handed on, the columns
// the filter alone reads.
func (s *scanOp) handOnly(b *vec.Batch) {
	for _, j := range s.filterOnly {
		b.Vecs[j] = nil
	}
}

// addPositions appends to b, when the scan hands on positions, the
// positions of its rows: rows start+sel of row group g (sel nil: b.Len
// rows from start).
func (s *scanOp) addPositions(b *vec.Batch, g, start int, sel []int32) {
	if !s.positions {
		return
	}
	v := vec.NewVector(vec.Int64, b.Len)
	v.Len = b.Len
	v.I64 = v.I64[:b.Len]
	for i := range b.Len {
		r := start + i
		if sel != nil {
			r = start + int(sel[i])
		}
		v.I64[i] = int64(g)<<32 | int64(r)
	}
	b.Vecs = append(b.Vecs, v)
}

// drop releases the cursor's row group.
func (s *scanOp) drop(x *execCtx, c *scanCursor) {
	x.release(s, c.held)
	for _, st := range c.streams {
		st.Close()
	}
	for _, st := range c.lazy {
		st.Close()
	}
	*c = scanCursor{}
}

// columnsOf splits the columns the scan reads into the filter's and the
// others.
func (s *scanOp) columnsOf() (first, rest []int) {
	inFilter := map[int]bool{}
	if s.where != nil {
		for _, col := range expr.Columns(s.where) {
			inFilter[col] = true
		}
	}
	if s.bound != nil {
		inFilter[s.bound.col] = true
	}
	for i, n := range s.need {
		switch {
		case inFilter[i]:
			first = append(first, i)
		case n:
			rest = append(rest, i)
		}
	}
	return first, rest
}

// openStreams prepares the cursor to stream row group g: columns once
// page by page and the others decoded whole, or, with once nil, every
// column page by page.
func (s *scanOp) openStreams(x *execCtx, w int, c *scanCursor, g, rows int, once []int) error {
	*c = scanCursor{g: g, rows: rows, valid: true, streams: map[int]*storage.ColumnStream{}}
	var whole []int
	for _, j := range s.cols {
		if once != nil && !slices.Contains(once, j) {
			whole = append(whole, j)
			continue
		}
		st, err := s.rd.Stream(x.ctx, g, j)
		if err != nil {
			return err
		}
		if once != nil {
			st.ReadOn() // the row group is read to its end
		}
		c.streams[j] = st
	}
	if len(whole) > 0 {
		c.vecs = make([]*vec.Vector, len(s.table.Columns))
		if err := s.decode(x, w, c, whole); err != nil {
			return err
		}
		for _, j := range whole {
			c.streams[j] = storage.StreamOf(c.vecs[j])
		}
	}
	return nil
}

// streamMorsel reads the cursor's next morsel from its streams: the
// filter's columns first, the others only when a row passes. It returns
// nil when no row of the rest of the row group passes.
func (s *scanOp) streamMorsel(x *execCtx, c *scanCursor) (*vec.Batch, error) {
	t0 := time.Now()
	defer s.stats.since(t0)
	for c.pos < c.rows {
		n := min(s.nextStreamRows(), c.rows-c.pos)
		c.pos += n
		s.stats.rowsIn.Add(int64(n))
		x.progress(n)
		b := &vec.Batch{Vecs: make([]*vec.Vector, len(s.table.Columns)), Len: n}
		read := func(cols []int) error {
			t0 := time.Now()
			defer func() { s.decodeNanos.Add(int64(time.Since(t0))) }()
			for _, j := range cols {
				v, err := c.streams[j].Next(x.ctx, n)
				if err != nil {
					return err
				}
				b.Vecs[j] = v
			}
			return nil
		}
		s.decodedRows.Add(int64(n))
		var sel []int32
		// compact: the filter's columns read for the rows of sel only
		// (the late columns, or those streamPushed says).
		var compact []int
		if s.where != nil || s.bound != nil {
			first := s.first
			if s.bound != nil && s.bound.cur.Load() != nil {
				// The bound's key first: a morsel none of whose rows
				// passes it reads none of the filter's other columns
				// (the pages of their rows are not even decompressed).
				k := s.bound.col
				if err := read([]int{k}); err != nil {
					return nil, err
				}
				if !s.bound.any(b.Vecs[k], n) {
					c.streams[k].Recycle(b.Vecs[k])
					c.skip += n
					c.skipFirst += n
					continue
				}
				first = s.firstRest
			}
			if c.skipFirst > 0 {
				for _, j := range s.firstRest {
					if err := c.streams[j].Skip(x.ctx, c.skipFirst); err != nil {
						return nil, err
					}
				}
				c.skipFirst = 0
			}
			switch {
			case s.early != nil:
				var err error
				if sel, compact, err = s.streamLate(x, c, b, read); err != nil {
					return nil, err
				}
				if sel == nil {
					sel = []int32{}
				}
			case s.push != nil:
				var err error
				if sel, compact, err = s.streamPushed(x, c, b); err != nil {
					return nil, err
				}
				if sel == nil {
					sel = []int32{}
				}
			case s.stages != nil:
				var err error
				if sel, compact, err = s.stagedFilter(x, c, b, s.stages); err != nil {
					return nil, err
				}
			default:
				if s.bound == nil && s.where != nil {
					var eq bool
					var err error
					s.compileFilter()
					if sel, compact, eq, err = s.readEq(x, c, b, s.eq, first); err != nil {
						return nil, err
					} else if eq {
						break
					}
				}
				if err := read(first); err != nil {
					return nil, err
				}
				if s.where != nil {
					var err error
					if sel, err = s.filterMorsel(x, b); err != nil {
						return nil, err
					}
					if sel == nil {
						sel = []int32{} // none passed (nil, to cut, is all)
					}
				}
			}
			sel = s.cut(b, sel)
			if sel != nil && len(sel) == 0 {
				c.skip += n // the other columns' rows are skipped only if needed
				for _, j := range s.first {
					if !slices.Contains(compact, j) {
						c.streams[j].Recycle(b.Vecs[j])
					}
				}
				continue
			}
		}
		if c.skip > 0 {
			for _, j := range s.rest {
				if err := c.streams[j].Skip(x.ctx, c.skip); err != nil {
					return nil, err
				}
			}
			c.skip = 0
		}
		// Few rows left (a top-N's bound, a selective filter): the other
		// columns convert only those rows, not the morsel's (selCols).
		selCols, wholeCols := s.rest, []int(nil)
		if sel == nil || len(sel) == n {
			selCols, wholeCols = nil, s.rest
		} else if len(sel)*sparseRows > n {
			selCols = nil
			for _, j := range s.rest {
				if s.selRead(j, len(sel), n) {
					selCols = append(selCols, j)
				} else {
					wholeCols = append(wholeCols, j)
				}
			}
		}
		if len(selCols) > 0 {
			t0 := time.Now()
			err := s.readRows(x, c, b, selCols, sel, n)
			s.decodeNanos.Add(int64(time.Since(t0)))
			if err != nil {
				return nil, err
			}
		}
		if err := read(wholeCols); err != nil {
			return nil, err
		}
		for _, j := range s.filterOnly {
			// Not handed on: the stream may convert its next morsel
			// into it.
			if !slices.Contains(compact, j) {
				c.streams[j].Recycle(b.Vecs[j])
			}
		}
		s.handOnly(b)
		if sel != nil && len(sel) < n {
			out := &vec.Batch{Vecs: make([]*vec.Vector, len(b.Vecs)), Len: len(sel)}
			for i, v := range b.Vecs {
				if slices.Contains(selCols, i) || slices.Contains(compact, i) {
					out.Vecs[i] = v // those rows only already
					continue
				}
				out.Vecs[i] = gather(v, sel)
			}
			// The passing rows are copied out: the streams may convert
			// their next morsels into these vectors.
			for j, st := range c.streams {
				if !slices.Contains(selCols, j) && !slices.Contains(compact, j) {
					st.Recycle(b.Vecs[j])
				}
			}
			b = out
		}
		s.addPositions(b, c.g, c.pos-n, sel)
		if err := x.fits(s, liveBytes(b.Vecs)); err != nil {
			return nil, err
		}
		s.stats.rowsOut.Add(int64(b.Len))
		return b, nil
	}
	return nil, nil
}

// streamLate evaluates a split filter (scanOp.early) over the streamed
// morsel b: it reads the early columns into b with read, evaluates the
// early conjuncts, then reads the late (string) columns — for the rows
// that passed unless every row did (compact true: b holds those rows
// of the late columns, the ones the late conjuncts pass), else for the
// whole morsel — and returns the rows that pass both. The late columns
// are strings, whose NextSel copies a page's selected strings in one
// pass over their lengths: cheaper than converting the morsel whole at
// any selectivity (it converted each run of consecutive rows with calls
// of its own, and was used up to one row in sparseRows only: ClickBench
// Q37's Title at 1 row in 14 had cost 10 % more CPU). A morsel no row
// of which passes the early conjuncts reads nothing of the late columns.
func (s *scanOp) streamLate(x *execCtx, c *scanCursor, b *vec.Batch, read func([]int) error) (sel []int32, compact []int, err error) {
	n := b.Len
	var early []int // early columns b holds for the rows of sel only
	if s.stages != nil {
		sel, early, err = s.stagedFilter(x, c, b, s.stages)
	} else {
		s.compileFilter()
		var eq bool
		if sel, early, eq, err = s.readEq(x, c, b, s.earlyEq, s.earlyCols); err == nil && !eq {
			if err = read(s.earlyCols); err == nil {
				sel, err = s.filterWith(x, s.early, b)
			}
		}
	}
	if err != nil || len(sel) == 0 {
		c.skipLate += n
		return nil, early, err
	}
	for _, j := range s.lateCols {
		if err := c.streams[j].Skip(x.ctx, c.skipLate); err != nil {
			return nil, nil, err
		}
	}
	c.skipLate = 0
	if len(sel) == n {
		// Every row passed: the late columns convert the whole morsel,
		// and the late conjuncts are evaluated over those rows.
		if err := read(s.lateCols); err != nil {
			return nil, nil, err
		}
		sc := s.filterScratch()
		defer s.scratch.Put(sc)
		kept, err := s.late.SelectFrom(b, sel, sc)
		if err != nil {
			return nil, nil, err
		}
		return slices.Clone(kept), nil, nil
	}
	t0 := time.Now()
	m := &vec.Batch{Vecs: make([]*vec.Vector, len(b.Vecs)), Len: len(sel)}
	for _, j := range s.earlyCols {
		if slices.Contains(early, j) {
			m.Vecs[j] = b.Vecs[j]
		} else {
			m.Vecs[j] = gather(b.Vecs[j], sel)
		}
	}
	var kept []int32
	if s.latePush != nil {
		// The late column read for the rows of sel that pass: the
		// strings of the others are not copied.
		j := s.lateCols[0]
		v, rows, err := c.streams[j].NextSelTest(x.ctx, n, sel, s.latePush)
		if err != nil {
			return nil, nil, err
		}
		s.decodeNanos.Add(int64(time.Since(t0)))
		s.latePushRows.Add(int64(len(sel)))
		m.Vecs[j] = v
		kept = make([]int32, 0, len(rows))
		i := 0
		for _, r := range rows {
			for sel[i] != r {
				i++
			}
			kept = append(kept, int32(i))
		}
	} else {
		if err := s.readRows(x, c, m, s.lateCols, sel, n); err != nil {
			return nil, nil, err
		}
		s.decodeNanos.Add(int64(time.Since(t0)))
		if kept, err = s.filterWith(x, s.late, m); err != nil {
			return nil, nil, err
		}
	}
	out := make([]int32, len(kept))
	for i, k := range kept {
		out[i] = sel[k]
	}
	for _, j := range s.lateCols {
		if len(kept) < len(sel) && s.latePush == nil {
			b.Vecs[j] = gather(m.Vecs[j], kept)
			// Copied out: the stream may read its next rows into it.
			c.streams[j].Recycle(m.Vecs[j])
		} else {
			b.Vecs[j] = m.Vecs[j]
		}
	}
	if len(kept) < len(sel) {
		for _, j := range early {
			b.Vecs[j] = gather(b.Vecs[j], kept)
		}
	}
	return out, append(slices.Clone(s.lateCols), early...), nil
}

// sparseRows: a streamed morsel of which at most one row in sparseRows
// is left after the filter and a top-N's bound converts only those rows
// of the other columns (readRows).
const sparseRows = 64

// selRead reports whether column j reads rows sel of a morsel of n rows
// (sel < n) only (NextSel), not the morsel whole, the rows then
// gathered: any column but a BOOLEAN one (whose NextSel converts each
// run of consecutive rows with calls of its own), which does when at
// most one row in sparseRows is selected. A string column's NextSel
// copies a page's selected strings in one pass over their lengths,
// which costs less than converting them all and copying the selected
// ones again, at any selectivity (20M-row ClickBench file, 1 thread,
// URL and Referer of the rows a filter on WatchID passes: 17 % less
// user CPU at 10 % of the rows, 10 % at 45 %, 16 % at 95 %); a
// fixed-width column's picks the selected values out of each page by
// position, in one conversion.
func (s *scanOp) selRead(j, sel, n int) bool {
	return s.table.Columns[j].Type != vec.Bool || sel*sparseRows <= n
}

// readRows reads rows sel of the next n rows of columns cols into b,
// each column converting only those rows (storage.ColumnStream.NextSel):
// the pages between them are read but neither decompressed nor
// converted.
func (s *scanOp) readRows(x *execCtx, c *scanCursor, b *vec.Batch, cols []int, sel []int32, n int) error {
	for _, j := range cols {
		v, err := c.streams[j].NextSel(x.ctx, n, sel)
		if err != nil {
			return err
		}
		b.Vecs[j] = v
	}
	return nil
}

// readSel reads rows sel (in increasing order, not empty) of the next n
// rows of stream st, column j: the selected rows only when they are few
// (selRead), else all n rows, the selected ones copied out.
func (s *scanOp) readSel(x *execCtx, j int, st *storage.ColumnStream, sel []int32, n int) (*vec.Vector, error) {
	if len(sel) < n && s.selRead(j, len(sel), n) {
		return st.NextSel(x.ctx, n, sel)
	}
	v, err := st.Next(x.ctx, n)
	if err != nil || len(sel) == n {
		return v, err
	}
	out := v.Gather(sel)
	st.Recycle(v)
	return out, nil
}

// lateMorsel returns rows [start, end) of the cursor's row group, whose
// string filter columns are read for the rows the early conjuncts passed
// only, the late conjuncts evaluated over those rows, and the other
// columns read for the rows that pass both; nil when none does.
func (s *scanOp) lateMorsel(x *execCtx, c *scanCursor, start, end int) (*vec.Batch, error) {
	n := end - start
	sel := c.sels[start/morselRows]
	if len(sel) == 0 {
		c.skip += n
		c.skipLate += n
		return nil, nil
	}
	t1 := time.Now()
	m := &vec.Batch{Vecs: make([]*vec.Vector, len(c.vecs)), Len: len(sel)}
	for j, v := range c.vecs {
		if v == nil {
			continue
		}
		if v = v.Slice(start, end); len(sel) < n {
			v = v.Gather(sel)
		}
		m.Vecs[j] = v
	}
	for _, j := range s.lateCols {
		st := c.lazy[j]
		if err := st.Skip(x.ctx, c.skipLate); err != nil {
			return nil, err
		}
		v, err := s.readSel(x, j, st, sel, n)
		if err != nil {
			return nil, err
		}
		m.Vecs[j] = v
	}
	c.skipLate = 0
	s.decodeNanos.Add(int64(time.Since(t1)))
	kept, err := s.filterWith(x, s.late, m)
	if err != nil {
		return nil, err
	}
	if len(kept) == 0 {
		c.skip += n
		return nil, nil
	}
	if len(kept) < len(sel) {
		rows := make([]int32, len(kept))
		for i, k := range kept {
			rows[i] = sel[k]
		}
		sel = rows
		for j, v := range m.Vecs {
			m.Vecs[j] = gather(v, kept)
		}
		m.Len = len(sel)
	}
	t1 = time.Now()
	for _, j := range s.rest {
		st := c.lazy[j]
		if err := st.Skip(x.ctx, c.skip); err != nil {
			return nil, err
		}
		v, err := s.readSel(x, j, st, sel, n)
		if err != nil {
			return nil, err
		}
		m.Vecs[j] = v
	}
	c.skip = 0
	s.decodeNanos.Add(int64(time.Since(t1)))
	s.handOnly(m)
	s.addPositions(m, c.g, start, sel)
	s.stats.rowsOut.Add(int64(m.Len))
	return m, nil
}

// nextStreamRows returns the rows of the next streamed morsel and doubles
// the one after it (when another worker doubled it first, that will do).
func (s *scanOp) nextStreamRows() int {
	top := int64(morselRows)
	if s.streamMax > 0 {
		top = min(top, int64(s.streamMax))
	}
	n := s.streamRows.Load()
	if n <= 0 || n >= top {
		return int(top)
	}
	s.streamRows.CompareAndSwap(n, min(2*n, top))
	return int(n)
}

// advance claims the next row group that may hold matching rows and
// decodes what the query needs of it.
func (s *scanOp) advance(x *execCtx, w int, c *scanCursor) (bool, error) {
	s.open.Do(func() {
		s.first, s.rest = s.columnsOf()
		s.cols = append(append([]int(nil), s.first...), s.rest...)
		if s.bound != nil {
			for _, j := range s.first {
				if j != s.bound.col {
					s.firstRest = append(s.firstRest, j)
				}
			}
		}
		if s.above != nil {
			for _, j := range s.first {
				if !s.above[j] {
					s.filterOnly = append(s.filterOnly, j)
				}
			}
		}
		s.splitLate()
		s.planPush()
		s.planStages()
		if len(s.table.RowGroupRows) > 0 {
			s.rd, s.openErr = s.cat.Open(s.table)
			if s.openErr == nil {
				s.rd.VerifyChecksums(x.s.settings.VerifyPageChecksums)
			}
		}
	})
	if s.openErr != nil {
		return false, s.openErr
	}
	for {
		g := int(s.nextRG.Add(1) - 1)
		if g >= len(s.table.RowGroupRows) {
			return false, nil
		}
		rows := int(s.table.RowGroupRows[g])
		if s.pruned(g) {
			s.groupsPruned.Add(1)
			s.stats.rowsIn.Add(int64(rows))
			x.progress(rows)
			continue
		}
		s.groupsRead.Add(1)
		if s.stream {
			return true, s.openStreams(x, w, c, g, rows, nil)
		}
		if once := s.rd.PassOnce(g, s.cols); len(once) > 0 {
			s.onceGroups.Add(1)
			return true, s.openStreams(x, w, c, g, rows, once)
		}
		ok, err := s.load(x, w, c, g, rows)
		s.stats.rowsIn.Add(int64(rows))
		if err != nil {
			return false, err
		}
		if ok {
			// The rows count as scanned as their morsels are handed
			// on (morsel): the aggregate's estimate extrapolates from
			// the rows it has seen over the rows counted here.
			return true, nil
		}
		x.progress(rows)
		s.groupsNoMatch.Add(1)
	}
}

// splitLate splits the filter into early and late conjuncts (see
// scanOp.early) when it has both kinds. A top-N's bound and a filter
// that builds strings keep the filter whole.
func (s *scanOp) splitLate() {
	if s.where == nil || s.bound != nil || len(s.whereTemps) > 0 {
		return
	}
	var early, late []expr.Expr
	lateCol := map[int]bool{}
	for _, t := range expr.Conjuncts(s.where) {
		costly := false
		for _, j := range expr.Columns(t) {
			if s.table.Columns[j].Type == vec.String {
				costly = true
				lateCol[j] = true
			}
		}
		if costly {
			late = append(late, t)
		} else {
			early = append(early, t)
		}
	}
	if len(early) == 0 || len(late) == 0 {
		return
	}
	s.early, s.late = expr.NewFilterOf(early), expr.NewFilterOf(late)
	s.earlyTerms, s.lateTerms = early, late
	for _, j := range s.first {
		if lateCol[j] {
			s.lateCols = append(s.lateCols, j)
		} else {
			s.earlyCols = append(s.earlyCols, j)
		}
	}
}

// planStages plans the evaluation of a streamed morsel's filter a
// column at a time (see filterStage): of the early conjuncts when the
// filter is split, else of the filter when no conjunct is pushed, no
// top-N's bound applies and the filter builds no strings.
func (s *scanOp) planStages() {
	switch {
	case s.noStages || s.where == nil || s.bound != nil || len(s.whereTemps) > 0:
	case s.early != nil:
		s.stages = planFilterStages(s.earlyTerms, s.earlyCols)
		s.planLatePush()
	case s.push == nil:
		s.stages = planFilterStages(expr.Conjuncts(s.where), s.first)
	}
}

// planLatePush plans the late conjuncts' test as their column is read
// (scanOp.latePush), when they all test the one late column against
// constants.
func (s *scanOp) planLatePush() {
	if s.noPush || len(s.lateCols) != 1 || slices.Contains(s.lengths, s.lateCols[0]) {
		return
	}
	col := s.lateCols[0]
	for _, t := range s.lateTerms {
		if j, ok := expr.StringColumnTest(t); !ok || j != col {
			return
		}
	}
	t := &storage.StringTest{}
	if _, nonEmpty, ok := expr.EmptyStringTest(s.lateTerms[0]); ok && len(s.lateTerms) == 1 {
		t.Empty = storage.EmptyOnly
		if nonEmpty {
			t.Empty = storage.NonEmpty
		}
	} else if m, ok := expr.StringMatcher(s.lateTerms); ok {
		t.Match = m
	} else {
		return
	}
	width, late := len(s.table.Columns), s.late
	t.Values = func(v *vec.Vector) ([]int32, error) {
		b := &vec.Batch{Vecs: make([]*vec.Vector, width), Len: v.Len}
		b.Vecs[col] = v
		sc := s.filterScratch()
		defer s.scratch.Put(sc)
		sel, err := late.Select(b, sc)
		if err != nil {
			return nil, err
		}
		return slices.Clone(sel), nil
	}
	s.latePush = t
}

func (s *scanOp) pruned(g int) bool {
	for _, b := range s.prune {
		if lo, hi, ok := s.rd.IntBounds(g, b.col); ok && b.excludes(lo, hi) {
			return true
		}
	}
	return false
}

// load decodes row group g into c: the filter's columns first, then, if
// any row passes, the other columns the query needs. It reports false when
// no row passes.
func (s *scanOp) load(x *execCtx, w int, c *scanCursor, g, rows int) (bool, error) {
	*c = scanCursor{g: g, rows: rows, vecs: make([]*vec.Vector, len(s.table.Columns))}
	first, filter := s.first, s.where
	if s.early != nil {
		first = s.earlyCols
	}
	if err := s.decode(x, w, c, first); err != nil {
		return false, err
	}
	passed := 0
	// sift evaluates f (the whole filter when nil) over every morsel.
	sift := func(f *expr.Filter) error {
		t0 := time.Now()
		defer s.stats.since(t0)
		c.sels, passed = c.sels[:0], 0
		for start := 0; start < rows; start += morselRows {
			end := min(start+morselRows, rows)
			sel, err := s.filterWith(x, f, sliceBatch(&vec.Batch{Vecs: c.vecs, Len: c.rows}, start, end))
			if err != nil {
				return err
			}
			c.sels = append(c.sels, sel)
			passed += len(sel)
		}
		return nil
	}
	if filter != nil {
		if err := sift(s.early); err != nil {
			return false, err
		}
		if passed > 0 && s.early != nil {
			if passed <= rows/selective {
				// Few rows pass the early conjuncts: the string
				// columns are read for those rows only.
				c.late = true
				s.lateGroups.Add(1)
			} else {
				if err := s.decode(x, w, c, s.lateCols); err != nil {
					return false, err
				}
				if err := sift(nil); err != nil {
					return false, err
				}
			}
		}
		if passed == 0 {
			s.drop(x, c)
			return false, nil
		}
	}
	if c.late || len(s.rest) > 0 && (s.bound != nil || s.where != nil && passed <= rows/selective) {
		// Few matches: read the other columns page by page, for the
		// morsels with matches only.
		c.lazy = map[int]*storage.ColumnStream{}
		lazy := s.rest
		if c.late {
			lazy = append(slices.Clone(s.rest), s.lateCols...)
		}
		for _, j := range lazy {
			st, err := s.rd.Stream(x.ctx, g, j)
			if err != nil {
				return false, err
			}
			st.ReadOn()
			c.lazy[j] = st
		}
		if s.bound == nil && len(s.rest) > 0 {
			s.lazyGroups.Add(1)
		}
		c.valid = true
		return true, nil
	}
	if err := s.decode(x, w, c, s.rest); err != nil {
		return false, err
	}
	c.valid = true
	return true, nil
}

// cut drops the rows of sel (nil: all of b) that cannot be among the rows
// of the top-N above the scan (nil: all pass).
func (s *scanOp) cut(b *vec.Batch, sel []int32) []int32 {
	if s.bound == nil {
		return sel
	}
	return s.bound.filter(b.Vecs[s.bound.col], sel, b.Len)
}

// filterSliceTime is how long one evaluation of the filter may take: the
// scan evaluates it over slices of rows that start small and grow to a
// morsel while evaluations stay well under it, and shrink when one takes
// longer. Cancellation is checked between slices, so an expensive predicate
// (a regular expression building long strings) still stops soon after the
// query is cancelled.
const filterSliceTime = 20 * time.Millisecond

// filterMorsel evaluates the filter over the morsel m and returns the rows
// that pass.
//
// A filter that builds strings before it compares them (REGEXP_REPLACE(URL,
// …) LIKE …) is also evaluated over slices whose strings fit in
// tempChunkBytes, each slice's strings charged to the statement's budget
// while it is evaluated.
//
// The result is the scan's to keep: it is not the worker's scratch memory.
func (s *scanOp) filterMorsel(x *execCtx, m *vec.Batch) ([]int32, error) {
	return s.filterWith(x, nil, m)
}

// filterScratch takes a worker's FilterScratch from the scan's pool, or
// a new one; the caller puts it back (s.scratch.Put).
func (s *scanOp) filterScratch() *expr.FilterScratch {
	if sc, ok := s.scratch.Get().(*expr.FilterScratch); ok {
		return sc
	}
	return &expr.FilterScratch{}
}

// compileFilter compiles where, once the plan is final.
func (s *scanOp) compileFilter() {
	s.filterOnce.Do(func() {
		s.filter = expr.NewFilter(s.where)
		s.ident = make([]int32, morselRows)
		for i := range s.ident {
			s.ident[i] = int32(i)
		}
		s.eq, s.earlyEq = intEqOf(s.filter), intEqOf(s.early)
	})
}

// readEq reads the streamed morsel b's filter column cols[0] where the
// filter, read from cols, is eq, one col = constant on an integer
// column: the stream compares the column's stored values
// where they lie (ColumnStream.NextEq), and the passing rows' values,
// every one the constant, are made rather than converted (or not at
// all, where no operator above reads the column). It returns the rows
// that pass (not nil) and, where fewer than the morsel's, that b holds
// that column for them only (compact); ok is false, nothing read, where
// this does not apply.
func (s *scanOp) readEq(x *execCtx, c *scanCursor, b *vec.Batch, eq intEq, cols []int) (sel []int32, compact []int, ok bool, err error) {
	if !eq.ok || len(cols) != 1 || cols[0] != eq.col || len(s.whereTemps) > 0 {
		return nil, nil, false, nil
	}
	col, n := eq.col, b.Len
	t0 := time.Now()
	sel, ok, err = c.streams[col].NextEq(x.ctx, n, eq.c)
	s.decodeNanos.Add(int64(time.Since(t0)))
	if err != nil || !ok {
		return nil, nil, false, err
	}
	if sel == nil {
		sel = []int32{}
	}
	if !slices.Contains(s.filterOnly, col) {
		v := vec.NewVector(s.table.Columns[col].Type, len(sel))
		v.I64 = v.I64[:len(sel)]
		for i := range v.I64 {
			v.I64[i] = eq.c
		}
		v.Len = len(sel)
		b.Vecs[col] = v
		if len(sel) < n {
			compact = []int{col}
		}
	}
	return sel, compact, true, nil
}

// filterWith is filterMorsel with the filter f, or s.where compiled when
// f is nil.
func (s *scanOp) filterWith(x *execCtx, f *expr.Filter, m *vec.Batch) ([]int32, error) {
	s.compileFilter()
	sc := s.filterScratch()
	defer s.scratch.Put(sc)
	if f == nil {
		f = s.filter
	}
	var sel []int32
	whole := false // sel is sc's memory
	start, end := 0, m.Len
	var tempPerRow int64
	if len(s.whereTemps) > 0 {
		var err error
		if tempPerRow, err = tempBytesPerRow(x, s, s.whereTemps, m); err != nil {
			return nil, fmt.Errorf("WHERE: %w", err)
		}
	}
	for a := start; a < end; {
		if err := x.ctx.Err(); err != nil {
			return nil, err
		}
		step := int(s.filterStep.Load())
		if step == 0 {
			step = 1024 // grows to a morsel while evaluations are quick
		}
		if tempPerRow > 0 {
			step = int(min(int64(step), max(1, x.tempChunkBytes()/tempPerRow)))
		}
		b := min(a+step, end)
		charge := tempPerRow * int64(b-a)
		if err := x.grow(s, charge); err != nil {
			return nil, fmt.Errorf("WHERE: evaluating %s: %w", abbreviate(s.where.String()), err)
		}
		t0 := time.Now()
		part := m
		if a != start || b != end {
			part = sliceBatch(m, a, b)
		}
		got, err := f.Select(part, sc)
		x.release(s, charge)
		if err != nil {
			return nil, err
		}
		if a == start && b == end {
			sel, whole = got, true
		} else {
			for _, r := range got {
				sel = append(sel, r+int32(a-start))
			}
		}
		switch d := time.Since(t0); {
		case d > filterSliceTime && step > 64:
			s.filterStep.CompareAndSwap(int64(step), int64(step/2))
		case d < filterSliceTime/4 && step < morselRows:
			s.filterStep.CompareAndSwap(int64(step), int64(step*2))
		}
		a = b
	}
	switch {
	case len(sel) == m.Len && m.Len <= len(s.ident):
		return s.ident[:m.Len], nil // every row: shared, read-only
	case whole:
		return slices.Clone(sel), nil
	}
	return sel, nil
}

// decode reads columns cols of the cursor's row group.
func (s *scanOp) decode(x *execCtx, w int, c *scanCursor, cols []int) error {
	if len(cols) == 0 {
		return nil
	}
	x.phaseStart(w, "scan")
	t0 := time.Now()
	vs, err := s.rd.RowGroup(x.ctx, c.g, cols)
	s.decodeNanos.Add(int64(time.Since(t0)))
	if c.held == 0 && c.streams == nil { // a streamed row group counts its rows as it goes
		s.decodedRows.Add(int64(c.rows))
	}
	s.stats.since(t0)
	x.phaseEnd(w, "scan")
	if err != nil {
		return err
	}
	n := vecBytes(vs)
	if err := x.grow(s, n); err != nil {
		return err
	}
	c.held += n
	for i, j := range cols {
		c.vecs[j] = vs[i]
	}
	return nil
}

func (s *scanOp) close(x *execCtx) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.decodedRows.Load(); r > 0 && len(s.stats.phases) == 0 {
		s.stats.mu.Lock()
		s.stats.phases = []PhaseStat{{Name: "decode", Rows: r, Time: time.Duration(s.decodeNanos.Load())}}
		s.stats.mu.Unlock()
	}
	if len(s.workers) > 1 {
		ws := make([]WorkerStat, 0, len(s.workers))
		for _, w := range s.workers {
			ws = append(ws, *w)
		}
		slices.SortFunc(ws, func(a, b WorkerStat) int { return cmp.Compare(a.Worker, b.Worker) })
		s.stats.mu.Lock()
		s.stats.workers = ws
		s.stats.mu.Unlock()
	}
	for _, c := range s.cursors {
		s.drop(x, c)
	}
	if s.rd != nil {
		s.rd.Close()
		s.rd = nil
	}
}

// dummyScanOp is the single row of a SELECT without FROM.
type dummyScanOp struct {
	opBase
	done atomic.Bool
}

func (d *dummyScanOp) detail() []string { return nil }

func (d *dummyScanOp) next(x *execCtx, w int) (*vec.Batch, error) {
	if d.done.Swap(true) {
		return nil, nil
	}
	t0 := time.Now()
	defer d.stats.since(t0)
	d.stats.rowsIn.Add(1)
	d.stats.rowsOut.Add(1)
	return &vec.Batch{Len: 1}, nil
}
