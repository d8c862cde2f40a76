package expr

import (
	"bytes"
	"strings"

	"cachebook/engine/vec"
)

// logic is AND or OR with SQL three-valued logic.
type logic struct {
	or   bool
	l, r Expr
}

func (g *logic) Type() vec.Type   { return vec.Bool }
func (g *logic) children() []Expr { return []Expr{g.l, g.r} }
func (g *logic) setChild(i int, e Expr) {
	if i == 0 {
		g.l = e
	} else {
		g.r = e
	}
}
func (g *logic) String() string {
	op := " AND "
	if g.or {
		op = " OR "
	}
	return "(" + g.l.String() + op + g.r.String() + ")"
}

func (g *logic) Eval(b *vec.Batch) (*vec.Vector, error) {
	lv, err := g.l.Eval(b)
	if err != nil {
		return nil, err
	}
	rv, err := g.r.Eval(b)
	if err != nil {
		return nil, err
	}
	n := b.Len
	out := &vec.Vector{Type: vec.Bool, Len: n, I64: make([]int64, n)}
	x, y, o := lv.I64[:n], rv.I64[:n], out.I64
	if lv.Valid == nil && rv.Valid == nil {
		if g.or {
			for i := range o {
				o[i] = x[i] | y[i]
			}
		} else {
			for i := range o {
				o[i] = x[i] & y[i]
			}
		}
		return out, nil
	}
	valid := make([]bool, n)
	hasNull := false
	for i := range o {
		lok := lv.Valid == nil || lv.Valid[i]
		rok := rv.Valid == nil || rv.Valid[i]
		if g.or {
			// TRUE wins over NULL.
			if (lok && x[i] != 0) || (rok && y[i] != 0) {
				o[i], valid[i] = 1, true
			} else if lok && rok {
				valid[i] = true
			}
		} else {
			// FALSE wins over NULL.
			if (lok && x[i] == 0) || (rok && y[i] == 0) {
				valid[i] = true
			} else if lok && rok {
				o[i], valid[i] = 1, true
			}
		}
		hasNull = hasNull || !valid[i]
	}
	if hasNull {
		out.Valid = valid
	}
	return out, nil
}

// not is logical negation.
type not struct {
	x Expr
}

func (n *not) Type() vec.Type         { return vec.Bool }
func (n *not) children() []Expr       { return []Expr{n.x} }
func (n *not) setChild(_ int, e Expr) { n.x = e }
func (n *not) String() string         { return "(NOT " + n.x.String() + ")" }

func (n *not) Eval(b *vec.Batch) (*vec.Vector, error) {
	v, err := n.x.Eval(b)
	if err != nil {
		return nil, err
	}
	out := &vec.Vector{Type: vec.Bool, Len: b.Len, I64: make([]int64, b.Len), Valid: cloneValid(v.Valid, b.Len)}
	for i, x := range v.I64[:b.Len] {
		out.I64[i] = 1 - x
	}
	if out.Valid != nil {
		for i, ok := range out.Valid {
			if !ok {
				out.I64[i] = 0
			}
		}
	}
	return out, nil
}

// isNull is x IS [NOT] NULL.
type isNull struct {
	x   Expr
	not bool
}

func (n *isNull) Type() vec.Type         { return vec.Bool }
func (n *isNull) children() []Expr       { return []Expr{n.x} }
func (n *isNull) setChild(_ int, e Expr) { n.x = e }
func (n *isNull) String() string {
	if n.not {
		return "(" + n.x.String() + " IS NOT NULL)"
	}
	return "(" + n.x.String() + " IS NULL)"
}

func (n *isNull) Eval(b *vec.Batch) (*vec.Vector, error) {
	v, err := n.x.Eval(b)
	if err != nil {
		return nil, err
	}
	out := &vec.Vector{Type: vec.Bool, Len: b.Len, I64: make([]int64, b.Len)}
	want := !n.not // value for NULL rows
	switch {
	case v.Type == vec.Null:
		if want {
			for i := range out.I64 {
				out.I64[i] = 1
			}
		}
	case v.Valid == nil:
		if !want {
			for i := range out.I64 {
				out.I64[i] = 1
			}
		}
	default:
		for i, ok := range v.Valid[:b.Len] {
			out.I64[i] = b2i(ok != want)
		}
	}
	return out, nil
}

// inSet is x [NOT] IN (constants), a hash or linear lookup.
type inSet struct {
	x       Expr
	not     bool
	lane    cmpLane
	ints    []int64 // laneInt, laneUint: short lists
	intSet  map[int64]struct{}
	floats  []float64
	strs    map[string]struct{}
	hasNull bool   // the list holds NULL: a miss is NULL, not false
	list    []Expr // the constants, for String
}

