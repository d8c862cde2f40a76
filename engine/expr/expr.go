// Package expr binds parsed SQL expressions to an input schema and evaluates
// them a batch at a time.
//
// A bound Expr is a tree of typed nodes. Eval runs one node over a whole
// vec.Batch with tight loops over plain slices: no per-row interface calls,
// no per-row allocations. NULLs follow SQL three-valued logic and DuckDB's
// semantics, checked against DuckDB 1.5.6: integer / gives DOUBLE and
// follows IEEE 754 (1/0 is inf); // and % by zero give NULL; BIGINT and
// UBIGINT overflow is an error; string literals convert to the type they
// meet (EventDate >= '2013-07-01'). Result vectors carry a Valid slice only
// when some value is NULL.
//
// Known differences from DuckDB: integer arithmetic always yields BIGINT
// (DuckDB keeps INTEGER + INTEGER as INTEGER); UBIGINT mixed with a signed
// column is computed in DOUBLE (DuckDB uses HUGEINT); there are no DECIMAL,
// HUGEINT or month-based INTERVAL types; regexp_replace needs a constant
// pattern.
//
// Bound expressions hold no mutable state, so one Expr may be evaluated
// concurrently by several workers.
package expr

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// Expr is a bound, typed expression evaluated a batch at a time.
type Expr interface {
	// Type is the type of the values Eval returns.
	Type() vec.Type
	// Eval evaluates the expression over b and returns a vector of b.Len
	// values. The result may share memory with b's vectors (a column
	// reference returns the column itself) and must not be modified.
	Eval(b *vec.Batch) (*vec.Vector, error)
	// String renders the expression for EXPLAIN.
	String() string
}

// node is implemented by every Expr of this package.
type node interface {
	Expr
	// children returns the operands, in order.
	children() []Expr
}

// ColumnRef is a reference to column Index of the input batch.
type ColumnRef struct {
	Index int
	T     vec.Type
	Name  string // the column's name, for String
}

// Type returns the column's type.
func (c *ColumnRef) Type() vec.Type { return c.T }

// Eval returns the referenced column of b.
func (c *ColumnRef) Eval(b *vec.Batch) (*vec.Vector, error) {
	if c.Index < 0 || c.Index >= len(b.Vecs) {
		return nil, fmt.Errorf("column %s: index %d out of range for a batch of %d columns", c.Name, c.Index, len(b.Vecs))
	}
	v := b.Vecs[c.Index]
	if v.Len != b.Len {
		return nil, fmt.Errorf("column %s: vector has %d values, batch %d", c.Name, v.Len, b.Len)
	}
	return v, nil
}

func (c *ColumnRef) String() string {
	if c.Name != "" {
		return sql.QuoteIdent(c.Name)
	}
	return fmt.Sprintf("#%d", c.Index)
}

func (c *ColumnRef) children() []Expr { return nil }

// Const is a constant. V holds exactly one value; Eval broadcasts it.
type Const struct {
	V *vec.Vector
	// Untyped marks a string literal that has not been given a type yet:
	// like DuckDB's string literals it converts implicitly to the type it
	// is compared with (EventDate >= '2013-07-01').
	Untyped bool
	// decimal marks a numeric literal written without an exponent (1.5),
	// which DuckDB types as DECIMAL: with a FLOAT operand it becomes FLOAT
	// (f32 * 1.5 is FLOAT, f32 * 1.5e0 DOUBLE).
	decimal bool
	// exact, when set, is the exact value of a numeric literal that a
	// DOUBLE cannot hold exactly (0.1, 12345678901234567890123), and of
	// constants folded from such literals: DuckDB types them DECIMAL or
	// HUGEINT, so 0.1 + 0.2 = 0.3 is true and 10.0 % 0.0 is NULL.
	exact *big.Rat
}

// NewConst returns a constant of type t holding x: nil (NULL), bool, an
// integer, float64, float32, string or []byte.
func NewConst(t vec.Type, x any) *Const {
	v := vec.NewVector(t, 1)
	switch x := x.(type) {
	case nil:
		v.AppendNull()
	case bool:
		if x {
			v.AppendInt(1)
		} else {
			v.AppendInt(0)
		}
	case int:
		v.AppendInt(int64(x))
	case int64:
		v.AppendInt(x)
	case uint64:
		v.AppendInt(int64(x))
	case float64:
		v.AppendFloat(x)
	case float32:
		v.AppendFloat(float64(x))
	case string:
		v.AppendStr([]byte(x))
	case []byte:
		v.AppendStr(x)
	default:
		v.AppendNull()
	}
	return &Const{V: v}
}

