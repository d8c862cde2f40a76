package expr

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// Binder resolves AST expressions against an input schema and builds typed,
// constant-folded Exprs.
type Binder struct {
	// Columns is the input schema; an Ident resolves to the column with the
	// same name, compared case-insensitively (an exact match wins).
	Columns []vec.Column
	// Replace, when set, is consulted for every AST node before binding it.
	// If it returns ok, the node becomes a reference to input column idx
	// (the planner uses this to map aggregate calls and GROUP BY
	// expressions onto the columns of the aggregation output).
	Replace func(e sql.Expr) (idx int, ok bool)
	// Subst, when set, is consulted for every AST node Replace did not
	// replace. If it returns ok, the node's replacement is bound in its
	// place (the planner uses this for SELECT aliases used inside WHERE,
	// HAVING and ORDER BY expressions).
	Subst func(e sql.Expr) (sql.Expr, bool)
}

// Bind binds e. Errors are *sql.Error values positioned at the offending
// node.
func (b *Binder) Bind(e sql.Expr) (Expr, error) {
	x, err := b.bind(e, 0)
	if err != nil {
		return nil, err
	}
	return x, nil
}

// maxBindDepth guards against stack exhaustion on hand-built ASTs (the
// parser already limits nesting).
const maxBindDepth = 2000

// wrapAt positions err, keeping it as the cause for errors.Is and As.
func wrapAt(p sql.Pos, err error) error { return &sql.Error{Pos: p, Msg: err.Error(), Err: err} }

func errAt(p sql.Pos, format string, args ...any) error {
	return &sql.Error{Pos: p, Msg: fmt.Sprintf(format, args...)}
}

func (b *Binder) bind(e sql.Expr, depth int) (Expr, error) {
	if e == nil {
		return nil, fmt.Errorf("bind: nil expression")
	}
	if depth > maxBindDepth {
		return nil, errAt(e.Pos(), "expression nested too deeply")
	}
	if b.Replace != nil {
		if idx, ok := b.Replace(e); ok {
			if idx < 0 || idx >= len(b.Columns) {
				return nil, errAt(e.Pos(), "internal error: %s replaced by column %d of %d", sql.Format(e), idx, len(b.Columns))
			}
			return &ColumnRef{Index: idx, T: b.Columns[idx].Type, Name: b.Columns[idx].Name}, nil
		}
	}
	if b.Subst != nil {
		if r, ok := b.Subst(e); ok {
			return b.bind(r, depth+1)
		}
	}
	x, err := b.bindNode(e, depth+1)
	if err != nil {
		return nil, err
	}
	f, err := foldNode(x)
	if err != nil {
		var se *sql.Error
		if !errors.As(err, &se) {
			err = wrapAt(e.Pos(), err)
		}
		return nil, err
	}
	return f, nil
}

// foldNode turns a node whose operands are all constants into a constant.
func foldNode(x Expr) (Expr, error) {
	n, ok := x.(node)
	if !ok {
		return x, nil
	}
	switch x.(type) {
	case *Const, *ColumnRef:
		return x, nil
	}
	for _, k := range n.children() {
		if _, ok := k.(*Const); !ok {
			return x, nil
		}
	}
	if !foldable(x) {
		return x, nil
	}
	c, err := evalConst(x)
	if err != nil {
		return nil, err
	}
	if decimalFold(x) {
		c.decimal = true
	}
	return c, nil
}

// decimalFold reports whether x, with constant operands, is a DECIMAL in
// DuckDB: the negation of a decimal literal (-2.5), or + - * % of two
// decimal literals (1.5 * 2.5). (1.5 * 2 is DECIMAL too, but the binder has
// made the 2 a DOUBLE by then; it stays DOUBLE here.)
func decimalFold(x Expr) bool {
	switch x := x.(type) {
	case *neg:
		return isDecimalLit(x.x)
	case *arith:
		switch x.op {
		case sql.OpAdd, sql.OpSub, sql.OpMul, sql.OpMod:
			return isDecimalLit(x.l) && isDecimalLit(x.r)
		}
	}
	return false
}

