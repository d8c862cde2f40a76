package expr

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// arith is an arithmetic operator on two operands of the same lane: both
// integer-like (I64) or both DOUBLE or both FLOAT (F64). The binder inserts
// casts. FLOAT results are computed in double precision and rounded to
// single, which for + - * / and % gives the correctly rounded float32
// result (a double holds more than twice float32's significand bits).
type arith struct {
	op       sql.Op
	l, r     Expr
	t        vec.Type // result type
	float    bool     // operate on F64
	unsigned bool     // operate on I64 as uint64 (UBIGINT)
	pos      sql.Pos  // the operator, for overflow errors
}

func (a *arith) Type() vec.Type   { return a.t }
func (a *arith) children() []Expr { return []Expr{a.l, a.r} }
func (a *arith) setChild(i int, e Expr) {
	if i == 0 {
		a.l = e
	} else {
		a.r = e
	}
}
func (a *arith) String() string {
	return "(" + a.l.String() + " " + a.op.String() + " " + a.r.String() + ")"
}

// Eval evaluates the operator; an overflow error carries the operator's
// position.
func (a *arith) Eval(b *vec.Batch) (*vec.Vector, error) {
	v, err := a.eval(b)
	if err != nil {
		var se *sql.Error
		if !errors.As(err, &se) {
			err = &sql.Error{Pos: a.pos, Msg: err.Error(), Err: err}
		}
	}
	return v, err
}

func (a *arith) eval(b *vec.Batch) (*vec.Vector, error) {
	lv, err := a.l.Eval(b)
	if err != nil {
		return nil, err
	}
	n := b.Len
	out := &vec.Vector{Type: a.t, Len: n}
	if c, ok := a.r.(*Const); ok && !c.IsNull() {
		out.Valid = cloneValid(lv.Valid, n)
		if a.float {
			out.F64 = make([]float64, n)
			if a.op == sql.OpIntDiv && c.Float() == 0 {
				out.Valid = make([]bool, n)
				return out, nil
			}
			floatOpScalar(a.op, out.F64, lv.F64[:n], c.Float())
			if a.t == vec.Float32 {
				roundFloat32(out.F64)
			}
			return out, nil
		}
		out.I64 = make([]int64, n)
		if a.unsigned {
			if err := uintOp(a.op, out, lv.I64[:n], nil, uint64(c.Int())); err != nil {
				return nil, err
			}
			return tidyValid(out), nil
		}
		if err := intOpScalar(a.op, out, lv.I64[:n], c.Int()); err != nil {
			return nil, err
		}
		return tidyValid(out), nil
	}
	rv, err := a.r.Eval(b)
	if err != nil {
		return nil, err
	}
	out.Valid = mergeValid(lv.Valid, rv.Valid, n)
	if a.float {
		out.F64 = make([]float64, n)
		floatOp(a.op, out.F64, lv.F64[:n], rv.F64[:n])
		if a.t == vec.Float32 {
			roundFloat32(out.F64)
		}
		if a.op == sql.OpIntDiv {
			for i, d := range rv.F64[:n] {
				if d == 0 {
					out.F64[i] = 0
					setNull(out, i)
				}
			}
		}
		return tidyValid(out), nil
	}
	out.I64 = make([]int64, n)
	if a.unsigned {
		if err := uintOp(a.op, out, lv.I64[:n], rv.I64[:n], 0); err != nil {
			return nil, err
		}
		return tidyValid(out), nil
	}
	if err := intOp(a.op, out, lv.I64[:n], rv.I64[:n]); err != nil {
		return nil, err
	}
	return tidyValid(out), nil
}