// Type returns the constant's type.
func (c *Const) Type() vec.Type { return c.V.Type }

// IsNull reports whether the constant is NULL.
func (c *Const) IsNull() bool { return c.V.IsNull(0) }

// Int returns the value of an integer-like constant.
func (c *Const) Int() int64 {
	if len(c.V.I64) == 0 {
		return 0
	}
	return c.V.I64[0]
}

// Float returns the value of a DOUBLE or FLOAT constant.
func (c *Const) Float() float64 {
	if len(c.V.F64) == 0 {
		return 0
	}
	return c.V.F64[0]
}

// Str returns the value of a VARCHAR constant.
func (c *Const) Str() string {
	if c.V.Type != vec.String || c.V.Len == 0 {
		return ""
	}
	return string(c.V.Str(0))
}

// Value returns the constant as a Go value (see vec.Vector.Value).
func (c *Const) Value() any { return c.V.Value(0) }

// Eval returns the constant repeated b.Len times.
func (c *Const) Eval(b *vec.Batch) (*vec.Vector, error) { return broadcast(c.V, b.Len), nil }

func (c *Const) String() string {
	if c.IsNull() {
		return "NULL"
	}
	switch c.V.Type {
	case vec.String:
		return sql.QuoteString(c.Str())
	case vec.Date:
		return "DATE '" + c.V.Format(0) + "'"
	case vec.Timestamp:
		return "TIMESTAMP '" + c.V.Format(0) + "'"
	case vec.TimestampNS:
		return "TIMESTAMP_NS '" + c.V.Format(0) + "'"
	case vec.Float64:
		s := vec.FormatFloat(c.Float())
		if !strings.ContainsAny(s, ".en") {
			s += ".0"
		}
		return s
	case vec.Float32:
		return "CAST(" + string(appendFloat32(nil, c.Float())) + " AS FLOAT)"
	}
	return c.V.Format(0)
}

func (c *Const) children() []Expr { return nil }

// broadcast repeats value 0 of v n times.
func broadcast(v *vec.Vector, n int) *vec.Vector {
	out := &vec.Vector{Type: v.Type, Len: n}
	if v.IsNull(0) {
		out.Valid = make([]bool, n)
		switch {
		case v.Type == vec.Null:
		case v.Type.IsFloat():
			out.F64 = make([]float64, n)
		case v.Type == vec.String:
			out.Offsets = make([]uint32, n+1)
		default:
			out.I64 = make([]int64, n)
		}
		return out
	}
	switch {
	case v.Type.IsFloat():
		out.F64 = make([]float64, n)
		x := v.F64[0]
		for i := range out.F64 {
			out.F64[i] = x
		}
	case v.Type == vec.String:
		s := v.Str(0)
		out.Bytes = make([]byte, 0, len(s)*n)
		out.Offsets = make([]uint32, n+1)
		for i := 0; i < n; i++ {
			out.Bytes = append(out.Bytes, s...)
			out.Offsets[i+1] = uint32(len(out.Bytes))
		}
	default:
		out.I64 = make([]int64, n)
		x := v.I64[0]
		for i := range out.I64 {
			out.I64[i] = x
		}
	}
	return out
}

// Columns returns the sorted, distinct indexes of the input columns e reads.
func Columns(e Expr) []int {
	var cols []int
	Walk(e, func(x Expr) bool {
		if c, ok := x.(*ColumnRef); ok {
			cols = append(cols, c.Index)
		}
		return true
	})
	slices.Sort(cols)
	return slices.Compact(cols)
}

