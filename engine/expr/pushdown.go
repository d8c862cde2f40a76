package expr

import (
	"bytes"
	"strings"

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

// isStrlen reports whether f is strlen (octet_length) of a column of
// strings, or of one UseByteLengths rewrote (a BIGINT column), and
// which.
func isStrlen(f *fn) (*ColumnRef, bool) {
	if len(f.args) != 1 || !strings.EqualFold(f.name, "strlen") && !strings.EqualFold(f.name, "octet_length") {
		return nil, false
	}
	r, ok := f.args[0].(*ColumnRef)
	return r, ok && (r.T == vec.String || r.T == vec.Int64)
}

// ByteLengthsOnly reports whether the expressions es read column col,
// and read it only as the argument of strlen (octet_length): the byte
// lengths of its strings would do for them (UseByteLengths).
func ByteLengthsOnly(es []Expr, col int) bool {
	found, other := false, false
	for _, e := range es {
		Walk(e, func(x Expr) bool {
			if f, ok := x.(*fn); ok {
				if r, ok := isStrlen(f); ok && r.Index == col {
					found = true
					return false
				}
			}
			if r, ok := x.(*ColumnRef); ok && r.Index == col {
				other = true
			}
			return true
		})
	}
	return found && !other
}

// UseByteLengths rewrites, in place, every strlen(col) of e into a read
// of column col as BIGINT: the batches e is then evaluated over hold the
// byte lengths of the column's strings in its place, not the strings.
// It still prints as strlen(col).
func UseByteLengths(e Expr, col int) {
	Walk(e, func(x Expr) bool {
		f, ok := x.(*fn)
		if !ok {
			return true
		}
		r, ok := isStrlen(f)
		if !ok || r.Index != col || r.T != vec.String {
			return ok && r.Index == col
		}
		f.args[0] = &ColumnRef{Index: col, T: vec.Int64, Name: r.Name}
		f.do = func(args []*vec.Vector, n int) (*vec.Vector, error) {
			// The lengths themselves, not a copy: like a column read,
			// the result is read, never written (Eval gives it its own
			// validity).
			return &vec.Vector{Type: vec.Int64, Len: n, I64: args[0].I64[:n:n]}, nil
		}
		return false
	})
}

// StringMatcher returns a test of one string, not NULL, that is true
// exactly when every conjunct of terms is, and whether it could: each
// must test one string column against constants (StringColumnTest) by a
// comparison, [NOT] IN, [NOT] LIKE (case-sensitive) or IS [NOT] NULL. A
// reader tests a page's strings with it where they lie, and copies only
// those that pass.
func StringMatcher(terms []Expr) (func([]byte) bool, bool) {
	var tests []func([]byte) bool
	never := func([]byte) bool { return false }
	for _, t := range terms {
		c := compileConjunct(t)
		if r, ok := c.x.(*ColumnRef); !ok || r.T != vec.String {
			return nil, false
		}
		switch c.kind {
		case conjCmp:
			if c.lane != laneStr {
				return nil, false
			}
			op, k := c.op, c.s
			switch op {
			case sql.OpEq:
				tests = append(tests, func(s []byte) bool { return string(s) == string(k) })
			case sql.OpNe:
				tests = append(tests, func(s []byte) bool { return string(s) != string(k) })
			default:
				tests = append(tests, func(s []byte) bool { return cmpResult(op, bytes.Compare(s, k)) })
			}
		case conjIn:
			in := c.in
			switch {
			case in.lane != laneStr:
				return nil, false
			case in.not && in.hasNull: // a miss is NULL, a hit false
				tests = append(tests, never)
			default: // a miss is false or NULL: fails either way
				tests = append(tests, func(s []byte) bool {
					_, hit := in.strs[string(s)]
					return hit != in.not
				})
			}
		case conjLike:
			m, not := c.like, c.not
			if m.kind == likeContains {
				lit := m.lit
				tests = append(tests, func(s []byte) bool { return bytes.Contains(s, lit) != not })
			} else {
				tests = append(tests, func(s []byte) bool { return m.match(s) != not })
			}
		case conjIsNull:
			tests = append(tests, never)
		case conjNotNull:
		default:
			return nil, false
		}
	}
	switch len(tests) {
	case 0:
		return func([]byte) bool { return true }, true
	case 1:
		return tests[0], true
	}
	return func(s []byte) bool {
		for _, f := range tests {
			if !f(s) {
				return false
			}
		}
		return true
	}, true
}

// StringContains reports whether terms is one conjunct, col [NOT] LIKE
// '%lit%' (case-sensitive, lit holding no wildcard), and returns lit
// and whether it is NOT LIKE: a reader may search a page's strings for
// lit as one buffer rather than string by string.
func StringContains(terms []Expr) (lit []byte, not, ok bool) {
	if len(terms) != 1 {
		return nil, false, false
	}
	c := compileConjunct(terms[0])
	if r, isCol := c.x.(*ColumnRef); c.kind != conjLike || !isCol || r.T != vec.String || c.like.kind != likeContains {
		return nil, false, false
	}
	return c.like.lit, c.not, true
}
