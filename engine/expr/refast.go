package expr

import "regexp/syntax"

// fastRE matches an anchored regular expression of a simple shape against
// ASCII text by backtracking over its syntax, as Go's regexp package's
// backtracker does over its compiled program, and with the same
// leftmost-first choice of submatches, but in a few steps per byte and
// without allocating: REGEXP_REPLACE(Referer,
// '^https?://(?:www\.)?([^/]+)/.*$', '\1') spent most of its time in
// regexp's backtracker and the submatch slice each call allocates.
//
// The shape: ^ first, then literals, character classes, . (with or
// without newlines), captures, alternations, ? over any of these, and
// *, + or a counted repeat over a single character (a one-byte literal, a
// class or a dot); $ (the end of the text) anywhere. Anything else, such
// as case folding, word boundaries, multi-line anchors or a repeat of a
// longer expression, is left to regexp (compileFastRE returns nil).
//
// Text with a byte of 128 or more is left to regexp too: it matches runes,
// not bytes. A match that takes more steps than a budget proportional to
// the text is abandoned and left to regexp, so that no pattern makes the
// backtracking exponential.
type fastRE struct {
	start *reNode
	ncap  int // capture groups, the whole match included
	nodes int
}

type reOp uint8

const (
	reMatch    reOp = iota // the expression matched
	reLit                  // the bytes lit
	reClass                // one byte of class
	reLoop                 // min to max (-1: any) bytes of class
	reAlt                  // the first of alts that leads to a match
	reCapStart             // records the start of capture cap
	reCapEnd               // records the end of capture cap
	reEnd                  // the end of the text
)

type reNode struct {
	op       reOp
	lit      []byte
	class    *[256]bool
	min, max int
	greedy   bool
	alts     []*reNode
	cap      int
	next     *reNode
}

// compileFastRE returns the fastRE of the pattern re (as parsed with
// syntax.Perl), or nil where its shape is not one fastRE matches.
func compileFastRE(re *syntax.Regexp) *fastRE {
	ncap := re.MaxCap() + 1 // as regexp counts them, before Simplify
	re = re.Simplify()
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	if len(subs) == 0 || subs[0].Op != syntax.OpBeginText {
		return nil
	}
	f := &fastRE{ncap: ncap}
	c := reCompiler{f: f}
	done := &reNode{op: reMatch}
	start, ok := c.seq(subs[1:], done)
	if !ok || c.nodes > 1000 {
		return nil
	}
	f.start, f.nodes = start, c.nodes+1
	return f
}

type reCompiler struct {
	f     *fastRE
	nodes int
}

// seq compiles subs in order, then next.
func (c *reCompiler) seq(subs []*syntax.Regexp, next *reNode) (*reNode, bool) {
	for i := len(subs) - 1; i >= 0; i-- {
		var ok bool
		if next, ok = c.one(subs[i], next); !ok {
			return nil, false
		}
	}
	return next, true
}

// one compiles re, then next.
func (c *reCompiler) one(re *syntax.Regexp, next *reNode) (*reNode, bool) {
	c.nodes++
	switch re.Op {
	case syntax.OpEmptyMatch:
		return next, true
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		lit := make([]byte, len(re.Rune))
		for i, r := range re.Rune {
			if r >= 128 {
				return nil, false
			}
			lit[i] = byte(r)
		}
		return &reNode{op: reLit, lit: lit, next: next}, true
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return &reNode{op: reClass, class: classOf(re), next: next}, true
	case syntax.OpEndText:
		return &reNode{op: reEnd, next: next}, true
	case syntax.OpCapture:
		end := &reNode{op: reCapEnd, cap: re.Cap, next: next}
		body, ok := c.one(re.Sub[0], end)
		if !ok {
			return nil, false
		}
		if re.Cap >= c.f.ncap {
			return nil, false
		}
		return &reNode{op: reCapStart, cap: re.Cap, next: body}, true
	case syntax.OpConcat:
		return c.seq(re.Sub, next)
	case syntax.OpAlternate:
		n := &reNode{op: reAlt, next: next}
		for _, sub := range re.Sub {
			alt, ok := c.one(sub, next)
			if !ok {
				return nil, false
			}
			n.alts = append(n.alts, alt)
		}
		return n, true
	case syntax.OpQuest, syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		greedy := re.Flags&syntax.NonGreedy == 0
		if class := singleByte(re.Sub[0]); class != nil {
			n := &reNode{op: reLoop, class: class, greedy: greedy, next: next}
			switch re.Op {
			case syntax.OpQuest:
				n.min, n.max = 0, 1
			case syntax.OpStar:
				n.min, n.max = 0, -1
			case syntax.OpPlus:
				n.min, n.max = 1, -1
			default:
				n.min, n.max = re.Min, re.Max
			}
			return n, true
		}
		if re.Op != syntax.OpQuest {
			return nil, false
		}
		// x? over a longer x: x, then next, or next alone (the other way
		// round when not greedy).
		body, ok := c.one(re.Sub[0], next)
		if !ok {
			return nil, false
		}
		alts := []*reNode{body, next}
		if !greedy {
			alts[0], alts[1] = next, body
		}
		return &reNode{op: reAlt, alts: alts, next: next}, true
	}
	return nil, false
}