func (s *inSet) Type() vec.Type         { return vec.Bool }
func (s *inSet) children() []Expr       { return []Expr{s.x} }
func (s *inSet) setChild(_ int, e Expr) { s.x = e }
func (s *inSet) String() string {
	var b strings.Builder
	b.WriteString("(" + s.x.String())
	if s.not {
		b.WriteString(" NOT")
	}
	b.WriteString(" IN (")
	for i, e := range s.list {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.String())
	}
	b.WriteString("))")
	return b.String()
}

func (s *inSet) Eval(b *vec.Batch) (*vec.Vector, error) {
	v, err := s.x.Eval(b)
	if err != nil {
		return nil, err
	}
	n := b.Len
	out := &vec.Vector{Type: vec.Bool, Len: n, I64: make([]int64, n), Valid: cloneValid(v.Valid, n)}
	o := out.I64
	switch s.lane {
	case laneInt, laneUint:
		x := v.I64[:n]
		switch {
		case s.intSet != nil:
			for i := range o {
				_, hit := s.intSet[x[i]]
				o[i] = b2i(hit)
			}
		case len(s.ints) == 1:
			c := s.ints[0]
			for i := range o {
				o[i] = b2i(x[i] == c)
			}
		default:
			for i := range o {
				hit := false
				for _, c := range s.ints {
					hit = hit || x[i] == c
				}
				o[i] = b2i(hit)
			}
		}
	case laneFloat:
		x := v.F64[:n]
		for i := range o {
			hit := false
			for _, c := range s.floats {
				hit = hit || vec.CompareFloat(x[i], c) == 0
			}
			o[i] = b2i(hit)
		}
	case laneStr:
		for i := range o {
			_, hit := s.strs[string(v.Str(i))]
			o[i] = b2i(hit)
		}
	}
	if s.hasNull {
		for i := range o {
			if o[i] == 0 {
				setNull(out, i)
			}
		}
	}
	if s.not {
		for i := range o {
			o[i] ^= 1
		}
	}
	if out.Valid != nil {
		for i, ok := range out.Valid {
			if !ok {
				o[i] = 0
			}
		}
	}
	return out, nil
}

// caseExpr is a searched CASE (a simple CASE is bound as a searched one).
// It evaluates every arm over the whole batch and then picks, per row, the
// result of the first arm whose condition is true.
type caseExpr struct {
	conds   []Expr
	results []Expr
	els     Expr // never nil: a missing ELSE is a NULL constant
	t       vec.Type
}

func (c *caseExpr) Type() vec.Type { return c.t }
func (c *caseExpr) children() []Expr {
	var out []Expr
	for i := range c.conds {
		out = append(out, c.conds[i], c.results[i])
	}
	return append(out, c.els)
}
func (c *caseExpr) setChild(i int, e Expr) {
	switch {
	case i == 2*len(c.conds):
		c.els = e
	case i%2 == 0:
		c.conds[i/2] = e
	default:
		c.results[i/2] = e
	}
}
func (c *caseExpr) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	for i := range c.conds {
		b.WriteString(" WHEN " + c.conds[i].String() + " THEN " + c.results[i].String())
	}
	b.WriteString(" ELSE " + c.els.String() + " END")
	return b.String()
}

func (c *caseExpr) Eval(b *vec.Batch) (*vec.Vector, error) {
	n := b.Len
	// pick[i] is the arm chosen for row i; len(conds) means ELSE.
	pick := make([]uint16, n)
	arms := len(c.conds)
	for i := range pick {
		pick[i] = uint16(arms)
	}
	undecided := n
	for k := 0; k < arms && undecided > 0; k++ {
		cv, err := c.conds[k].Eval(b)
		if err != nil {
			return nil, err
		}
		for i := range pick {
			if int(pick[i]) == arms && cv.I64[i] != 0 && (cv.Valid == nil || cv.Valid[i]) {
				pick[i] = uint16(k)
				undecided--
			}
		}
	}
	vals := make([]*vec.Vector, arms+1)
	used := make([]bool, arms+1)
	for _, p := range pick {
		used[p] = true
	}
	for k := 0; k <= arms; k++ {
		if !used[k] {
			continue
		}
		e := c.els
		if k < arms {
			e = c.results[k]
		}
		v, err := evalArm(e, b)
		if err != nil {
			return nil, err
		}
		vals[k] = v
	}
	return gather(c.t, n, pick, vals), nil
}

