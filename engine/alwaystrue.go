package engine

import (
	"math"

	"cachebook/engine/expr"
	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// conjuncts returns the top-level AND operands of e.
func conjuncts(e sql.Expr) []sql.Expr {
	if b, ok := e.(*sql.Binary); ok && b.Op == sql.OpAnd {
		return append(conjuncts(b.X), conjuncts(b.Y)...)
	}
	return []sql.Expr{e}
}

// alwaysTrue splits the WHERE clause where over the table rel into the
// conjuncts to evaluate and those the row groups' statistics prove true
// for every row of the table: column op constant, over a REQUIRED integer
// or date column (no NULL makes it unknown), where every row group's
// min_value and max_value lie on the passing side (EventDate >=
// '2013-07-01' over a month of July). Such a conjunct is not evaluated and
// its column not read for it. keep is nil when every conjunct is proven.
func (s *Session) alwaysTrue(rel *relation, where sql.Expr) (keep sql.Expr, proven []string) {
	if rel.scan == nil {
		return where, nil
	}
	type cand struct {
		i int
		bound
	}
	parts := conjuncts(where)
	var cands []cand
	binder := &expr.Binder{Columns: rel.cols}
	for i, p := range parts {
		col, op, k, ok := columnCompare(p, rel.cols)
		if !ok {
			continue
		}
		l, _ := literal(k)
		t := rel.cols[col].Type
		switch {
		case (t == vec.Int16 || t == vec.Int32 || t == vec.Int64) && l.Kind == sql.LitInt:
			cands = append(cands, cand{i, bound{col: col, op: op, c: l.Int}})
		case t == vec.Date && (l.Kind == sql.LitString || l.Kind == sql.LitDate):
			// The literal as the date it is compared as.
			k, err := binder.Bind(&sql.Cast{X: l, Type: "DATE", At: l.Pos()})
			c, isConst := k.(*expr.Const)
			if err != nil || !isConst || c.V.Type != vec.Date || c.V.Len != 1 || c.V.IsNull(0) {
				continue
			}
			cands = append(cands, cand{i, bound{col: col, op: op, c: c.V.I64[0]}})
		}
	}
	if len(cands) == 0 {
		return where, nil
	}
	rd, err := s.db.catalog.Open(rel.scan.table)
	if err != nil {
		return where, nil
	}
	defer rd.Close()
	drop := make([]bool, len(parts))
	for _, cd := range cands {
		if !rd.Required(cd.col) {
			continue
		}
		holds := true
		for g, n := range rel.scan.table.RowGroupRows {
			if n == 0 {
				continue
			}
			b := rd.StatBounds(g, cd.col)
			if holds = b.OK && !b.AllNull && cd.holds(b.Min, b.Max); !holds {
				break
			}
		}
		if holds {
			drop[cd.i] = true
		}
	}
	for i, p := range parts {
		if drop[i] {
			proven = append(proven, sql.Format(p))
			continue
		}
		if keep == nil {
			keep = p
		} else {
			keep = &sql.Binary{Op: sql.OpAnd, X: keep, Y: p, At: keep.Pos()}
		}
	}
	return keep, proven
}

// literal returns e as a literal: -n, an integer literal negated, is the
// literal of -n.
func literal(e sql.Expr) (*sql.Literal, bool) {
	switch x := e.(type) {
	case *sql.Literal:
		return x, true
	case *sql.Unary:
		if l, ok := x.X.(*sql.Literal); ok && x.Op == sql.OpNeg && l.Kind == sql.LitInt && l.Int > math.MinInt64 {
			return &sql.Literal{Kind: sql.LitInt, Int: -l.Int, At: x.At}, true
		}
	}
	return nil, false
}

func isLiteral(e sql.Expr) bool { _, ok := literal(e); return ok }