// Walk calls fn for e and, while fn returns true, for its operands,
// depth-first.
func Walk(e Expr, fn func(Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	if n, ok := e.(node); ok {
		for _, c := range n.children() {
			Walk(c, fn)
		}
	}
}

// Remap rewrites, in place, the Index of every column reference in e to
// f(Index). Use it when the planner narrows or reorders a batch's columns.
// Bound trees never share nodes, so each reference is rewritten once.
func Remap(e Expr, f func(old int) int) {
	Walk(e, func(x Expr) bool {
		if c, ok := x.(*ColumnRef); ok {
			c.Index = f(c.Index)
		}
		return true
	})
}

// Select returns the indexes of the rows where the BOOLEAN vector pred is
// true (NULL counts as false), reusing sel's storage when it has room for
// pred.Len indexes. The loop is branch-free: it writes every index and
// advances the output position by the predicate bit, so its speed does not
// depend on how predictable the predicate is.
func Select(pred *vec.Vector, sel []int32) []int32 {
	n := pred.Len
	if pred.Type == vec.Null || n == 0 {
		return sel[:0]
	}
	if cap(sel) < n {
		sel = make([]int32, n)
	}
	sel = sel[:n]
	vals := pred.I64[:n]
	k := 0
	if pred.Valid == nil {
		for i, x := range vals {
			sel[k] = int32(i)
			k += int(x & 1)
		}
		return sel[:k]
	}
	valid := pred.Valid[:n]
	for i, x := range vals {
		sel[k] = int32(i)
		var ok int
		if valid[i] {
			ok = 1
		}
		k += int(x&1) & ok
	}
	return sel[:k]
}

// Fold replaces every subtree of e whose operands are all constants by the
// constant it evaluates to. Binding already folds; call Fold again after
// substituting constants into a bound tree.
func Fold(e Expr) (Expr, error) {
	n, ok := e.(node)
	if !ok {
		return e, nil
	}
	if _, isConst := e.(*Const); isConst {
		return e, nil
	}
	if _, isCol := e.(*ColumnRef); isCol {
		return e, nil
	}
	kids := n.children()
	allConst := true
	for i, k := range kids {
		f, err := Fold(k)
		if err != nil {
			return nil, err
		}
		if f != k {
			if s, ok := n.(interface{ setChild(int, Expr) }); ok {
				s.setChild(i, f)
			}
		}
		if _, ok := f.(*Const); !ok {
			allConst = false
		}
	}
	if !allConst || !foldable(e) {
		return e, nil
	}
	return evalConst(e)
}

// evalConst evaluates an expression without column references to a Const.
func evalConst(e Expr) (*Const, error) {
	v, err := e.Eval(&vec.Batch{Len: 1})
	if err != nil {
		return nil, err
	}
	if v.Len != 1 {
		return nil, fmt.Errorf("constant %s evaluated to %d values", e, v.Len)
	}
	return &Const{V: compact1(v)}, nil
}

// compact1 copies a one-value vector so that it owns minimal storage.
func compact1(v *vec.Vector) *vec.Vector {
	out := vec.NewVector(v.Type, 1)
	out.AppendFrom(v, 0)
	return out
}

// mergeValid returns the validity of a row-wise operation on a and b: nil
// when both are nil, otherwise the AND of the two.
func mergeValid(a, b []bool, n int) []bool {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		return slices.Clone(b[:n])
	case b == nil:
		return slices.Clone(a[:n])
	}
	out := make([]bool, n)
	a, b = a[:n], b[:n]
	for i := range out {
		out[i] = a[i] && b[i]
	}
	return out
}

// setNull marks row i of out NULL, materialising Valid.
func setNull(out *vec.Vector, i int) {
	if out.Valid == nil {
		out.Valid = make([]bool, out.Len)
		for j := range out.Valid {
			out.Valid[j] = true
		}
	}
	out.Valid[i] = false
}

// tidyValid drops an all-true Valid slice.
func tidyValid(v *vec.Vector) *vec.Vector {
	if v.Valid == nil {
		return v
	}
	for _, ok := range v.Valid[:v.Len] {
		if !ok {
			return v
		}
	}
	v.Valid = nil
	return v
}

// newOut returns a vector of n zero values of type t, ready to be written
// by index.
func newOut(t vec.Type, n int) *vec.Vector {
	out := &vec.Vector{Type: t, Len: n}
	switch {
	case t == vec.Null:
	case t.IsFloat():
		out.F64 = make([]float64, n)
	case t == vec.String:
		out.Offsets = make([]uint32, 1, n+1)
	default:
		out.I64 = make([]int64, n)
	}
	return out
}
