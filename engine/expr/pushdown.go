package expr

import (
	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// StringColumnTest reports whether the conjunct e tests one string column
// against constants only — a comparison with a constant, [NOT] IN a list,
// [NOT] LIKE a constant pattern, IS [NOT] NULL — and which column (an
// index into the batch). Such a test depends on the column's value alone
// and fails on none, so a reader may evaluate it once per distinct value
// (a Parquet dictionary's entries) instead of once per row.
func StringColumnTest(e Expr) (col int, ok bool) {
	c := compileConjunct(e)
	switch c.kind {
	case conjCmp, conjIn, conjLike, conjIsNull, conjNotNull:
	default:
		return 0, false
	}
	r, isCol := c.x.(*ColumnRef)
	if !isCol || r.T != vec.String {
		return 0, false
	}
	return r.Index, true
}

// EmptyStringTest reports whether the conjunct e compares a string column with
// the empty string, = (nonEmpty false) or <> (nonEmpty true): a test of the
// strings' lengths alone, which NULL never passes.
func EmptyStringTest(e Expr) (col int, nonEmpty, ok bool) {
	c := compileConjunct(e)
	if c.kind != conjCmp || c.lane != laneStr || len(c.s) != 0 || c.op != sql.OpEq && c.op != sql.OpNe {
		return 0, false, false
	}
	r, isCol := c.x.(*ColumnRef)
	if !isCol || r.T != vec.String {
		return 0, false, false
	}
	return r.Index, c.op == sql.OpNe, true
}
