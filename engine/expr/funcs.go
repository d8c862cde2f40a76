package expr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// fn is a scalar function evaluated a batch at a time: do runs once per
// batch over whole argument vectors.
type fn struct {
	name   string
	args   []Expr
	t      vec.Type
	strict bool // a NULL argument gives a NULL result (do may ignore NULLs)
	do     func(args []*vec.Vector, n int) (*vec.Vector, error)
	// extra renders constant parameters captured by do (e.g. a compiled
	// pattern) after the arguments in String.
	extra []string
	pos   sql.Pos // the call, for errors
	// size, if set, bounds the result's bytes per row from the
	// arguments' bounds (see BuildSize).
	size func(args []Size) Size
}

func (f *fn) Type() vec.Type         { return f.t }
func (f *fn) children() []Expr       { return f.args }
func (f *fn) setChild(i int, e Expr) { f.args[i] = e }
func (f *fn) String() string {
	s := callString(f.name, f.args)
	if len(f.extra) > 0 {
		s = s[:len(s)-1]
		for _, x := range f.extra {
			if len(f.args) > 0 || x != f.extra[0] {
				s += ", "
			}
			s += x
		}
		s += ")"
	}
	return s
}

func (f *fn) Eval(b *vec.Batch) (*vec.Vector, error) {
	vs := make([]*vec.Vector, len(f.args))
	for i, a := range f.args {
		v, err := a.Eval(b)
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	out, err := f.do(vs, b.Len)
	if err != nil {
		return nil, &sql.Error{Pos: f.pos, Msg: fmt.Sprintf("%s: %v", f.name, err)}
	}
	if f.strict {
		for _, v := range vs {
			if v.Valid == nil && v.Type != vec.Null {
				continue
			}
			if out.Valid == nil {
				out.Valid = make([]bool, b.Len)
				for i := range out.Valid {
					out.Valid[i] = true
				}
			}
			for i := range out.Valid {
				if v.IsNull(i) {
					out.Valid[i] = false
				}
			}
		}
	}
	return out, nil
}

// --- string functions ---

func strlenBytes(args []*vec.Vector, n int) (*vec.Vector, error) {
	s := args[0]
	out := newOut(vec.Int64, n)
	for i := range out.I64 {
		out.I64[i] = int64(s.Offsets[i+1] - s.Offsets[i])
	}
	return out, nil
}

func lengthChars(args []*vec.Vector, n int) (*vec.Vector, error) {
	s := args[0]
	out := newOut(vec.Int64, n)
	if isASCII(s.Bytes[s.Offsets[0]:s.Offsets[n]]) {
		return strlenBytes(args, n)
	}
	for i := range out.I64 {
		out.I64[i] = int64(utf8.RuneCount(s.Str(i)))
	}
	return out, nil
}

// isASCII reports whether every byte of b is below utf8.RuneSelf (128),
// eight bytes at a time.
func isASCII(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// changeCase implements lower and upper, with a fast path for ASCII data
// that transforms the whole byte buffer at once.
func changeCase(upper bool) func(args []*vec.Vector, n int) (*vec.Vector, error) {
	return func(args []*vec.Vector, n int) (*vec.Vector, error) {
		s := args[0]
		data := s.Bytes[s.Offsets[0]:s.Offsets[n]]
		out := &vec.Vector{Type: vec.String, Len: n}
		if isASCII(data) {
			out.Bytes = make([]byte, len(data))
			base := s.Offsets[0]
			out.Offsets = make([]uint32, n+1)
			for i := range out.Offsets {
				out.Offsets[i] = s.Offsets[i] - base
			}
			if upper {
				for i, c := range data {
					if 'a' <= c && c <= 'z' {
						c -= 'a' - 'A'
					}
					out.Bytes[i] = c
				}
			} else {
				for i, c := range data {
					if 'A' <= c && c <= 'Z' {
						c += 'a' - 'A'
					}
					out.Bytes[i] = c
				}
			}
			return out, nil
		}
		out.Offsets = make([]uint32, n+1)
		out.Bytes = make([]byte, 0, len(data))
		for i := 0; i < n; i++ {
			if upper {
				out.Bytes = append(out.Bytes, bytes.ToUpper(s.Str(i))...)
			} else {
				out.Bytes = append(out.Bytes, bytes.ToLower(s.Str(i))...)
			}
			out.Offsets[i+1] = uint32(len(out.Bytes))
		}
		return out, nil
	}
}

// substrRange returns the byte range of characters [start, start+length)
// of s, 1-based, with DuckDB's rules: a negative start counts from the end,
// a negative length takes the characters before start, and a start before
// the first character shortens the length.
func substrRange(s []byte, start, length int64, hasLen bool) (int, int) {
	ascii := isASCII(s)
	nchars := int64(len(s))
	if !ascii {
		nchars = int64(utf8.RuneCount(s))
	}
	const limit = 1 << 62 // keeps the arithmetic below from overflowing
	start = max(min(start, limit), -limit)
	length = max(min(length, limit), -limit)
	if start < 0 {
		start = nchars + start + 1
	}
	if !hasLen {
		length = limit
	}
	if length < 0 { // a negative length takes the characters before start
		start += length
		length = -length
	}
	if start < 1 {
		length += start - 1
		start = 1
	}
	if length <= 0 || start > nchars {
		return 0, 0
	}
	from := start - 1
	to := nchars
	if length < nchars-from {
		to = from + length
	}
	if ascii {
		return int(from), int(to)
	}
	bf, bt, k := len(s), len(s), int64(0)
	for i := range string(s) {
		if k == from {
			bf = i
		}
		if k == to {
			bt = i
			break
		}
		k++
	}
	return bf, bt
}

func substr(args []*vec.Vector, n int) (*vec.Vector, error) {
	s, st := args[0], args[1]
	out := &vec.Vector{Type: vec.String, Len: n, Offsets: make([]uint32, n+1)}
	for i := 0; i < n; i++ {
		var length int64
		if len(args) == 3 {
			length = args[2].I64[i]
		}
		str := s.Str(i)
		a, b := substrRange(str, st.I64[i], length, len(args) == 3)
		out.Bytes = append(out.Bytes, str[a:b]...)
		out.Offsets[i+1] = uint32(len(out.Bytes))
	}
	return out, nil
}

// concatStrings implements concat(…): NULL arguments are skipped.
func concatStrings(args []*vec.Vector, n int) (*vec.Vector, error) {
	out := &vec.Vector{Type: vec.String, Len: n, Offsets: make([]uint32, n+1)}
	for i := 0; i < n; i++ {
		for _, a := range args {
			if !a.IsNull(i) {
				out.Bytes = append(out.Bytes, a.Str(i)...)
			}
		}
		out.Offsets[i+1] = uint32(len(out.Bytes))
	}
	return out, nil
}

// regexpReplacer implements regexp_replace with a pattern compiled once.
type regexpReplacer struct {
	re       *regexp.Regexp
	template []byte // Go Expand syntax
	global   bool
	// head is re without a trailing .*$ (see elideTail), nil when re
	// has none; anyNL: its dot matched newlines too.
	head  *regexp.Regexp
	anyNL bool
	// fast and fastHead match re and head where their shape allows
	// (see fastRE), nil where it does not.
	fast, fastHead *fastRE
}

// compileFast sets r.fast and r.fastHead for the pattern pat (whose head,
// if any, elideTail found).
func (r *regexpReplacer) compileFast(pat string) {
	if re, err := syntax.Parse(pat, syntax.Perl); err == nil {
		r.fast = compileFastRE(re)
	}
	if r.head != nil {
		if re, err := syntax.Parse(r.head.String(), syntax.Perl); err == nil {
			r.fastHead = compileFastRE(re)
		}
	}
}

// elideTail sets r.head when pat is ^R.*$ (greedy .*, $ the end of the
// text). Such a pattern matches a string s exactly when R matches a
// prefix of s and the rest of s holds no newline (none to check when the
// dot matches newlines): for s without a newline, the first match of R
// in R's priority order is the pattern's match, with the same groups, and
// the match ends at len(s). Go's backtracker then stops where R ends
// instead of stepping through the rest of every string (as in
// ClickBench's REGEXP_REPLACE(Referer, '^https?://(?:www\.)?([^/]+)/.*$',
// '\1')).
func (r *regexpReplacer) elideTail(pat string) {
	re, err := syntax.Parse(pat, syntax.Perl)
	if err != nil || re.Op != syntax.OpConcat || len(re.Sub) < 3 {
		return
	}
	n := len(re.Sub)
	first, star, end := re.Sub[0], re.Sub[n-2], re.Sub[n-1]
	if first.Op != syntax.OpBeginText || end.Op != syntax.OpEndText ||
		star.Op != syntax.OpStar || star.Flags&syntax.NonGreedy != 0 ||
		(star.Sub[0].Op != syntax.OpAnyCharNotNL && star.Sub[0].Op != syntax.OpAnyChar) {
		return
	}
	head := &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags, Sub: re.Sub[:n-2]}
	h, err := regexp.Compile(head.String())
	if err != nil || h.NumSubexp() != r.re.NumSubexp() {
		return
	}
	r.head, r.anyNL = h, star.Sub[0].Op == syntax.OpAnyChar
}

// match returns the submatch indices of r's pattern in s, as
// FindSubmatchIndex does; where a fastRE finds them, they are in buf, of
// 2*(NumSubexp+1) ints.
func (r *regexpReplacer) match(s []byte, buf []int) []int {
	if r.head != nil && (r.anyNL || bytes.IndexByte(s, '\n') < 0) {
		m, done := []int(nil), false
		if r.fastHead != nil && isASCII(s) {
			m, done = r.fastHead.match(s, buf)
		}
		if !done {
			m = r.head.FindSubmatchIndex(s)
		}
		if m != nil {
			m[1] = len(s)
		}
		return m
	}
	if r.fast != nil && isASCII(s) {
		if m, done := r.fast.match(s, buf); done {
			return m
		}
	}
	return r.re.FindSubmatchIndex(s)
}

// convertReplacement turns DuckDB/RE2 replacement syntax (\1 … \9, \0 the
// whole match, \\ a backslash) into Go's Expand syntax (${1}, $$ for $).
func convertReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '$':
			b.WriteString("$$")
		case c == '\\' && i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9':
			b.WriteString("${" + string(r[i+1]) + "}")
			i++
		case c == '\\' && i+1 < len(r) && r[i+1] == '\\':
			b.WriteByte('\\')
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func (r *regexpReplacer) do(args []*vec.Vector, n int) (*vec.Vector, error) {
	s := args[0]
	out := &vec.Vector{Type: vec.String, Len: n, Offsets: make([]uint32, n+1)}
	out.Bytes = make([]byte, 0, int(s.Offsets[n]-s.Offsets[0]))
	var m []int
	buf := make([]int, 2*(r.re.NumSubexp()+1))
	for i := 0; i < n; i++ {
		str := s.Str(i)
		if r.global {
			out.Bytes = append(out.Bytes, r.re.ReplaceAll(str, r.template)...)
		} else if m = r.match(str, buf); m == nil {
			out.Bytes = append(out.Bytes, str...)
		} else {
			out.Bytes = append(out.Bytes, str[:m[0]]...)
			out.Bytes = r.re.Expand(out.Bytes, r.template, str, m)
			out.Bytes = append(out.Bytes, str[m[1]:]...)
		}
		out.Offsets[i+1] = uint32(len(out.Bytes))
	}
	return out, nil
}

// --- numeric functions ---

func absFn(args []*vec.Vector, n int) (*vec.Vector, error) {
	x := args[0]
	out := newOut(x.Type, n)
	if x.Type.IsFloat() {
		for i, f := range x.F64[:n] {
			out.F64[i] = math.Abs(f)
		}
		return out, nil
	}
	for i, v := range x.I64[:n] {
		if v == math.MinInt64 {
			return nil, fmt.Errorf("overflow in abs")
		}
		if v < 0 {
			v = -v
		}
		out.I64[i] = v
	}
	return out, nil
}

// roundHalfAway rounds a double to digits decimal places, halves away from
// zero, as DuckDB does: with digits >= 0 as round(f·10^d)/10^d (f itself
// when that overflows), with digits < 0 as round(f/10^-d)·10^-d (0 when
// that overflows: round(42, -400) is 0).
func roundHalfAway(f float64, digits int64) float64 {
	if digits == 0 {
		return math.Round(f)
	}
	if digits < 0 {
		m := math.Pow(10, -float64(max(digits, -400)))
		r := math.Round(f/m) * m
		if math.IsInf(r, 0) || math.IsNaN(r) {
			return 0
		}
		return r
	}
	m := math.Pow(10, float64(min(digits, 400)))
	r := math.Round(f*m) / m
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return f
	}
	return r
}

