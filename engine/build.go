package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cachebook/engine/agg"
	"cachebook/engine/expr"
	"cachebook/engine/sql"
	"cachebook/engine/storage"
	"cachebook/engine/vec"
)

// relation resolves a FROM clause.
func (s *Session) relation(ctx context.Context, ref sql.TableRef, depth int) (*relation, error) {
	switch r := ref.(type) {
	case nil:
		return &relation{name: "(no table)", rows: 1, op: &dummyScanOp{opBase: opBase{label: "DUMMY_SCAN"}}}, nil
	case *sql.TableName:
		if err := s.resolveLazy(ctx, r.Name); err != nil {
			return nil, fmt.Errorf("%s: %w", r.Pos(), err)
		}
		return s.tableRelation(r.Name, false, r.Pos())
	case *sql.FileRef:
		return s.tableRelation(r.Path, true, r.Pos())
	case *sql.Subquery:
		q, err := s.planSelect(ctx, r.Select, depth+1)
		if err != nil {
			return nil, err
		}
		op := &subqueryOp{opBase: opBase{label: "SUBQUERY", children: []operator{q.root}}, alias: r.Alias, nVisible: q.nVisible}
		return &relation{name: r.Alias, cols: q.cols[:q.nVisible], rows: -1, op: op}, nil
	}
	return nil, fmt.Errorf("unsupported FROM clause %T", ref)
}

func (s *Session) tableRelation(name string, isFile bool, pos sql.Pos) (*relation, error) {
	t, err := s.db.catalog.Table(name, isFile)
	var nf *storage.NotFoundError
	if !isFile && errors.As(err, &nf) {
		// Table names are case-insensitive, as in DuckDB: FROM TEST
		// reads test.parquet when there is no TEST.parquet.
		var match string
		for _, n := range s.db.catalog.Names() {
			if strings.EqualFold(n, name) {
				if match != "" {
					return nil, posErr(pos, "table name %q is ambiguous: %q and %q differ only in case", name, match, n)
				}
				match = n
			}
		}
		if match != "" {
			t, err = s.db.catalog.Table(match, false)
		}
	}
	if err != nil {
		var nf *storage.NotFoundError
		if !isFile && errors.As(err, &nf) {
			if near := expr.Nearest(name, append(s.db.catalog.Names(), s.db.lazyNames()...)); near != "" {
				return nil, posErr(pos, "%v; did you mean %q?", err, near)
			}
		}
		return nil, posErr(pos, "%v", err)
	}
	scan := newScan("SEQ_SCAN", s.db.catalog, t)
	scan.noPush = s.db.noStringPush
	scan.noStages = s.db.noFilterStages
	return &relation{name: t.Name, cols: t.Columns, rows: t.Rows, op: scan, scan: scan}, nil
}