// gather builds a vector whose row i is row i of vals[pick[i]]. A vector
// of length 1 (an unbroadcast constant) supplies its value to every row.
func gather(t vec.Type, n int, pick []uint16, vals []*vec.Vector) *vec.Vector {
	out := &vec.Vector{Type: t, Len: n}
	row := func(p uint16, i int) int {
		if vals[p].Len == 1 && n != 1 {
			return 0
		}
		return i
	}
	var valid []bool
	for i, p := range pick {
		if vals[p].IsNull(row(p, i)) {
			if valid == nil {
				valid = make([]bool, n)
				for j := range valid {
					valid[j] = true
				}
			}
			valid[i] = false
		}
	}
	out.Valid = valid
	switch {
	case t == vec.Null:
	case t.IsFloat():
		out.F64 = make([]float64, n)
		for i, p := range pick {
			if valid == nil || valid[i] {
				out.F64[i] = vals[p].F64[row(p, i)]
			}
		}
	case t == vec.String:
		out.Offsets = make([]uint32, n+1)
		size := 0
		for i, p := range pick {
			if valid == nil || valid[i] {
				r := row(p, i)
				size += int(vals[p].Offsets[r+1] - vals[p].Offsets[r])
			}
		}
		out.Bytes = make([]byte, 0, size)
		for i, p := range pick {
			if valid == nil || valid[i] {
				out.Bytes = append(out.Bytes, vals[p].Str(row(p, i))...)
			}
			out.Offsets[i+1] = uint32(len(out.Bytes))
		}
	default:
		out.I64 = make([]int64, n)
		for i, p := range pick {
			if valid == nil || valid[i] {
				out.I64[i] = vals[p].I64[row(p, i)]
			}
		}
	}
	return out
}

// evalArm evaluates a CASE or coalesce operand; a constant stays a
// one-value vector that gather reuses for every row.
func evalArm(e Expr, b *vec.Batch) (*vec.Vector, error) {
	if c, ok := e.(*Const); ok {
		return c.V, nil
	}
	return e.Eval(b)
}

// coalesce returns, per row, its first non-NULL argument.
type coalesce struct {
	args []Expr
	t    vec.Type
}

func (c *coalesce) Type() vec.Type         { return c.t }
func (c *coalesce) children() []Expr       { return c.args }
func (c *coalesce) setChild(i int, e Expr) { c.args[i] = e }
func (c *coalesce) String() string         { return callString("coalesce", c.args) }

func (c *coalesce) Eval(b *vec.Batch) (*vec.Vector, error) {
	n := b.Len
	last := uint16(len(c.args) - 1)
	pick := make([]uint16, n)
	for i := range pick {
		pick[i] = last
	}
	vals := make([]*vec.Vector, len(c.args))
	undecided := n
	for k, a := range c.args {
		if undecided == 0 {
			break
		}
		v, err := evalArm(a, b)
		if err != nil {
			return nil, err
		}
		vals[k] = v
		if k == int(last) {
			break
		}
		for i := range pick {
			if pick[i] == last && !vals[k].IsNull(min(i, vals[k].Len-1)) {
				pick[i] = uint16(k)
				undecided--
			}
		}
	}
	for k := range vals {
		if vals[k] == nil { // never picked
			vals[k] = &vec.Vector{Type: vec.Null, Len: n}
		}
	}
	return gather(c.t, n, pick, vals), nil
}

// nullIf is nullif(a, b): NULL where a = b, else a.
type nullIf struct {
	a  Expr
	eq *compare // a = b
}

func (f *nullIf) Type() vec.Type   { return f.a.Type() }
func (f *nullIf) children() []Expr { return []Expr{f.a, f.eq} }
func (f *nullIf) setChild(i int, e Expr) {
	if i == 0 {
		f.a = e
	} else if c, ok := e.(*compare); ok {
		f.eq = c
	}
}
func (f *nullIf) String() string { return "nullif(" + f.a.String() + ", " + f.eq.r.String() + ")" }

func (f *nullIf) Eval(b *vec.Batch) (*vec.Vector, error) {
	av, err := f.a.Eval(b)
	if err != nil {
		return nil, err
	}
	ev, err := f.eq.Eval(b)
	if err != nil {
		return nil, err
	}
	out := copyVector(av)
	for i := 0; i < b.Len; i++ {
		if ev.I64[i] != 0 && (ev.Valid == nil || ev.Valid[i]) {
			setNull(out, i)
		}
	}
	return out, nil
}

// copyVector returns a copy of v that may be modified.
func copyVector(v *vec.Vector) *vec.Vector {
	out := *v
	out.I64 = append([]int64(nil), v.I64...)
	out.F64 = append([]float64(nil), v.F64...)
	out.Bytes = append([]byte(nil), v.Bytes...)
	out.Offsets = append([]uint32(nil), v.Offsets...)
	out.Valid = append([]bool(nil), v.Valid...)
	if v.Valid == nil {
		out.Valid = nil
	}
	return &out
}

func callString(name string, args []Expr) string {
	var b bytes.Buffer
	b.WriteString(name + "(")
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	b.WriteString(")")
	return b.String()
}
