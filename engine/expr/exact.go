package expr

import (
	"math"
	"math/big"
	"strings"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// Exact constants.
//
// The engine has no DECIMAL or HUGEINT type: DuckDB's DECIMAL columns are
// read as DOUBLE. Literals are another matter, since DuckDB types 0.1 as
// DECIMAL(1,1) and 12345678901234567890123 as HUGEINT, and constant
// expressions over them are exact: 0.1 + 0.2 = 0.3 is true, 10.0 % 0.0 is
// NULL, 12345678901111111 % 2.0 is 1. The binder keeps the exact value of
// such a literal beside its DOUBLE (Const.exact) and folds + - * % and
// comparisons of exact constants in rational arithmetic; the result is
// exact again, its DOUBLE the nearest to the rational. A comparison of an
// integer column with an exact constant is rewritten into one in the
// column's own lane (BIGINT or UBIGINT), so that it is exact for every
// literal: u = 9223372036854775809 does not match 9223372036854775808, and
// u > -1 holds for every UBIGINT. Only when an exact constant meets a
// column in arithmetic does it become the DOUBLE it is typed as.

var (
	minInt64  = big.NewRat(math.MinInt64, 1)
	maxInt64  = big.NewRat(math.MaxInt64, 1)
	maxUint64 = new(big.Rat).SetInt(new(big.Int).SetUint64(math.MaxUint64))
)

// exactLiteral returns the constant of a numeric literal written without
// an exponent that does not fit in a BIGINT (text is its source text):
// an integer up to 2^64-1 is a UBIGINT, anything else a DOUBLE that keeps
// its exact value. ok is false for a literal with an exponent (a DOUBLE in
// DuckDB too).
func exactLiteral(text string) (*Const, bool) {
	if strings.ContainsAny(text, "eE") {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(strings.TrimSuffix(text, "."))
	if !ok {
		return nil, false
	}
	return exactConst(r, strings.Contains(text, ".")), true
}

// exactConst returns the constant with value r: a BIGINT or UBIGINT when r
// is an integer in their ranges and decimal is false, else a DOUBLE
// keeping r (marked a DECIMAL literal when decimal is set).
func exactConst(r *big.Rat, decimal bool) *Const {
	if r.IsInt() && !decimal {
		if r.Cmp(minInt64) >= 0 && r.Cmp(maxInt64) <= 0 {
			return NewConst(vec.Int64, r.Num().Int64())
		}
		if r.Sign() > 0 && r.Cmp(maxUint64) <= 0 {
			return NewConst(vec.UInt64, r.Num().Uint64())
		}
	}
	f, _ := r.Float64()
	c := NewConst(vec.Float64, f)
	c.exact = r
	c.decimal = decimal // an integer beyond UBIGINT is a HUGEINT in DuckDB
	return c
}

// exactValue returns the exact value of a non-NULL numeric constant: an
// integer, or a literal (or folded constant) that kept its exact value.
// A DOUBLE without one (1e3, a cast) has none.
func exactValue(x Expr) (*big.Rat, bool) {
	c, ok := x.(*Const)
	if !ok || c.IsNull() || c.Untyped {
		return nil, false
	}
	switch {
	case c.exact != nil:
		return c.exact, true
	case c.decimal && c.Type() == vec.Float64:
		// A decimal literal a DOUBLE holds exactly (1.5).
		f := c.Float()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, false
		}
		return new(big.Rat).SetFloat64(f), true
	}
	switch c.Type() {
	case vec.Int16, vec.Int32, vec.Int64:
		return big.NewRat(c.Int(), 1), true
	case vec.UInt64:
		return new(big.Rat).SetInt(new(big.Int).SetUint64(uint64(c.Int()))), true
	}
	return nil, false
}

// isExactLit reports whether x is a constant that needs exact folding: a
// decimal literal or one beyond BIGINT.
func isExactLit(x Expr) bool {
	c, ok := x.(*Const)
	return ok && !c.IsNull() && (c.exact != nil || c.decimal || c.Type() == vec.UInt64)
}

// exactOperands returns the exact values of l and r when both are exact
// constants and one of them is a decimal literal or a UBIGINT: the
// operands the exact folds take over from the DOUBLE ones.
func exactOperands(l, r Expr) (a, b *big.Rat, ok bool) {
	if !isExactLit(l) && !isExactLit(r) {
		return nil, nil, false
	}
	a, ok1 := exactValue(l)
	b, ok2 := exactValue(r)
	return a, b, ok1 && ok2
}

// foldExactArith folds l op r when both are exact constants and one of
// them is a decimal literal or a UBIGINT: + - * exactly, % exactly with
// NULL for a zero divisor (DuckDB's DECIMAL modulo), / in DOUBLE from the
// exact operands. ok is false when the operation is not folded here.
func foldExactArith(op sql.Op, l, r Expr) (*Const, bool) {
	a, b, ok := exactOperands(l, r)
	if !ok {
		return nil, false
	}
	decimal := isDecimal(l) || isDecimal(r)
	z := new(big.Rat)
	switch op {
	case sql.OpAdd:
		z.Add(a, b)
	case sql.OpSub:
		z.Sub(a, b)
	case sql.OpMul:
		z.Mul(a, b)
	case sql.OpMod:
		if b.Sign() == 0 {
			if decimal {
				return NewConst(vec.Float64, nil), true
			}
			return NewConst(vec.Int64, nil), true
		}
		// a - b·trunc(a/b): the sign of the dividend, as C's fmod.
		q := new(big.Rat).Quo(a, b)
		t := new(big.Int).Quo(q.Num(), q.Denom())
		z.Sub(a, new(big.Rat).Mul(b, new(big.Rat).SetInt(t)))
	case sql.OpDiv:
		if !decimal {
			return nil, false
		}
		if b.Sign() == 0 {
			af, _ := a.Float64()
			return NewConst(vec.Float64, af/0), true
		}
		f, _ := new(big.Rat).Quo(a, b).Float64()
		return NewConst(vec.Float64, f), true
	default:
		return nil, false
	}
	if !decimal && !z.IsInt() {
		return nil, false
	}
	return exactConst(z, decimal), true
}

// isDecimal reports whether x is a DECIMAL (not integer) exact constant.
func isDecimal(x Expr) bool {
	c, ok := x.(*Const)
	return ok && c.decimal && c.Type() == vec.Float64
}

// foldExactCompare folds l op r when both are exact constants and one is
// a decimal literal or a UBIGINT.
func foldExactCompare(op sql.Op, l, r Expr) (*Const, bool) {
	a, b, ok := exactOperands(l, r)
	if !ok {
		return nil, false
	}
	return NewConst(vec.Bool, cmpResult(op, a.Cmp(b))), true
}

// exactIntCompare rewrites col op k, with col a non-constant integer
// expression and k an exact constant, into a comparison in col's own lane
// (BIGINT, or UBIGINT) with a constant that lane holds: col < 2.5 becomes
// col <= 2, u > -1 becomes u >= 0 (true for every non-NULL u), a = 0.5
// becomes a < MIN (false for every non-NULL a). ok is false when col is
// not an integer or k has no exact value.
func exactIntCompare(op sql.Op, col, k Expr) (Expr, bool) {
	t := col.Type()
	if !isSigned(t) && t != vec.UInt64 {
		return nil, false
	}
	if _, isConst := col.(*Const); isConst {
		return nil, false
	}
	c, ok := exactValue(k)
	if !ok {
		return nil, false
	}
	lo, hi := minInt64, maxInt64
	if t == vec.UInt64 {
		lo, hi = new(big.Rat), maxUint64
	} else if t != vec.Int64 {
		col = &cast{x: col, to: vec.Int64}
	}
	floor := ratFloor(c)
	ceil := new(big.Int).Neg(ratFloor(new(big.Rat).Neg(c)))
	isInt := c.IsInt()
	// Every comparison becomes col <= n, col >= n, col = n, col <> n,
	// always true (col >= lo) or always false (col < lo).
	never := func() Expr { return laneCompare(sql.OpLt, col, lo) }
	always := func() Expr { return laneCompare(sql.OpGe, col, lo) }
	le := func(n *big.Int) Expr { // col <= n
		r := new(big.Rat).SetInt(n)
		switch {
		case r.Cmp(lo) < 0:
			return never()
		case r.Cmp(hi) >= 0:
			return always()
		}
		return laneCompare(sql.OpLe, col, r)
	}
	ge := func(n *big.Int) Expr { // col >= n
		r := new(big.Rat).SetInt(n)
		switch {
		case r.Cmp(hi) > 0:
			return never()
		case r.Cmp(lo) <= 0:
			return always()
		}
		return laneCompare(sql.OpGe, col, r)
	}
	inRange := c.Cmp(lo) >= 0 && c.Cmp(hi) <= 0
	one := big.NewInt(1)
	switch op {
	case sql.OpEq:
		if isInt && inRange {
			return laneCompare(sql.OpEq, col, c), true
		}
		return never(), true
	case sql.OpNe:
		if isInt && inRange {
			return laneCompare(sql.OpNe, col, c), true
		}
		return always(), true
	case sql.OpLt: // col < c: col <= ceil(c) - 1
		return le(new(big.Int).Sub(ceil, one)), true
	case sql.OpLe:
		return le(floor), true
	case sql.OpGt: // col > c: col >= floor(c) + 1
		return ge(new(big.Int).Add(floor, one)), true
	case sql.OpGe:
		return ge(ceil), true
	}
	return nil, false
}

// ratFloor returns the largest integer not above r.
func ratFloor(r *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	_ = m // DivMod is Euclidean: with a positive denominator q is the floor
	return q
}

// laneCompare compares col with n (in col's lane's range) in col's lane.
func laneCompare(op sql.Op, col Expr, n *big.Rat) Expr {
	if col.Type() == vec.UInt64 {
		return &compare{op: op, l: col, r: NewConst(vec.UInt64, n.Num().Uint64()), lane: laneUint}
	}
	return &compare{op: op, l: col, r: NewConst(vec.Int64, n.Num().Int64()), lane: laneInt}
}

// needsExact reports whether the comparison of col, an integer column, with
// k must go through exactIntCompare: k is a decimal literal, a literal
// beyond BIGINT, or a negative integer compared with a UBIGINT.
func needsExact(col, k Expr) bool {
	if _, isConst := col.(*Const); isConst {
		return false
	}
	t := col.Type()
	if !isSigned(t) && t != vec.UInt64 {
		return false
	}
	c, ok := k.(*Const)
	if !ok || c.IsNull() || c.Untyped {
		return false
	}
	if c.exact != nil || c.decimal {
		return true
	}
	switch c.Type() {
	case vec.UInt64:
		return t != vec.UInt64
	case vec.Int16, vec.Int32, vec.Int64:
		return t == vec.UInt64 && c.Int() < 0
	}
	return false
}