// singleByte returns the bytes re matches when it matches exactly one
// byte of ASCII text, or nil.
func singleByte(re *syntax.Regexp) *[256]bool {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) != 1 || re.Rune[0] >= 128 || re.Flags&syntax.FoldCase != 0 {
			return nil
		}
		var c [256]bool
		c[re.Rune[0]] = true
		return &c
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return classOf(re)
	}
	return nil
}

// classOf returns the ASCII bytes a class or dot matches.
func classOf(re *syntax.Regexp) *[256]bool {
	var c [256]bool
	switch re.Op {
	case syntax.OpAnyChar:
		for b := range 128 {
			c[b] = true
		}
	case syntax.OpAnyCharNotNL:
		for b := range 128 {
			c[b] = b != '\n'
		}
	default:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && r < 128; r++ {
				c[r] = true
			}
		}
	}
	return &c
}

// match matches s, which must be ASCII, from its start. m, of 2*ncap
// ints at least, receives the submatches as regexp's FindSubmatchIndex
// gives them (-1 for a group that took no part). It returns m[:2*ncap],
// or nil and done where s does not match, or done false where the match
// took too many steps (the caller asks regexp).
func (f *fastRE) match(s []byte, m []int) (sub []int, done bool) {
	m = m[:2*f.ncap]
	for i := range m {
		m[i] = -1
	}
	r := reRun{s: s, m: m, budget: 64 + 8*f.nodes*(len(s)+1)}
	ok := r.run(f.start, 0)
	if r.budget < 0 {
		return nil, false
	}
	if !ok {
		return nil, true
	}
	m[0] = 0
	return m, true
}

type reRun struct {
	s      []byte
	m      []int
	budget int
}

// run reports whether the expression from n on matches s from pos on; m
// then holds the captures of the first way it does.
func (r *reRun) run(n *reNode, pos int) bool {
	s := r.s
	for {
		if r.budget--; r.budget < 0 {
			return false
		}
		switch n.op {
		case reMatch:
			r.m[1] = pos
			return true
		case reLit:
			if len(s)-pos < len(n.lit) || string(s[pos:pos+len(n.lit)]) != string(n.lit) {
				return false
			}
			pos += len(n.lit)
		case reClass:
			if pos >= len(s) || !n.class[s[pos]] {
				return false
			}
			pos++
		case reEnd:
			if pos != len(s) {
				return false
			}
		case reCapStart, reCapEnd:
			i := 2 * n.cap
			if n.op == reCapEnd {
				i++
			}
			old := r.m[i]
			r.m[i] = pos
			if r.run(n.next, pos) {
				return true
			}
			r.m[i] = old
			return false
		case reAlt:
			for _, a := range n.alts {
				if r.run(a, pos) {
					return true
				}
				if r.budget < 0 {
					return false
				}
			}
			return false
		case reLoop:
			k := 0 // the most bytes the loop can take
			for pos+k < len(s) && (n.max < 0 || k < n.max) && n.class[s[pos+k]] {
				k++
			}
			r.budget -= k / 8
			if k < n.min {
				return false
			}
			if n.greedy {
				for j := k; j >= n.min; j-- {
					if r.run(n.next, pos+j) {
						return true
					}
					if r.budget < 0 {
						return false
					}
				}
			} else {
				for j := n.min; j <= k; j++ {
					if r.run(n.next, pos+j) {
						return true
					}
					if r.budget < 0 {
						return false
					}
				}
			}
			return false
		}
		n = n.next
	}
}