// build turns the bound query into its operator tree: the relation (a
// table scan evaluates WHERE itself), then the aggregation and HAVING,
// the projection, ORDER BY or top-N, and LIMIT.
func (s *Session) build(q *query) operator {
	op := q.rel.op
	if sc := q.rel.scan; sc != nil {
		copy(sc.need, q.need)
		sc.above = readAbove(q)
		sc.lengths = byteLengthCols(q, s.db.noStringPush)
		sc.where = q.where
		sc.proven = q.proven
		sc.whereTemps = stringTemps(q.where)
		if q.sel.Where != nil {
			sc.prune = pruneBounds(q.sel.Where, q.rel.cols)
		}
		// A query that may stop early reads pages as it goes.
		sc.stream = !q.grouped && len(q.order) == 0 && q.limit >= 0
		if sc.stream {
			sc.streamRows.Store(min(q.offset+q.limit, morselRows))
		}
	} else if q.where != nil {
		op = &filterOp{opBase: opBase{label: "FILTER", children: []operator{op}}, pred: q.where}
	}
	// reader is the aggregate that reads the relation, if any.
	var reader *hashAggOp
	if q.grouped {
		label := "HASH_GROUP_BY"
		if len(q.keys) == 0 {
			label = "UNGROUPED_AGGREGATE"
		}
		hint := int64(-1)
		if q.where == nil {
			hint = q.rel.rows
		}
		if st := s.statsAggregate(q); st != nil {
			op = st
		} else if x, ok := loneCountDistinct(q); ok {
			// A lone count(DISTINCT x) without GROUP BY runs as count(x)
			// over the groups of GROUP BY x: the distinct values are
			// grouped by the GROUP BY that the settings choose (naive,
			// radix or parallel, the tuned integer loop), not one by one
			// into the global state's set of (group, value) pairs, which
			// took about ten times as long per row. count(x) skips the
			// NULL group, as count(DISTINCT x) skips NULLs.
			reader = &hashAggOp{opBase: opBase{label: "HASH_GROUP_BY", children: []operator{op}},
				keys: []expr.Expr{x}, keyNames: []string{x.String()}, args: []expr.Expr{nil},
				specs: []agg.Spec{{Kind: agg.CountStar}}, aggNames: []string{"count_star()"},
				rowsHint: hint, settings: s.settings, cache: s.db.cache}
			op = &hashAggOp{opBase: opBase{label: label, children: []operator{reader}},
				args:  []expr.Expr{&expr.ColumnRef{Index: 0, T: x.Type(), Name: x.String()}},
				specs: []agg.Spec{{Kind: agg.Count, In: x.Type()}}, aggNames: q.aggNames,
				rowsHint: -1, serial: true, settings: s.settings, cache: s.db.cache}
		} else if inner, top, ok := s.twoStepDistinct(q, op, hint); ok {
			reader, op = inner, top
		} else {
			reader = &hashAggOp{opBase: opBase{label: label, children: []operator{op}},
				keys: q.keys, keyNames: q.keyNames, keyNotes: q.keyNotes, args: q.args, specs: q.specs, aggNames: q.aggNames,
				rewritten: q.rewritten, rowsHint: hint, settings: s.settings, cache: s.db.cache,
				distinctGroups: q.distinctGroups,
				// Only a table scan hands its morsels to several workers.
				serial: q.rel.scan == nil}
			op = reader
		}
		if sc := q.rel.scan; sc != nil && q.where == nil && reader != nil && slices.Contains(reader.keyTypes(), vec.String) {
			sc.streamMax = groupStreamRows
		}
		if q.having != nil {
			op = &filterOp{opBase: opBase{label: "HAVING", children: []operator{op}}, pred: q.having}
		}
	}
	if sub, ok := q.rel.op.(*subqueryOp); ok {
		// Only a GROUP BY with keys reads its input from several
		// workers: a subquery streams to every other reader.
		sub.stream = reader == nil || len(reader.keys) == 0
	}
	// gather: a plain filtered SELECT over a table reads on several
	// workers, its batches put back in the table's order (gatherOp).
	gather := q.top && q.rel.scan != nil && q.where != nil && !q.grouped && !q.distinct &&
		len(q.order) == 0 && q.limit < 0 && q.offset == 0 && s.settings.Threads > 1
	if gather {
		sc := q.rel.scan
		sc.positions = true
		q.out = append(q.out, &expr.ColumnRef{Index: len(sc.table.Columns), T: vec.Int64, Name: positionName})
		q.cols = append(q.cols, vec.Column{Name: positionName, Type: vec.Int64})
	}
	var bound *topNBound
	threads := 1
	if len(q.order) > 0 && q.limit >= 0 {
		if bound = topNBoundOf(q, q.limit+q.offset); bound != nil && s.settings.Threads > 1 {
			// Several workers feed the top-N; each row carries its
			// position in the table as a last, hidden key, so that ties
			// are broken as one worker reading in order breaks them.
			threads = s.settings.Threads
			sc := q.rel.scan
			sc.positions = true
			q.out = append(q.out, &expr.ColumnRef{Index: len(sc.table.Columns), T: vec.Int64, Name: positionName})
			q.cols = append(q.cols, vec.Column{Name: positionName, Type: vec.Int64})
			q.order = append(slices.Clip(q.order), orderKey{col: len(q.cols) - 1})
		}
	}
	names := make([]string, len(q.cols))
	for i, c := range q.cols {
		names[i] = c.Name
	}
	shown := append([]string(nil), names...)
	for i := q.nVisible; i < len(shown); i++ {
		if gather {
			shown[i] += " (hidden: the table's order)"
		} else {
			shown[i] += " (hidden: ORDER BY key)"
		}
	}
	op = &projectOp{opBase: opBase{label: "PROJECTION", children: []operator{op}}, exprs: q.out, names: shown}
	if gather {
		op = &gatherOp{opBase: opBase{label: "GATHER", children: []operator{op}}, threads: s.settings.Threads}
	}
	if q.distinct {
		// SELECT DISTINCT over an aggregation: group the projected rows
		// by every column.
		keys := make([]expr.Expr, len(q.cols))
		for i, c := range q.cols {
			keys[i] = &expr.ColumnRef{Index: i, T: c.Type, Name: c.Name}
		}
		op = &hashAggOp{opBase: opBase{label: "DISTINCT", children: []operator{op}},
			keys: keys, keyNames: names, rowsHint: -1, settings: s.settings, cache: s.db.cache}
	}
	if len(q.order) > 0 {
		label, keep := "ORDER_BY", int64(-1)
		if q.limit >= 0 {
			label, keep = "TOP_N", q.limit+q.offset
		}
		so := &sortOp{opBase: opBase{label: label, children: []operator{op}}, order: q.order, names: names, cols: q.cols, keep: keep,
			bound: bound, threads: threads}
		if bound != nil {
			q.rel.scan.bound = bound
		}
		op = so
	}
	if q.limit >= 0 || q.offset > 0 {
		op = &limitOp{opBase: opBase{label: "LIMIT", children: []operator{op}}, limit: q.limit, offset: q.offset}
	}
	return op
}