// pow10u64 holds 10^0 … 10^19, the powers of ten a uint64 holds.
var pow10u64 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// roundInt rounds the magnitude m of an integer to a multiple of 10^-d
// (d < 0), halves away from zero, exactly; ok is false when the result
// does not fit in a uint64.
func roundInt(m uint64, d int64) (uint64, bool) {
	if d <= -20 {
		return 0, true
	}
	p := pow10u64[-d]
	q := m / p
	if m%p >= p-p/2 { // the remainder is at least half of p (p is even)
		q++
	}
	hi, lo := bits.Mul64(q, p)
	return lo, hi == 0
}

func roundFn(args []*vec.Vector, n int) (*vec.Vector, error) {
	x := args[0]
	out := newOut(x.Type, n)
	if !x.Type.IsFloat() {
		copy(out.I64, x.I64[:n])
		if len(args) == 2 {
			// Negative digits round integers to tens, hundreds, …
			// exactly, halves away from zero; round(53, -19) is 0.
			for i := range out.I64 {
				d := args[1].I64[i]
				if d >= 0 || x.IsNull(i) || args[1].IsNull(i) {
					continue
				}
				v := x.I64[i]
				if x.Type == vec.UInt64 {
					r, ok := roundInt(uint64(v), d)
					if !ok {
						return nil, fmt.Errorf("round(%d, %d) is out of range for UBIGINT", uint64(v), d)
					}
					out.I64[i] = int64(r)
					continue
				}
				m := uint64(v)
				if v < 0 {
					m = -m
				}
				r, ok := roundInt(m, d)
				switch {
				case ok && v >= 0 && r <= math.MaxInt64:
					out.I64[i] = int64(r)
				case ok && v < 0 && r <= 1<<63:
					out.I64[i] = int64(-r)
				default:
					return nil, fmt.Errorf("round(%d, %d) is out of range for BIGINT", v, d)
				}
			}
		}
		return out, nil
	}
	for i, f := range x.F64[:n] {
		d := int64(0)
		if len(args) == 2 {
			d = args[1].I64[i]
		}
		out.F64[i] = roundHalfAway(f, d)
	}
	if x.Type == vec.Float32 {
		// As DuckDB: rounded in double precision, then to FLOAT.
		roundFloat32(out.F64)
	}
	return out, nil
}

// floorCeil implements floor and ceil on DOUBLE and FLOAT, in the
// argument's type (the result of either is exact).
func floorCeil(floor bool) func(args []*vec.Vector, n int) (*vec.Vector, error) {
	return func(args []*vec.Vector, n int) (*vec.Vector, error) {
		out := newOut(args[0].Type, n)
		if floor {
			for i, v := range args[0].F64[:n] {
				out.F64[i] = math.Floor(v)
			}
		} else {
			for i, v := range args[0].F64[:n] {
				out.F64[i] = math.Ceil(v)
			}
		}
		return out, nil
	}
}