func (b *Binder) bindNode(e sql.Expr, depth int) (Expr, error) {
	switch e := e.(type) {
	case *sql.Ident:
		return b.bindIdent(e)
	case *sql.Literal:
		return bindLiteral(e)
	case *sql.Unary:
		return b.bindUnary(e, depth)
	case *sql.Binary:
		return b.bindBinary(e, depth)
	case *sql.Call:
		return b.bindCall(e, depth)
	case *sql.Case:
		return b.bindCase(e, depth)
	case *sql.In:
		return b.bindIn(e, depth)
	case *sql.Like:
		return b.bindLike(e, depth)
	case *sql.IsNull:
		x, err := b.bind(e.X, depth)
		if err != nil {
			return nil, err
		}
		return &isNull{x: x, not: e.Not}, nil
	case *sql.Between:
		// x BETWEEN lo AND hi is x >= lo AND x <= hi (x bound twice so that
		// the tree shares no nodes).
		ge := &sql.Binary{Op: sql.OpGe, X: e.X, Y: e.Lo, At: e.At, OpPos: e.At}
		le := &sql.Binary{Op: sql.OpLe, X: e.X, Y: e.Hi, At: e.At, OpPos: e.At}
		var and sql.Expr = &sql.Binary{Op: sql.OpAnd, X: ge, Y: le, At: e.At, OpPos: e.At}
		if e.Not {
			and = &sql.Unary{Op: sql.OpNot, X: and, At: e.At}
		}
		return b.bind(and, depth)
	case *sql.Extract:
		x, err := b.bind(e.X, depth)
		if err != nil {
			return nil, err
		}
		return bindDatePart("extract", e.Field, x, e.At, e.X.Pos())
	case *sql.Cast:
		x, err := b.bind(e.X, depth)
		if err != nil {
			return nil, err
		}
		t, ok := TypeByName(e.Type)
		if !ok {
			return nil, errAt(e.At, "type %s is not supported", e.Type)
		}
		if !canCast(x.Type(), t) {
			return nil, errAt(e.At, "cannot cast %s to %s", x.Type(), t)
		}
		return &cast{x: x, to: t, pos: e.At}, nil
	}
	return nil, errAt(e.Pos(), "unsupported expression %s", sql.Format(e))
}

// UnknownColumnError is the cause of the *sql.Error a Binder returns for a
// name that is not a column of its input.
type UnknownColumnError struct {
	Name string
}

func (e *UnknownColumnError) Error() string { return fmt.Sprintf("column %q not found", e.Name) }

func (b *Binder) bindIdent(e *sql.Ident) (Expr, error) {
	idx := -1
	for i, c := range b.Columns {
		if c.Name == e.Name {
			idx = i
			break
		}
	}
	if idx < 0 {
		for i, c := range b.Columns {
			if strings.EqualFold(c.Name, e.Name) {
				if idx >= 0 {
					return nil, errAt(e.At, "column reference %q is ambiguous", e.Name)
				}
				idx = i
			}
		}
	}
	if idx < 0 && strings.EqualFold(e.Name, "rowid") {
		return nil, &sql.Error{Pos: e.At, Msg: "the rowid pseudo-column is not supported", Err: &UnknownColumnError{Name: e.Name}}
	}
	if idx < 0 {
		msg := fmt.Sprintf("column %q not found", e.Name)
		if s := nearest(e.Name, b.Columns); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return nil, &sql.Error{Pos: e.At, Msg: msg, Err: &UnknownColumnError{Name: e.Name}}
	}
	c := b.Columns[idx]
	if c.Err != nil {
		return nil, &sql.Error{Pos: e.At, Msg: c.Err.Error(), Err: c.Err}
	}
	return &ColumnRef{Index: idx, T: c.Type, Name: c.Name}, nil
}

// nearest returns the column name closest to name by case-insensitive edit
// distance, or "" when none is close enough to be a likely typo.
func nearest(name string, cols []vec.Column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return Nearest(name, names)
}

