package expr

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"cachebook/engine/vec"
)

// likeKind is the shape of a LIKE pattern, chosen once per pattern so that
// the common shapes run as a plain byte search.
type likeKind uint8

const (
	likeExact    likeKind = iota // no wildcards
	likePrefix                   // 'lit%'
	likeSuffix                   // '%lit'
	likeContains                 // '%lit%'
	likeAny                      // '%', '%%', …: every non-NULL string
	likeSegments                 // only % wildcards: ordered segments
	likeGeneral                  // _ present: backtracking matcher
)

// likeMatcher matches strings against one LIKE pattern. LIKE has no escape
// character by default (as in DuckDB); _ matches one character (rune).
type likeMatcher struct {
	kind    likeKind
	pattern []byte
	lit     []byte   // likeExact, likePrefix, likeSuffix, likeContains
	segs    [][]byte // likeSegments: literal runs between % signs
	anchorL bool     // likeSegments: the pattern does not start with %
	anchorR bool     // likeSegments: the pattern does not end with %
}

func newLikeMatcher(pattern string) *likeMatcher {
	m := &likeMatcher{pattern: []byte(pattern)}
	if strings.IndexByte(pattern, '_') >= 0 {
		m.kind = likeGeneral
		return m
	}
	if strings.IndexByte(pattern, '%') < 0 {
		m.kind, m.lit = likeExact, []byte(pattern)
		return m
	}
	parts := strings.Split(pattern, "%")
	var segs [][]byte
	for _, p := range parts {
		if p != "" {
			segs = append(segs, []byte(p))
		}
	}
	startsPct := strings.HasPrefix(pattern, "%")
	endsPct := strings.HasSuffix(pattern, "%")
	switch {
	case len(segs) == 0:
		m.kind = likeAny
	case len(segs) == 1 && startsPct && endsPct:
		m.kind, m.lit = likeContains, segs[0]
	case len(segs) == 1 && endsPct:
		m.kind, m.lit = likePrefix, segs[0]
	case len(segs) == 1 && startsPct:
		m.kind, m.lit = likeSuffix, segs[0]
	default:
		m.kind, m.segs, m.anchorL, m.anchorR = likeSegments, segs, !startsPct, !endsPct
	}
	return m
}

// match reports whether s matches the pattern.
func (m *likeMatcher) match(s []byte) bool {
	switch m.kind {
	case likeExact:
		return bytes.Equal(s, m.lit)
	case likePrefix:
		return bytes.HasPrefix(s, m.lit)
	case likeSuffix:
		return bytes.HasSuffix(s, m.lit)
	case likeContains:
		return bytes.Contains(s, m.lit)
	case likeAny:
		return true
	case likeSegments:
		segs := m.segs
		if m.anchorL {
			if !bytes.HasPrefix(s, segs[0]) {
				return false
			}
			s = s[len(segs[0]):]
			segs = segs[1:]
		}
		var last []byte
		if m.anchorR {
			last = segs[len(segs)-1]
			segs = segs[:len(segs)-1]
		}
		for _, seg := range segs {
			i := bytes.Index(s, seg)
			if i < 0 {
				return false
			}
			s = s[i+len(seg):]
		}
		return last == nil || (len(s) >= len(last) && bytes.HasSuffix(s, last))
	}
	return likeMatch(s, m.pattern)
}

// likeMatch is the general matcher: % matches any run, _ one character. It
// backtracks only to the most recent %, so it runs in O(len(s)·len(p)).
func likeMatch(s, p []byte) bool {
	si, pi := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(p) {
			switch c := p[pi]; {
			case c == '%':
				starP, starS = pi, si
				pi++
				continue
			case c == '_':
				_, w := utf8.DecodeRune(s[si:])
				si += w
				pi++
				continue
			case c == s[si]:
				si++
				pi++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		_, w := utf8.DecodeRune(s[starS:])
		starS += w
		si, pi = starS, starP+1
	}
	for pi < len(p) && p[pi] == '%' {
		pi++
	}
	return pi == len(p)
}

// like is x [NOT] LIKE|ILIKE pattern.
type like struct {
	x       Expr
	pat     Expr         // the pattern expression (a *Const when m is set)
	m       *likeMatcher // compiled constant pattern, nil otherwise
	not, ci bool
}

func (l *like) Type() vec.Type   { return vec.Bool }
func (l *like) children() []Expr { return []Expr{l.x, l.pat} }
func (l *like) setChild(i int, e Expr) {
	if i == 0 {
		l.x = e
	} else {
		l.pat = e
	}
}
func (l *like) String() string {
	op := " LIKE "
	if l.ci {
		op = " ILIKE "
	}
	if l.not {
		op = " NOT" + op
	}
	return "(" + l.x.String() + op + l.pat.String() + ")"
}

// foldCase lower-cases s into buf (ASCII fast path) and returns it.
func foldCase(buf, s []byte) []byte {
	buf = buf[:0]
	if isASCII(s) {
		for _, c := range s {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf = append(buf, c)
		}
		return buf
	}
	return append(buf, bytes.ToLower(s)...)
}

func (l *like) Eval(b *vec.Batch) (*vec.Vector, error) {
	xv, err := l.x.Eval(b)
	if err != nil {
		return nil, err
	}
	n := b.Len
	out := &vec.Vector{Type: vec.Bool, Len: n, I64: make([]int64, n)}
	o := out.I64
	want := int64(1)
	if l.not {
		want = 0
	}
	if l.m != nil && !l.ci {
		offs, data, m := xv.Offsets[:n+1], xv.Bytes, l.m
		switch m.kind {
		case likeContains:
			lit := m.lit
			for i := range o {
				o[i] = b2i(bytes.Contains(data[offs[i]:offs[i+1]], lit)) ^ 1 ^ want
			}
		case likePrefix:
			lit := m.lit
			for i := range o {
				o[i] = b2i(bytes.HasPrefix(data[offs[i]:offs[i+1]], lit)) ^ 1 ^ want
			}
		default:
			for i := range o {
				o[i] = b2i(m.match(data[offs[i]:offs[i+1]])) ^ 1 ^ want
			}
		}
		out.Valid = cloneValid(xv.Valid, n)
	} else {
		var pv *vec.Vector
		if l.m == nil {
			if pv, err = l.pat.Eval(b); err != nil {
				return nil, err
			}
		}
		var buf, pbuf []byte
		for i := range o {
			s := xv.Str(i)
			if l.ci {
				buf = foldCase(buf, s)
				s = buf
			}
			var hit bool
			if l.m != nil {
				hit = l.m.match(s)
			} else {
				p := pv.Str(i)
				if l.ci {
					pbuf = foldCase(pbuf, p)
					p = pbuf
				}
				hit = likeMatch(s, p)
			}
			o[i] = b2i(hit) ^ 1 ^ want
		}
		if pv != nil {
			out.Valid = mergeValid(xv.Valid, pv.Valid, n)
		} else {
			out.Valid = cloneValid(xv.Valid, n)
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
