package expr

import (
	"bytes"
	"slices"

	"cachebook/engine/vec"
)

// maxSize is where size arithmetic saturates: far past any memory limit,
// far from overflowing int64.
const maxSize = 1 << 62

// Size is an upper bound of the bytes of strings an expression builds, as
// a function of its input: per row, a fixed number of bytes plus, for some
// string columns of the input batch, a multiple of the bytes of that
// column's value in the row. Bounds compose without evaluating anything:
// concat(a, b) is a's bound plus b's, a regexp_replace that repeats its
// input twice is twice its input's. Over rows [lo, hi) of a batch the bound
// is computed from the columns' offsets in O(1) per column, so a caller
// can size the slices it evaluates, and charge each slice's bound to a
// memory budget, before a single byte is built.
type Size struct {
	fixed int64     // bytes per row, whatever the input
	cols  []colSize // sorted by index, each index once
}

// colSize is one column's share of a Size: k bytes per byte of the value.
type colSize struct {
	index int
	k     int64
}

// Zero reports whether s bounds nothing: the expression builds no strings.
func (s Size) Zero() bool { return s.fixed == 0 && len(s.cols) == 0 }

// Rows returns the bound for rows [lo, hi) of b, saturating at 1<<62.
func (s Size) Rows(b *vec.Batch, lo, hi int) int64 {
	n := satMul(s.fixed, int64(hi-lo))
	for _, c := range s.cols {
		if c.index < 0 || c.index >= len(b.Vecs) {
			continue
		}
		v := b.Vecs[c.index]
		if v == nil || v.Type != vec.String || len(v.Offsets) <= hi {
			continue
		}
		n = satAdd(n, satMul(c.k, int64(v.Offsets[hi]-v.Offsets[lo])))
	}
	return n
}

// RowMax returns the bound of the largest single row of rows [lo, hi)
// of b: an expression whose one row would pass a memory limit is refused
// before it is built. It costs a pass over the rows.
func (s Size) RowMax(b *vec.Batch, lo, hi int) int64 {
	var m int64
	for r := lo; r < hi; r++ {
		m = max(m, s.Rows(b, r, r+1))
	}
	return m
}

// Plus returns the bound of what two expressions build together.
func (s Size) Plus(t Size) Size {
	out := Size{fixed: satAdd(s.fixed, t.fixed)}
	out.cols = slices.Clone(s.cols)
	for _, c := range t.cols {
		i, found := slices.BinarySearchFunc(out.cols, c.index, func(a colSize, x int) int { return a.index - x })
		if found {
			out.cols[i].k = satAdd(out.cols[i].k, c.k)
		} else {
			out.cols = slices.Insert(out.cols, i, c)
		}
	}
	return out
}

func (s Size) times(k int64) Size {
	out := Size{fixed: satMul(s.fixed, k), cols: slices.Clone(s.cols)}
	for i := range out.cols {
		out.cols[i].k = satMul(out.cols[i].k, k)
	}
	return out
}

func satAdd(a, b int64) int64 {
	if a > maxSize-b {
		return maxSize
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > maxSize/b {
		return maxSize
	}
	return a * b
}

// rowOverhead is what a built string vector costs per row beyond its
// bytes: an offset and a validity flag, rounded up.
const rowOverhead = 8

// castStringBytes bounds the text of a non-string value cast to VARCHAR
// (the longest is a timestamp with microseconds or a float's shortest
// round-trip form, under 32 bytes).
const castStringBytes = 40

// BuildSize returns an upper bound of the bytes of strings that evaluating
// e builds per row: the result of every node of e that makes new strings
// (a function, a cast, a CASE, a string constant broadcast to every row),
// all of which may be held at once while e is evaluated, whatever e's own
// type (LENGTH(REGEXP_REPLACE(…)) builds the replaced strings first). A
// column reference builds nothing. ok is false when e has a string node
// whose result this package cannot bound; the caller must then measure.
// It visits each node once.
func BuildSize(e Expr) (s Size, ok bool) {
	_, built, ok := sizes(e)
	return built, ok
}

// sizes returns bounds of e's result per row and of all that evaluating e
// builds (its result included).
func sizes(e Expr) (res, built Size, ok bool) {
	var kids []Expr
	if n, isNode := e.(node); isNode {
		kids = n.children()
	}
	args := make([]Size, len(kids))
	for i, c := range kids {
		r, b, ok := sizes(c)
		if !ok {
			return Size{}, Size{}, false
		}
		args[i] = r
		built = built.Plus(b)
	}
	if e.Type() != vec.String {
		return Size{}, built, true
	}
	if c, ref := e.(*ColumnRef); ref {
		return Size{cols: []colSize{{index: c.Index, k: 1}}}, built, true
	}
	if res, ok = resultSize(e, args); !ok {
		return Size{}, Size{}, false
	}
	built = built.Plus(res)
	built.fixed = satAdd(built.fixed, rowOverhead)
	return res, built, true
}

// resultSize bounds the bytes of the string e's result per row, given the
// bounds of its operands' results (zero for operands that are not
// strings).
func resultSize(e Expr, args []Size) (Size, bool) {
	switch e := e.(type) {
	case *Const:
		if e.V.IsNull(0) {
			return Size{}, true
		}
		return Size{fixed: int64(len(e.V.Str(0)))}, true
	case *cast:
		if e.x.Type() == vec.String {
			return args[0], true
		}
		return Size{fixed: castStringBytes}, true
	case *fn:
		if e.size != nil {
			return e.size(args), true
		}
		switch e.name {
		case "lower", "lcase", "upper", "ucase":
			// A rune may change length with its case, and an invalid
			// byte becomes U+FFFD: at most three bytes per byte.
			return args[0].times(3), true
		case "substring", "substr":
			return args[0], true
		case "concat":
			var s Size
			for _, a := range args {
				s = s.Plus(a)
			}
			return s, true
		}
		return Size{}, false
	case *caseExpr, *coalesce, *nullIf:
		// The result is one of the string operands' values, row by row.
		var s Size
		for _, a := range args {
			s = s.Plus(a)
		}
		return s, true
	}
	return Size{}, false
}

// size bounds regexp_replace's result per row from its input's bound. A
// match of m bytes of an input of n is replaced by lit bytes and k copies
// of groups no longer than the match: replacing the first match makes at
// most n - m + lit + k·m <= max(k, 1)·n + lit bytes. Replacing them all
// (at most n+1 matches, empty ones included, together no longer than the
// input) makes at most max(k, 1)·n + (n+1)·lit.
func (r *regexpReplacer) size(args []Size) Size {
	var k, lit int64
	t := r.template
	for len(t) > 0 {
		if bytes.HasPrefix(t, []byte("${")) {
			if end := bytes.IndexByte(t, '}'); end > 0 {
				k++
				t = t[end+1:]
				continue
			}
		}
		lit++
		t = t[1:]
	}
	in := args[0].times(max(k, 1))
	if r.global {
		return in.Plus(args[0].times(lit)).Plus(Size{fixed: lit})
	}
	return in.Plus(Size{fixed: lit})
}

// foldMaxBytes is the most bytes of strings binding may build to fold a
// node with constant operands into a constant: binding runs outside any
// statement's memory budget, so a larger node is left to be evaluated,
// and bounded, with the query.
const foldMaxBytes = 1 << 20

// foldable reports whether x, whose operands are constants, may be folded
// at bind time: what evaluating it builds is bounded and small.
func foldable(x Expr) bool {
	s, ok := BuildSize(x)
	return ok && len(s.cols) == 0 && s.fixed <= foldMaxBytes
}
