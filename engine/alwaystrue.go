package engine

import (
	"math"
	"strings"

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
		i, col int
		op     sql.Op
		c      int64
	}
	parts := conjuncts(where)
	var cands []cand
	binder := &expr.Binder{Columns: rel.cols}
	for i, p := range parts {
		b, ok := p.(*sql.Binary)
		if !ok {
			continue
		}
		op := b.Op
		id, lit := b.X, b.Y
		if isLiteral(b.X) {
			id, lit = b.Y, b.X
			switch op {
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
		switch op {
		case sql.OpEq, sql.OpLt, sql.OpLe, sql.OpGt, sql.OpGe:
		default:
			continue
		}
		ident, ok1 := id.(*sql.Ident)
		l, ok2 := literal(lit)
		if !ok1 || !ok2 || ident.Table != "" {
			continue
		}
		col := -1
		for j, c := range rel.cols {
			if c.Name == ident.Name {
				col = j
				break
			}
		}
		if col < 0 {
			for j, c := range rel.cols {
				if col < 0 && strings.EqualFold(c.Name, ident.Name) {
					col = j
				}
			}
		}
		if col < 0 {
			continue
		}
		t := rel.cols[col].Type
		switch {
		case (t == vec.Int16 || t == vec.Int32 || t == vec.Int64) && l.Kind == sql.LitInt:
			cands = append(cands, cand{i: i, col: col, op: op, c: l.Int})
		case t == vec.Date && (l.Kind == sql.LitString || l.Kind == sql.LitDate):
			// The literal as the date it is compared as.
			k, err := binder.Bind(&sql.Cast{X: l, Type: "DATE", At: l.Pos()})
			c, isConst := k.(*expr.Const)
			if err != nil || !isConst || c.V.Type != vec.Date || c.V.Len != 1 || c.V.IsNull(0) {
				continue
			}
			cands = append(cands, cand{i: i, col: col, op: op, c: c.V.I64[0]})
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
			if !b.OK || b.AllNull {
				holds = false
				break
			}
			switch cd.op {
			case sql.OpEq:
				holds = b.Min == cd.c && b.Max == cd.c
			case sql.OpLt:
				holds = b.Max < cd.c
			case sql.OpLe:
				holds = b.Max <= cd.c
			case sql.OpGt:
				holds = b.Min > cd.c
			case sql.OpGe:
				holds = b.Min >= cd.c
			}
			if !holds {
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
