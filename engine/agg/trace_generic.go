package agg

// Pieces the traced passes share: the state arrays a spec keeps and a
// traced []int64 grown as append and extend grow it.

// stateWords returns how many flat arrays of one word per group a state
// keeps (State.Resize): the count, plus two for an integer sum (128-bit),
// one for a float sum or a min/max.
func stateWords(s Spec) int {
	switch s.Kind {
	case Sum, Avg:
		if s.In.IsFloat() {
			return 2
		}
		return 3
	case Min, Max:
		return 2
	}
	return 1
}

// tracedSlice is a []int64 grown by append (keys) or by extend (states).
type tracedSlice struct {
	buf      int
	len, cap int64
}

func (s *tracedSlice) appendOne(tr *traceBuf, w int) {
	if s.len == s.cap {
		c := growCap(s.cap, s.len+1, 8)
		nb := tr.Alloc(w, c*8, false, false)
		if s.len > 0 {
			tr.Range(w, s.buf, 0, s.len*8, false)
			tr.Range(w, nb, 0, s.len*8, true)
		}
		s.buf, s.cap = nb, c
	}
	tr.Access(w, s.buf, s.len*8, 8, true)
	s.len++
}

// extendTo is extend(a, n, c): copy into a new array of capacity c when
// it does not fit, then zero the new entries.
func (s *tracedSlice) extendTo(tr *traceBuf, w int, n, c int64) {
	if c > s.cap {
		nb := tr.Alloc(w, c*8, false, true)
		if s.len > 0 {
			tr.Range(w, s.buf, 0, s.len*8, false)
			tr.Range(w, nb, 0, s.len*8, true)
		}
		s.buf, s.cap = nb, c
	}
	if n > s.len {
		tr.Range(w, s.buf, s.len*8, (n-s.len)*8, true)
		s.len = n
	}
}