// uintOp computes out.I64[i] = x[i] op y[i] on UBIGINT values stored
// bit-for-bit in int64, with y == nil meaning the constant c. Overflow of
// + - * is an error (NULL rows hold 0 and cannot overflow); division or
// modulo by zero gives NULL.
func uintOp(op sql.Op, out *vec.Vector, xs, ys []int64, c uint64) error {
	o := out.I64[:len(xs)]
	yv := func(i int) uint64 {
		if ys == nil {
			return c
		}
		return uint64(ys[i])
	}
	for i := range o {
		x, y := uint64(xs[i]), yv(i)
		var r uint64
		switch op {
		case sql.OpAdd:
			r = x + y
			if r < x {
				return fmt.Errorf("overflow in UBIGINT %s", op)
			}
		case sql.OpSub:
			if x < y {
				if out.Valid != nil && !out.Valid[i] {
					continue
				}
				return fmt.Errorf("overflow in UBIGINT %s", op)
			}
			r = x - y
		case sql.OpMul:
			hi, lo := bits.Mul64(x, y)
			if hi != 0 {
				return fmt.Errorf("overflow in UBIGINT %s", op)
			}
			r = lo
		case sql.OpIntDiv, sql.OpMod:
			if y == 0 {
				setNull(out, i)
				continue
			}
			if op == sql.OpIntDiv {
				r = x / y
			} else {
				r = x % y
			}
		default:
			return fmt.Errorf("UBIGINT operator %s not supported", op)
		}
		o[i] = int64(r)
	}
	return nil
}

func cloneValid(v []bool, n int) []bool {
	if v == nil {
		return nil
	}
	out := make([]bool, n)
	copy(out, v[:n])
	return out
}

func overflowError(op sql.Op) error {
	return fmt.Errorf("overflow in BIGINT %s", op)
}

// mulOverflows reports whether x*y overflows int64.
func mulOverflows(x, y int64) bool {
	hi, lo := bits.Mul64(uint64(x), uint64(y))
	// Signed high word of the 128-bit product.
	shi := int64(hi)
	if x < 0 {
		shi -= y
	}
	if y < 0 {
		shi -= x
	}
	return shi != int64(lo)>>63
}

// intOp computes out.I64[i] = x[i] op y[i]. Division or modulo by zero
// gives NULL; overflow of + - * is an error, as in DuckDB.
func intOp(op sql.Op, out *vec.Vector, x, y []int64) error {
	o := out.I64[:len(x)]
	y = y[:len(x)]
	switch op {
	case sql.OpAdd:
		var ovf int64
		for i := range o {
			s := x[i] + y[i]
			ovf |= (s ^ x[i]) & (s ^ y[i])
			o[i] = s
		}
		if ovf < 0 {
			return overflowError(op)
		}
	case sql.OpSub:
		var ovf int64
		for i := range o {
			s := x[i] - y[i]
			ovf |= (x[i] ^ y[i]) & (s ^ x[i])
			o[i] = s
		}
		if ovf < 0 {
			return overflowError(op)
		}
	case sql.OpMul:
		for i := range o {
			o[i] = x[i] * y[i]
		}
		for i := range o {
			if mulOverflows(x[i], y[i]) && (out.Valid == nil || out.Valid[i]) {
				return overflowError(op)
			}
		}
	case sql.OpIntDiv, sql.OpMod:
		for i := range o {
			d := y[i]
			if d == 0 {
				o[i] = 0
				setNull(out, i)
				continue
			}
			if d == -1 { // avoids the MinInt64 / -1 trap
				if op == sql.OpMod {
					o[i] = 0
				} else {
					if x[i] == math.MinInt64 && (out.Valid == nil || out.Valid[i]) {
						return overflowError(op)
					}
					o[i] = -x[i]
				}
				continue
			}
			if op == sql.OpIntDiv {
				o[i] = x[i] / d
			} else {
				o[i] = x[i] % d
			}
		}
	default:
		return fmt.Errorf("integer operator %s not supported", op)
	}
	return nil
}