// readAbove returns the relation columns that the operators above the
// scan read (those the WHERE clause alone reads are not among them).
func readAbove(q *query) []bool {
	above := make([]bool, len(q.need))
	mark := func(e expr.Expr) {
		if e == nil {
			return
		}
		for _, c := range expr.Columns(e) {
			if c >= 0 && c < len(above) {
				above[c] = true
			}
		}
	}
	q.eachAbove(mark)
	return above
}

// topNBoundOf returns the bound a top-N keeping keep rows hands to the
// table scan below it, when the query allows one: no aggregation or
// DISTINCT between them, and the first ORDER BY key a column of the table.
func topNBoundOf(q *query, keep int64) *topNBound {
	if q.rel.scan == nil || q.grouped || q.distinct || keep <= 0 || len(q.order) == 0 {
		return nil
	}
	o := q.order[0]
	ref, ok := q.out[o.col].(*expr.ColumnRef)
	cols := q.rel.scan.table.Columns
	if !ok || ref.Index < 0 || ref.Index >= len(cols) || cols[ref.Index].Type != q.cols[o.col].Type {
		return nil
	}
	return &topNBound{col: ref.Index, name: cols[ref.Index].Name, desc: o.desc, nullsFirst: o.nullsFirst, keep: keep}
}

// loneCountDistinct returns x when the query's only aggregate is
// count(DISTINCT x), with no GROUP BY keys and no HAVING.
func loneCountDistinct(q *query) (expr.Expr, bool) {
	if len(q.keys) != 0 || len(q.specs) != 1 || q.specs[0].Kind != agg.CountDistinct || q.having != nil || q.args[0] == nil {
		return nil, false
	}
	return q.args[0], true
}

// pruneBounds returns the conjuncts of where of the form column op integer
// (or integer op column) over the relation's columns, which row-group
// statistics can rule out.
func pruneBounds(where sql.Expr, cols []vec.Column) []bound {
	var out []bound
	for _, p := range conjuncts(where) {
		col, op, k, ok := columnCompare(p, cols)
		if !ok {
			continue
		}
		l, isLit := k.(*sql.Literal)
		if !isLit || l.Kind != sql.LitInt {
			continue
		}
		switch cols[col].Type {
		case vec.Int16, vec.Int32, vec.Int64:
			out = append(out, bound{col: col, op: op, c: l.Int})
		}
	}
	return out
}

// columnCompare matches e as column op constant or constant op column,
// op one of = < <= > >=: it returns the column's index in cols (its name
// matched exactly, else case-insensitively), op as seen from the column,
// and the constant as written (a literal, or a negated integer literal:
// see literal).
func columnCompare(e sql.Expr, cols []vec.Column) (col int, op sql.Op, k sql.Expr, ok bool) {
	b, isBin := e.(*sql.Binary)
	if !isBin {
		return 0, 0, nil, false
	}
	op = b.Op
	switch op {
	case sql.OpEq, sql.OpLt, sql.OpLe, sql.OpGt, sql.OpGe:
	default:
		return 0, 0, nil, false
	}
	id, k := b.X, b.Y
	if isLiteral(b.X) {
		id, k = b.Y, b.X
		switch op { // 3 < x is x > 3
		case sql.OpLt:
			op = sql.OpGt
		case sql.OpLe:
			op = sql.OpGe
		case sql.OpGt:
			op = sql.OpLt
		case sql.OpGe:
			op = sql.OpLe
		}
	}
	ident, isIdent := id.(*sql.Ident)
	if !isIdent || !isLiteral(k) {
		return 0, 0, nil, false
	}
	col = -1
	for j, c := range cols {
		if c.Name == ident.Name {
			col = j
			break
		}
	}
	for j := 0; col < 0 && j < len(cols); j++ {
		if strings.EqualFold(cols[j].Name, ident.Name) {
			col = j
		}
	}
	if col < 0 {
		return 0, 0, nil, false
	}
	return col, op, k, true
}

// groupStreamRows caps the morsels that a scan without a filter converts
// page by page for a GROUP BY on a string key. The morsel's keys are read
// three times, as they are converted, hashed and probed: a morsel this
// small stays in the L2 cache from the first read to the last, beside the
// pre-aggregation's slots, where one of morselRows rows leaves it. Behind
// a filter, which passes on only some of each morsel's rows, the smaller
// morsels cost more than they saved (docs/engine.md).
const groupStreamRows = 4096