// Nearest returns the candidate closest to name by case-insensitive edit
// distance, or "" when none is close enough to be a likely typo. Error
// messages use it for "did you mean" hints.
func Nearest(name string, candidates []string) string {
	best, bestD := "", math.MaxInt
	ln := strings.ToLower(name)
	for _, c := range candidates {
		d := editDistance(ln, strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(2, len([]rune(name))/3)
	if bestD > limit {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func bindLiteral(e *sql.Literal) (Expr, error) {
	switch e.Kind {
	case sql.LitInt:
		return NewConst(vec.Int64, e.Int), nil
	case sql.LitFloat:
		if c, ok := exactLiteral(e.Text); ok {
			return c, nil
		}
		c := NewConst(vec.Float64, e.Float)
		c.decimal = !strings.ContainsAny(e.Text, "eE")
		return c, nil
	case sql.LitString:
		c := NewConst(vec.String, e.Str)
		c.Untyped = true
		return c, nil
	case sql.LitNull:
		return NewConst(vec.Null, nil), nil
	case sql.LitBool:
		return NewConst(vec.Bool, e.Int != 0), nil
	case sql.LitDate:
		d, err := ParseDate(e.Str)
		if err != nil {
			return nil, &sql.Error{Pos: e.At, Msg: err.Error(), Err: err}
		}
		return NewConst(vec.Date, d), nil
	case sql.LitTimestamp:
		ts, err := ParseTimestamp(e.Str)
		if err != nil {
			return nil, &sql.Error{Pos: e.At, Msg: err.Error(), Err: err}
		}
		return NewConst(vec.Timestamp, ts), nil
	case sql.LitInterval:
		var unit int64
		switch e.Unit {
		case "microsecond":
			unit = 1
		case "millisecond":
			unit = 1000
		case "second":
			unit = microsPerSecond
		case "minute":
			unit = microsPerMinute
		case "hour":
			unit = microsPerHour
		case "day":
			unit = microsPerDay
		case "week":
			unit = 7 * microsPerDay
		default:
			return nil, errAt(e.At, "INTERVAL %s is not supported: intervals are a fixed number of microseconds", strings.ToUpper(e.Unit))
		}
		if e.Int > math.MaxInt64/unit || e.Int < math.MinInt64/unit {
			return nil, errAt(e.At, "interval out of range")
		}
		return NewConst(vec.Interval, e.Int*unit), nil
	}
	return nil, errAt(e.At, "unsupported literal")
}

// coerce converts x to type t: constants at bind time (an error is reported
// at pos), other expressions with a cast node.
func coerce(x Expr, t vec.Type, pos sql.Pos) (Expr, error) {
	if x.Type() == t {
		if c, ok := x.(*Const); ok && c.Untyped {
			return &Const{V: c.V}, nil
		}
		return x, nil
	}
	if !canCast(x.Type(), t) {
		return nil, errAt(pos, "cannot convert %s to %s", x.Type(), t)
	}
	if c, ok := x.(*Const); ok {
		v, err := CastVector(c.V, t)
		if err != nil {
			return nil, wrapAt(pos, err)
		}
		return &Const{V: v}, nil
	}
	return &cast{x: x, to: t, pos: pos}, nil
}

// toBool converts a logical operand to BOOLEAN: NULL and string literals
// convert, and numbers are true when non-zero (DuckDB's implicit cast).
func toBool(x Expr, pos sql.Pos) (Expr, bool, error) {
	t := x.Type()
	if t == vec.Bool && !isUntyped(x) {
		return x, true, nil
	}
	if t == vec.Null || isUntyped(x) || isNumber(t) {
		c, err := coerce(x, vec.Bool, pos)
		return c, err == nil, err
	}
	return x, false, nil
}

// BindPredicate binds e as a condition (WHERE, HAVING): the result is
// BOOLEAN, numbers converting as they do for AND and NOT.
func (b *Binder) BindPredicate(e sql.Expr, clause string) (Expr, error) {
	x, err := b.Bind(e)
	if err != nil {
		return nil, err
	}
	bx, ok, err := toBool(x, e.Pos())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errAt(e.Pos(), "%s must be BOOLEAN, got %s", clause, x.Type())
	}
	return bx, nil
}

func isUntyped(x Expr) bool {
	c, ok := x.(*Const)
	return ok && c.Untyped
}

// isNumber reports whether t takes part in arithmetic (not BOOLEAN).
func isNumber(t vec.Type) bool {
	switch t {
	case vec.Int16, vec.Int32, vec.Int64, vec.UInt64, vec.Float64, vec.Float32:
		return true
	}
	return false
}

// isDecimalLit reports whether x is a numeric literal without an exponent,
// a DECIMAL in DuckDB, which takes the type of a FLOAT it meets.
func isDecimalLit(x Expr) bool {
	c, ok := x.(*Const)
	return ok && c.decimal
}

// floatLits converts the decimal literals among xs to FLOAT when one of xs
// is FLOAT and none is another DOUBLE: DuckDB combines FLOAT with DECIMAL
// (and with integers) as FLOAT, with DOUBLE as DOUBLE.
func floatLits(xs []Expr, poss []sql.Pos) error {
	hasFloat := false
	for _, x := range xs {
		switch {
		case x.Type() == vec.Float32:
			hasFloat = true
		case x.Type() == vec.Float64 && !isDecimalLit(x):
			return nil
		}
	}
	if !hasFloat {
		return nil
	}
	for i, x := range xs {
		if isDecimalLit(x) {
			c, err := coerce(x, vec.Float32, poss[i])
			if err != nil {
				return err
			}
			xs[i] = c
		}
	}
	return nil
}

// floatLits2 is floatLits for two operands.
func floatLits2(l, r Expr, lp, rp sql.Pos) (Expr, Expr, error) {
	xs := []Expr{l, r}
	err := floatLits(xs, []sql.Pos{lp, rp})
	return xs[0], xs[1], err
}

func isSigned(t vec.Type) bool { return t == vec.Int16 || t == vec.Int32 || t == vec.Int64 }

// resolveUntyped gives untyped string literals and NULL the type of the
// other operand, as DuckDB does for '2013-07-01' compared with a DATE.
func resolveUntyped(l, r Expr, lp, rp sql.Pos) (Expr, Expr, error) {
	var err error
	lt, rt := l.Type(), r.Type()
	switch {
	case isUntyped(l) && !isUntyped(r) && rt != vec.String && rt != vec.Null:
		l, err = coerce(l, rt, lp)
	case isUntyped(r) && !isUntyped(l) && lt != vec.String && lt != vec.Null:
		r, err = coerce(r, lt, rp)
	}
	if err != nil {
		return nil, nil, err
	}
	lt, rt = l.Type(), r.Type()
	switch {
	case lt == vec.Null && rt != vec.Null:
		l, err = coerce(l, rt, lp)
	case rt == vec.Null && lt != vec.Null:
		r, err = coerce(r, lt, rp)
	}
	return l, r, err
}

// commonType is the type two operands are compared or unified in, or
// false when they do not mix.
func commonType(a, b vec.Type) (vec.Type, bool) {
	switch {
	case a == b:
		return a, true
	case a == vec.Null:
		return b, true
	case b == vec.Null:
		return a, true
	case isNumber(a) && isNumber(b):
		if a == vec.Float64 || b == vec.Float64 {
			return vec.Float64, true
		}
		if a == vec.Float32 || b == vec.Float32 {
			return vec.Float32, true // FLOAT with an integer, UBIGINT too
		}
		if a == vec.UInt64 || b == vec.UInt64 {
			return vec.Float64, true // UBIGINT with a signed type: compare as DOUBLE
		}
		return vec.Int64, true
	case (a == vec.Date && b == vec.Timestamp) || (a == vec.Timestamp && b == vec.Date):
		return vec.Timestamp, true
	case isTemporal(a) && isTemporal(b): // one is TIMESTAMP_NS
		return vec.TimestampNS, true
	}
	return 0, false
}

func (b *Binder) bindUnary(e *sql.Unary, depth int) (Expr, error) {
	x, err := b.bind(e.X, depth)
	if err != nil {
		return nil, err
	}
	t := x.Type()
	switch e.Op {
	case sql.OpNot:
		bx, ok, err := toBool(x, e.X.Pos())
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errAt(e.At, "NOT expects BOOLEAN, got %s", t)
		}
		return &not{x: bx}, nil
	case sql.OpNeg, sql.OpPlus:
		if isUntyped(x) || t == vec.Null {
			if x, err = coerce(x, vec.Float64, e.X.Pos()); err != nil {
				return nil, err
			}
			t = vec.Float64
		}
		if !isNumber(t) && t != vec.Interval {
			return nil, errAt(e.At, "cannot apply unary %s to %s", e.Op, t)
		}
		if e.Op == sql.OpPlus {
			return x, nil
		}
		if v, ok := exactValue(x); ok && isExactLit(x) {
			// -0.5, -9223372036854775808: exactly.
			return exactConst(new(big.Rat).Neg(v), isDecimal(x)), nil
		}
		if t == vec.UInt64 {
			if x, err = coerce(x, vec.Float64, e.X.Pos()); err != nil {
				return nil, err
			}
		} else if t == vec.Int16 || t == vec.Int32 {
			x = &cast{x: x, to: vec.Int64, pos: e.At}
		}
		return &neg{x: x, pos: e.At}, nil
	}
	return nil, errAt(e.At, "unsupported unary operator %s", e.Op)
}

func (b *Binder) bindBinary(e *sql.Binary, depth int) (Expr, error) {
	l, err := b.bind(e.X, depth)
	if err != nil {
		return nil, err
	}
	r, err := b.bind(e.Y, depth)
	if err != nil {
		return nil, err
	}
	switch {
	case e.Op == sql.OpAnd || e.Op == sql.OpOr:
		lb, lok, err := toBool(l, e.X.Pos())
		if err != nil {
			return nil, err
		}
		rb, rok, err := toBool(r, e.Y.Pos())
		if err != nil {
			return nil, err
		}
		if !lok || !rok {
			return nil, errAt(e.OpPos, "%s expects BOOLEAN operands, got %s and %s", e.Op, l.Type(), r.Type())
		}
		l, r = lb, rb
		return &logic{or: e.Op == sql.OpOr, l: l, r: r}, nil
	case e.Op.IsComparison():
		return bindCompare(e.Op, l, r, e.X.Pos(), e.Y.Pos(), e.OpPos)
	case e.Op == sql.OpConcat:
		if l, err = coerce(l, vec.String, e.X.Pos()); err != nil {
			return nil, err
		}
		if r, err = coerce(r, vec.String, e.Y.Pos()); err != nil {
			return nil, err
		}
		return &fn{name: "concat", args: []Expr{l, r}, t: vec.String, strict: true, do: concatStrings, pos: e.OpPos}, nil
	}
	return bindArith(e.Op, l, r, e.X.Pos(), e.Y.Pos(), e.OpPos)
}

func bindCompare(op sql.Op, l, r Expr, lp, rp, opPos sql.Pos) (Expr, error) {
	l, r, err := resolveUntyped(l, r, lp, rp)
	if err != nil {
		return nil, err
	}
	if c, ok := foldExactCompare(op, l, r); ok {
		return c, nil
	}
	if needsExact(l, r) {
		if x, ok := exactIntCompare(op, l, r); ok {
			return x, nil
		}
	}
	if needsExact(r, l) {
		if x, ok := exactIntCompare(flip(op), r, l); ok {
			return x, nil
		}
	}
	if l, r, err = floatLits2(l, r, lp, rp); err != nil {
		return nil, err
	}
	lt, rt := l.Type(), r.Type()
	if lt == vec.Null && rt == vec.Null {
		return NewConst(vec.Bool, nil), nil
	}
	lane := laneInt
	switch {
	case lt == vec.String && rt == vec.String:
		lane = laneStr
	case lt == vec.UInt64 && rt == vec.UInt64:
		lane = laneUint
	case lt == vec.UInt64 && isSigned(rt) && isNonNegConst(r):
		lane = laneUint
	case rt == vec.UInt64 && isSigned(lt) && isNonNegConst(l):
		lane = laneUint
	case lt == rt && !lt.IsFloat():
		lane = laneInt
	default:
		ct, ok := commonType(lt, rt)
		if !ok {
			return nil, errAt(opPos, "cannot compare %s and %s with %s", lt, rt, op)
		}
		if l, err = coerce(l, ct, lp); err != nil {
			return nil, err
		}
		if r, err = coerce(r, ct, rp); err != nil {
			return nil, err
		}
		if ct.IsFloat() {
			lane = laneFloat
		}
	}
	return &compare{op: op, l: l, r: r, lane: lane}, nil
}

func isNonNegConst(x Expr) bool {
	c, ok := x.(*Const)
	return ok && !c.IsNull() && c.Int() >= 0
}

func bindArith(op sql.Op, l, r Expr, lp, rp, opPos sql.Pos) (Expr, error) {
	l, r, err := resolveUntyped(l, r, lp, rp)
	if err != nil {
		return nil, err
	}
	if c, ok := foldExactArith(op, l, r); ok {
		return c, nil
	}
	if l, r, err = floatLits2(l, r, lp, rp); err != nil {
		return nil, err
	}
	lt, rt := l.Type(), r.Type()
	if lt == vec.Null && rt == vec.Null {
		return NewConst(vec.Int64, nil), nil
	}
	bad := func() error {
		return errAt(opPos, "cannot apply %s to %s and %s", op, lt, rt)
	}
	// Date and time arithmetic.
	if !isNumber(lt) || !isNumber(rt) {
		isInt := func(t vec.Type) bool { return isSigned(t) }
		switch {
		case op == sql.OpAdd && lt == vec.Date && isInt(rt):
			return &timeArith{l: l, r: r, t: vec.Date}, nil
		case op == sql.OpAdd && isInt(lt) && rt == vec.Date:
			return &timeArith{l: r, r: l, t: vec.Date}, nil
		case op == sql.OpSub && lt == vec.Date && isInt(rt):
			return &timeArith{sub: true, l: l, r: r, t: vec.Date}, nil
		case op == sql.OpSub && lt == vec.Date && rt == vec.Date:
			return &timeArith{sub: true, l: l, r: r, t: vec.Int64}, nil
		case op == sql.OpSub && lt == vec.Timestamp && rt == vec.Timestamp:
			return &timeArith{sub: true, l: l, r: r, t: vec.Interval}, nil
		case (op == sql.OpAdd || op == sql.OpSub) && (lt == vec.Timestamp || lt == vec.Date) && rt == vec.Interval:
			if l, err = coerce(l, vec.Timestamp, lp); err != nil {
				return nil, err
			}
			return &timeArith{sub: op == sql.OpSub, l: l, r: r, t: vec.Timestamp}, nil
		case (op == sql.OpAdd || op == sql.OpSub) && lt == vec.TimestampNS && rt == vec.Interval:
			// As DuckDB: the TIMESTAMP_NS becomes a TIMESTAMP first.
			return &timeArith{sub: op == sql.OpSub, l: &cast{x: l, to: vec.Timestamp, pos: lp}, r: r, t: vec.Timestamp}, nil
		case op == sql.OpAdd && lt == vec.Interval && rt == vec.TimestampNS:
			return &timeArith{l: &cast{x: r, to: vec.Timestamp, pos: rp}, r: l, t: vec.Timestamp}, nil
		case op == sql.OpAdd && lt == vec.Interval && (rt == vec.Timestamp || rt == vec.Date):
			if r, err = coerce(r, vec.Timestamp, rp); err != nil {
				return nil, err
			}
			return &timeArith{l: r, r: l, t: vec.Timestamp}, nil
		case (op == sql.OpAdd || op == sql.OpSub) && lt == vec.Interval && rt == vec.Interval:
			return &timeArith{sub: op == sql.OpSub, l: l, r: r, t: vec.Interval}, nil
		}
		return nil, bad()
	}
	// UBIGINT with UBIGINT or with a non-negative constant stays UBIGINT
	// (overflow is an error, as in DuckDB); UBIGINT with anything else is
	// computed in DOUBLE.
	if op != sql.OpDiv && (lt == vec.UInt64 || rt == vec.UInt64) {
		lu := lt == vec.UInt64 || (isSigned(lt) && isNonNegConst(l))
		ru := rt == vec.UInt64 || (isSigned(rt) && isNonNegConst(r))
		if lu && ru {
			if l, err = coerce(l, vec.UInt64, lp); err != nil {
				return nil, err
			}
			if r, err = coerce(r, vec.UInt64, rp); err != nil {
				return nil, err
			}
			return &arith{op: op, l: l, r: r, t: vec.UInt64, unsigned: true, pos: opPos}, nil
		}
	}
	float := lt.IsFloat() || rt.IsFloat() || lt == vec.UInt64 || rt == vec.UInt64 || op == sql.OpDiv
	t := vec.Int64
	if float {
		// FLOAT with FLOAT or an integer is FLOAT (the integer rounded to
		// FLOAT first), with DOUBLE it is DOUBLE, as in DuckDB.
		t = vec.Float64
		if (lt == vec.Float32 || rt == vec.Float32) && lt != vec.Float64 && rt != vec.Float64 {
			t = vec.Float32
		}
		if l, err = coerce(l, t, lp); err != nil {
			return nil, err
		}
		if r, err = coerce(r, t, rp); err != nil {
			return nil, err
		}
	}
	return &arith{op: op, l: l, r: r, t: t, float: float, pos: opPos}, nil
}

func (b *Binder) bindList(args []sql.Expr, depth int) ([]Expr, error) {
	out := make([]Expr, len(args))
	for i, a := range args {
		x, err := b.bind(a, depth)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// unify coerces xs to their common type.
func unify(xs []Expr, poss []sql.Pos, what string, at sql.Pos) (vec.Type, error) {
	t := vec.Null
	// A non-negative integer literal takes the type of a UBIGINT operand
	// (coalesce(u64, 3) stays UBIGINT, as in DuckDB).
	litOK := func(x Expr) bool {
		c, ok := x.(*Const)
		return ok && c.Type() == vec.Int64 && !c.IsNull() && c.Int() >= 0
	}
	hasUint, uintLits := false, true
	for _, x := range xs {
		if x.Type() == vec.UInt64 {
			hasUint = true
		} else if !isUntyped(x) && x.Type() != vec.Null && !litOK(x) {
			uintLits = false
		}
	}
	if err := floatLits(xs, poss); err != nil {
		return 0, err
	}
	for _, x := range xs {
		if isUntyped(x) || hasUint && uintLits && litOK(x) {
			continue
		}
		ct, ok := commonType(t, x.Type())
		if !ok {
			return 0, errAt(at, "%s mixes %s and %s", what, t, x.Type())
		}
		t = ct
	}
	if t == vec.Null {
		for _, x := range xs {
			if isUntyped(x) {
				t = vec.String
			}
		}
	}
	for i, x := range xs {
		c, err := coerce(x, t, poss[i])
		if err != nil {
			return 0, err
		}
		xs[i] = c
	}
	return t, nil
}

func (b *Binder) bindCase(e *sql.Case, depth int) (Expr, error) {
	if len(e.Whens) > math.MaxUint16-1 {
		return nil, errAt(e.At, "CASE has too many arms")
	}
	c := &caseExpr{}
	var results []Expr
	var poss []sql.Pos
	for _, w := range e.Whens {
		var cond Expr
		var err error
		if e.Operand != nil {
			// CASE x WHEN v is CASE WHEN x = v (x bound per arm).
			cond, err = b.bind(&sql.Binary{Op: sql.OpEq, X: e.Operand, Y: w.Cond, At: w.Cond.Pos(), OpPos: w.Cond.Pos()}, depth)
		} else {
			cond, err = b.bind(w.Cond, depth)
		}
		if err != nil {
			return nil, err
		}
		bc, ok, err := toBool(cond, w.Cond.Pos())
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errAt(w.Cond.Pos(), "CASE WHEN condition must be BOOLEAN, got %s", cond.Type())
		}
		cond = bc
		r, err := b.bind(w.Result, depth)
		if err != nil {
			return nil, err
		}
		c.conds = append(c.conds, cond)
		results = append(results, r)
		poss = append(poss, w.Result.Pos())
	}
	if e.Else != nil {
		x, err := b.bind(e.Else, depth)
		if err != nil {
			return nil, err
		}
		results = append(results, x)
		poss = append(poss, e.Else.Pos())
	} else {
		results = append(results, NewConst(vec.Null, nil))
		poss = append(poss, e.At)
	}
	t, err := unify(results, poss, "CASE", e.At)
	if err != nil {
		return nil, err
	}
	c.t = t
	c.results = results[:len(results)-1]
	c.els = results[len(results)-1]
	return simplifyCase(c), nil
}

// simplifyCase drops arms whose condition is a constant: a false or NULL
// arm never fires, and a true arm ends the CASE.
func simplifyCase(c *caseExpr) Expr {
	var conds, results []Expr
	for i, cond := range c.conds {
		k, ok := cond.(*Const)
		if !ok {
			conds = append(conds, cond)
			results = append(results, c.results[i])
			continue
		}
		if !k.IsNull() && k.Int() != 0 {
			if len(conds) == 0 {
				return c.results[i]
			}
			return &caseExpr{conds: conds, results: results, els: c.results[i], t: c.t}
		}
	}
	if len(conds) == 0 {
		return c.els
	}
	return &caseExpr{conds: conds, results: results, els: c.els, t: c.t}
}

func (b *Binder) bindIn(e *sql.In, depth int) (Expr, error) {
	x, err := b.bind(e.X, depth)
	if err != nil {
		return nil, err
	}
	list, err := b.bindList(e.List, depth)
	if err != nil {
		return nil, err
	}
	allConst := true
	for _, it := range list {
		if _, ok := it.(*Const); !ok || needsExact(x, it) {
			// An integer x IN (0.5, -1, 9223372036854775808) compares
			// each value exactly, as x = v.
			allConst = false
		}
	}
	if !allConst {
		// x IN (a, b) is x = a OR x = b; x is bound once per comparison.
		var or sql.Expr
		for _, it := range e.List {
			var eq sql.Expr = &sql.Binary{Op: sql.OpEq, X: e.X, Y: it, At: e.At, OpPos: it.Pos()}
			if or == nil {
				or = eq
			} else {
				or = &sql.Binary{Op: sql.OpOr, X: or, Y: eq, At: e.At, OpPos: it.Pos()}
			}
		}
		if e.Not {
			or = &sql.Unary{Op: sql.OpNot, X: or, At: e.At}
		}
		return b.bind(or, depth)
	}
	// Give untyped literals and NULLs the type of x, then check each value.
	xt := x.Type()
	if isUntyped(x) || xt == vec.Null {
		all := append([]Expr{x}, list...)
		poss := []sql.Pos{e.X.Pos()}
		for _, it := range e.List {
			poss = append(poss, it.Pos())
		}
		if xt, err = unify(all, poss, "IN", e.At); err != nil {
			return nil, err
		}
		x = all[0]
		list = all[1:]
	}
	s := &inSet{x: x, not: e.Not}
	lane := laneInt
	switch {
	case xt == vec.String:
		lane = laneStr
	case xt.IsFloat():
		lane = laneFloat
	case xt == vec.UInt64:
		lane = laneUint
	}
	for i, it := range list {
		k := it.(*Const)
		if k.IsNull() {
			s.hasNull = true
			s.list = append(s.list, k)
			continue
		}
		kt := k.Type()
		if k.Untyped {
			kt = vec.String
		}
		want := xt
		if xt == vec.UInt64 && isSigned(kt) && k.Int() >= 0 {
			kt = vec.UInt64 // UBIGINT IN (5): compared as UBIGINT
		}
		if xt == vec.Float32 && k.decimal {
			kt = vec.Float32 // FLOAT IN (1.5) compares as FLOAT
		}
		if ct, ok := commonType(xt, kt); ok && ct.IsFloat() && xt != ct {
			// An integer column IN (1.5): compare as DOUBLE; a FLOAT
			// column IN (1e300) likewise.
			return b.bindIn(&sql.In{X: &sql.Cast{X: e.X, Type: ct.String(), At: e.X.Pos()}, List: e.List, Not: e.Not, At: e.At}, depth)
		}
		if !k.Untyped {
			if _, ok := commonType(xt, kt); !ok {
				return nil, errAt(e.List[i].Pos(), "cannot compare %s with %s in IN list", xt, kt)
			}
		}
		if lane == laneInt && isSignedInt(xt) && isSignedInt(kt) {
			// Values are compared as int64, so a constant outside x's
			// own range (SMALLINT IN (1920, 100000)) just never matches.
			s.list = append(s.list, k)
			s.ints = append(s.ints, k.Int())
			continue
		}
		c, err := coerce(k, want, e.List[i].Pos())
		if err != nil {
			return nil, err
		}
		k = c.(*Const)
		s.list = append(s.list, k)
		switch lane {
		case laneStr:
			if s.strs == nil {
				s.strs = make(map[string]struct{})
			}
			s.strs[k.Str()] = struct{}{}
		case laneFloat:
			s.floats = append(s.floats, k.Float())
		default:
			s.ints = append(s.ints, k.Int())
		}
	}
	s.lane = lane
	if len(s.ints) > 8 {
		s.intSet = make(map[int64]struct{}, len(s.ints))
		for _, v := range s.ints {
			s.intSet[v] = struct{}{}
		}
	}
	if len(s.ints)+len(s.floats)+len(s.strs) == 0 {
		// Only NULLs in the list: the result is NULL.
		if x.Type() == vec.Null {
			return NewConst(vec.Bool, nil), nil
		}
		return &caseExpr{els: NewConst(vec.Bool, nil), t: vec.Bool}, nil
	}
	return s, nil
}

func (b *Binder) bindLike(e *sql.Like, depth int) (Expr, error) {
	x, err := b.bind(e.X, depth)
	if err != nil {
		return nil, err
	}
	p, err := b.bind(e.Pattern, depth)
	if err != nil {
		return nil, err
	}
	if x, err = coerce(x, vec.String, e.X.Pos()); err != nil {
		return nil, err
	}
	if p.Type() != vec.String && p.Type() != vec.Null {
		return nil, errAt(e.Pattern.Pos(), "LIKE pattern must be VARCHAR, got %s", p.Type())
	}
	if p, err = coerce(p, vec.String, e.Pattern.Pos()); err != nil {
		return nil, err
	}
	l := &like{x: x, pat: p, not: e.Not, ci: e.ILike}
	if c, ok := p.(*Const); ok {
		if c.IsNull() {
			return NewConst(vec.Bool, nil), nil
		}
		pat := c.Str()
		if e.ILike {
			pat = strings.ToLower(pat)
		}
		l.m = newLikeMatcher(pat)
	}
	return l, nil
}

// --- function calls ---

func arity(c *sql.Call, min, max int) error {
	n := len(c.Args)
	if n >= min && n <= max {
		return nil
	}
	want := fmt.Sprint(min)
	switch {
	case max == math.MaxInt:
		want = fmt.Sprintf("at least %d", min)
	case max != min:
		want = fmt.Sprintf("%d to %d", min, max)
	}
	s := "s"
	if want == "1" {
		s = ""
	}
	return errAt(c.At, "function %s takes %s argument%s, got %d", c.Name, want, s, n)
}

// constString returns the value of a constant VARCHAR argument.
func constString(x Expr, c *sql.Call, i int) (string, error) {
	k, ok := x.(*Const)
	if !ok || k.Type() != vec.String || k.IsNull() {
		return "", errAt(c.Args[i].Pos(), "argument %d of %s must be a constant string", i+1, c.Name)
	}
	return k.Str(), nil
}

func numericArg(c *sql.Call, args []Expr, i int) error {
	t := args[i].Type()
	if isUntyped(args[i]) || t == vec.Null {
		x, err := coerce(args[i], vec.Float64, c.Args[i].Pos())
		if err != nil {
			return err
		}
		args[i] = x
		return nil
	}
	if !isNumber(t) {
		return errAt(c.Args[i].Pos(), "function %s expects a number, got %s", c.Name, t)
	}
	if t == vec.Int16 || t == vec.Int32 {
		args[i] = &cast{x: args[i], to: vec.Int64, pos: c.Args[i].Pos()}
	}
	return nil
}

// bindDatePart builds extract(part FROM x) for a DATE or TIMESTAMP x.
func bindDatePart(name, part string, x Expr, at, xpos sql.Pos) (Expr, error) {
	p, ok := dateParts[strings.ToLower(part)]
	if !ok {
		return nil, errAt(at, "unknown date part %q", part)
	}
	if isUntyped(x) || x.Type() == vec.Null {
		var err error
		if x, err = coerce(x, vec.Timestamp, xpos); err != nil {
			return nil, err
		}
	}
	if x.Type() == vec.TimestampNS {
		x = &cast{x: x, to: vec.Timestamp, pos: xpos}
	}
	if t := x.Type(); t != vec.Date && t != vec.Timestamp {
		return nil, errAt(xpos, "%s expects a DATE or TIMESTAMP, got %s", name, t)
	}
	t := vec.Int64
	if p == "epoch" {
		t = vec.Float64
	}
	e := &fn{name: "extract", args: []Expr{x}, t: t, strict: true, extra: []string{sql.QuoteString(p)}, pos: at,
		do: func(vs []*vec.Vector, n int) (*vec.Vector, error) { return extractPart(p, vs[0], n) }}
	return e, nil
}