// intOpScalar computes out.I64[i] = x[i] op c.
func intOpScalar(op sql.Op, out *vec.Vector, x []int64, c int64) error {
	o := out.I64[:len(x)]
	switch op {
	case sql.OpAdd:
		var ovf int64
		for i := range o {
			s := x[i] + c
			ovf |= (s ^ x[i]) & (s ^ c)
			o[i] = s
		}
		if ovf < 0 {
			return overflowError(op)
		}
	case sql.OpSub:
		var ovf int64
		for i := range o {
			s := x[i] - c
			ovf |= (x[i] ^ c) & (s ^ x[i])
			o[i] = s
		}
		if ovf < 0 {
			return overflowError(op)
		}
	case sql.OpMul:
		for i := range o {
			o[i] = x[i] * c
		}
		for i := range o {
			if mulOverflows(x[i], c) && (out.Valid == nil || out.Valid[i]) {
				return overflowError(op)
			}
		}
	case sql.OpIntDiv, sql.OpMod:
		switch c {
		case 0:
			out.Valid = make([]bool, len(x))
			clear(o)
		case -1:
			for i := range o {
				if op == sql.OpMod {
					o[i] = 0
				} else {
					if x[i] == math.MinInt64 && (out.Valid == nil || out.Valid[i]) {
						return overflowError(op)
					}
					o[i] = -x[i]
				}
			}
		default:
			if op == sql.OpIntDiv {
				for i := range o {
					o[i] = x[i] / c
				}
			} else {
				for i := range o {
					o[i] = x[i] % c
				}
			}
		}
	default:
		return fmt.Errorf("integer operator %s not supported", op)
	}
	return nil
}

// floatOp computes o[i] = x[i] op y[i] with IEEE 754 semantics (DuckDB:
// 1.0/0 is inf, 0.0/0 is nan).
func floatOp(op sql.Op, o, x, y []float64) {
	y = y[:len(x)]
	o = o[:len(x)]
	switch op {
	case sql.OpAdd:
		for i := range o {
			o[i] = x[i] + y[i]
		}
	case sql.OpSub:
		for i := range o {
			o[i] = x[i] - y[i]
		}
	case sql.OpMul:
		for i := range o {
			o[i] = x[i] * y[i]
		}
	case sql.OpDiv:
		for i := range o {
			o[i] = x[i] / y[i]
		}
	case sql.OpIntDiv:
		// DuckDB's // on DOUBLE divides without truncating; a zero divisor
		// gives NULL (handled by the caller).
		for i := range o {
			o[i] = x[i] / y[i]
		}
	case sql.OpMod:
		for i := range o {
			o[i] = math.Mod(x[i], y[i])
		}
	}
}

func floatOpScalar(op sql.Op, o, x []float64, c float64) {
	o = o[:len(x)]
	switch op {
	case sql.OpAdd:
		for i := range o {
			o[i] = x[i] + c
		}
	case sql.OpSub:
		for i := range o {
			o[i] = x[i] - c
		}
	case sql.OpMul:
		for i := range o {
			o[i] = x[i] * c
		}
	case sql.OpDiv, sql.OpIntDiv:
		for i := range o {
			o[i] = x[i] / c
		}
	case sql.OpMod:
		for i := range o {
			o[i] = math.Mod(x[i], c)
		}
	}
}

// roundFloat32 rounds every value of f to single precision, as a FLOAT
// result is stored.
func roundFloat32(f []float64) {
	for i, x := range f {
		f[i] = float64(float32(x))
	}
}

// neg is unary minus.
type neg struct {
	x   Expr
	pos sql.Pos
}

func (n *neg) Type() vec.Type         { return n.x.Type() }
func (n *neg) children() []Expr       { return []Expr{n.x} }
func (n *neg) setChild(_ int, e Expr) { n.x = e }
func (n *neg) String() string         { return "-" + n.x.String() }

func (n *neg) Eval(b *vec.Batch) (*vec.Vector, error) {
	v, err := n.x.Eval(b)
	if err != nil {
		return nil, err
	}
	out := &vec.Vector{Type: v.Type, Len: b.Len, Valid: cloneValid(v.Valid, b.Len)}
	if v.Type.IsFloat() {
		out.F64 = make([]float64, b.Len)
		for i, x := range v.F64[:b.Len] {
			out.F64[i] = -x
		}
		return out, nil
	}
	out.I64 = make([]int64, b.Len)
	for i, x := range v.I64[:b.Len] {
		if x == math.MinInt64 && (v.Valid == nil || v.Valid[i]) {
			return nil, &sql.Error{Pos: n.pos, Msg: overflowError(sql.OpNeg).Error()}
		}
		out.I64[i] = -x
	}
	return out, nil
}

// cmpLane says how a comparison reads its operands.
type cmpLane uint8

const (
	laneInt   cmpLane = iota // signed I64
	laneUint                 // unsigned I64 (UBIGINT)
	laneFloat                // F64
	laneStr                  // bytes
)

// compare is = <> < <= > >= on two operands of the same lane; the result is
// BOOLEAN, NULL where either side is NULL.
type compare struct {
	op   sql.Op
	l, r Expr
	lane cmpLane
}

func (c *compare) Type() vec.Type   { return vec.Bool }
func (c *compare) children() []Expr { return []Expr{c.l, c.r} }
func (c *compare) setChild(i int, e Expr) {
	if i == 0 {
		c.l = e
	} else {
		c.r = e
	}
}
func (c *compare) String() string {
	return "(" + c.l.String() + " " + c.op.String() + " " + c.r.String() + ")"
}

// flip returns the operator with its operands swapped: a < b == b > a.
func flip(op sql.Op) sql.Op {
	switch op {
	case sql.OpLt:
		return sql.OpGt
	case sql.OpLe:
		return sql.OpGe
	case sql.OpGt:
		return sql.OpLt
	case sql.OpGe:
		return sql.OpLe
	}
	return op
}

func (c *compare) Eval(b *vec.Batch) (*vec.Vector, error) {
	n := b.Len
	l, r, op := c.l, c.r, c.op
	if _, ok := l.(*Const); ok {
		l, r, op = r, l, flip(op)
	}
	lv, err := l.Eval(b)
	if err != nil {
		return nil, err
	}
	out := &vec.Vector{Type: vec.Bool, Len: n, I64: make([]int64, n)}
	if k, ok := r.(*Const); ok && !k.IsNull() {
		out.Valid = cloneValid(lv.Valid, n)
		switch c.lane {
		case laneInt:
			cmpScalar(op, out.I64, lv.I64[:n], k.Int())
		case laneUint:
			cmpUintScalar(op, out.I64, lv.I64[:n], uint64(k.Int()))
		case laneFloat:
			cmpScalar(op, out.I64, lv.F64[:n], k.Float())
			fixNaNScalar(op, out.I64, lv.F64[:n], k.Float())
		case laneStr:
			cmpStrScalar(op, out.I64, lv, k.V.Str(0))
		}
		return out, nil
	}
	rv, err := r.Eval(b)
	if err != nil {
		return nil, err
	}
	out.Valid = mergeValid(lv.Valid, rv.Valid, n)
	switch c.lane {
	case laneInt:
		cmpVec(op, out.I64, lv.I64[:n], rv.I64[:n])
	case laneUint:
		cmpUint(op, out.I64, lv.I64[:n], rv.I64[:n])
	case laneFloat:
		cmpVec(op, out.I64, lv.F64[:n], rv.F64[:n])
		fixNaN(op, out.I64, lv.F64[:n], rv.F64[:n])
	case laneStr:
		cmpStr(op, out.I64, lv, rv)
	}
	return out, nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// ordered is the element type of the integer and double comparison loops.
type ordered interface{ ~int64 | ~float64 }

// cmpVec compares x[i] with y[i] for every i, writing 1 or 0 to o. The
// switch is outside the loops so each loop is one compare and store.
func cmpVec[T ordered](op sql.Op, o []int64, x, y []T) {
	y = y[:len(x)]
	o = o[:len(x)]
	switch op {
	case sql.OpEq:
		for i := range o {
			o[i] = b2i(x[i] == y[i])
		}
	case sql.OpNe:
		for i := range o {
			o[i] = b2i(x[i] != y[i])
		}
	case sql.OpLt:
		for i := range o {
			o[i] = b2i(x[i] < y[i])
		}
	case sql.OpLe:
		for i := range o {
			o[i] = b2i(x[i] <= y[i])
		}
	case sql.OpGt:
		for i := range o {
			o[i] = b2i(x[i] > y[i])
		}
	case sql.OpGe:
		for i := range o {
			o[i] = b2i(x[i] >= y[i])
		}
	}
}

// cmpScalar compares every x[i] with the constant c.
func cmpScalar[T ordered](op sql.Op, o []int64, x []T, c T) {
	o = o[:len(x)]
	switch op {
	case sql.OpEq:
		for i := range o {
			o[i] = b2i(x[i] == c)
		}
	case sql.OpNe:
		for i := range o {
			o[i] = b2i(x[i] != c)
		}
	case sql.OpLt:
		for i := range o {
			o[i] = b2i(x[i] < c)
		}
	case sql.OpLe:
		for i := range o {
			o[i] = b2i(x[i] <= c)
		}
	case sql.OpGt:
		for i := range o {
			o[i] = b2i(x[i] > c)
		}
	case sql.OpGe:
		for i := range o {
			o[i] = b2i(x[i] >= c)
		}
	}
}

// fixNaN corrects the IEEE results of cmpVec for rows holding a NaN to
// DuckDB's order (vec.CompareFloat: NaN equals NaN and is the greatest
// value). Rows without NaN cost one extra comparison each.
func fixNaN(op sql.Op, o []int64, x, y []float64) {
	y = y[:len(x)]
	for i, a := range x {
		if a != a || y[i] != y[i] {
			o[i] = b2i(cmpResult(op, vec.CompareFloat(a, y[i])))
		}
	}
}

// fixNaNScalar is fixNaN for a comparison with the constant c.
func fixNaNScalar(op sql.Op, o []int64, x []float64, c float64) {
	if c != c {
		for i, a := range x {
			o[i] = b2i(cmpResult(op, vec.CompareFloat(a, c)))
		}
		return
	}
	for i, a := range x {
		if a != a {
			o[i] = b2i(cmpResult(op, 1))
		}
	}
}

func cmpUint(op sql.Op, o, x, y []int64) {
	y = y[:len(x)]
	for i := range o[:len(x)] {
		o[i] = b2i(cmpResult(op, cmp3u(uint64(x[i]), uint64(y[i]))))
	}
}

func cmpUintScalar(op sql.Op, o, x []int64, c uint64) {
	for i := range o[:len(x)] {
		o[i] = b2i(cmpResult(op, cmp3u(uint64(x[i]), c)))
	}
}

func cmp3u(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpResult maps a three-way comparison result to the operator's outcome.
func cmpResult(op sql.Op, c int) bool {
	switch op {
	case sql.OpEq:
		return c == 0
	case sql.OpNe:
		return c != 0
	case sql.OpLt:
		return c < 0
	case sql.OpLe:
		return c <= 0
	case sql.OpGt:
		return c > 0
	case sql.OpGe:
		return c >= 0
	}
	return false
}

// cmpStrScalar compares every string of v bytewise with c.
func cmpStrScalar(op sql.Op, o []int64, v *vec.Vector, c []byte) {
	offs := v.Offsets[:v.Len+1]
	data := v.Bytes
	n := uint32(len(c))
	switch op {
	case sql.OpEq, sql.OpNe:
		want := b2i(op == sql.OpEq)
		if n == 0 { // the common s <> '' test reads only the offsets
			for i := range o[:v.Len] {
				o[i] = b2i((offs[i+1] == offs[i]) == (want == 1))
			}
			return
		}
		for i := range o[:v.Len] {
			eq := offs[i+1]-offs[i] == n && bytes.Equal(data[offs[i]:offs[i+1]], c)
			o[i] = b2i(eq == (want == 1))
		}
	default:
		for i := range o[:v.Len] {
			o[i] = b2i(cmpResult(op, bytes.Compare(data[offs[i]:offs[i+1]], c)))
		}
	}
}

func cmpStr(op sql.Op, o []int64, x, y *vec.Vector) {
	for i := range o[:x.Len] {
		o[i] = b2i(cmpResult(op, bytes.Compare(x.Str(i), y.Str(i))))
	}
}
