package agg

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"

	"cachebook/engine/vec"
)

// Kind is an aggregate function.
type Kind uint8

// The aggregate functions.
const (
	CountStar     Kind = iota // count(*)
	Count                     // count(x): non-NULL values
	Sum                       // sum(x): NULL when no non-NULL value
	Avg                       // avg(x), a DOUBLE
	Min                       // min(x)
	Max                       // max(x)
	CountDistinct             // count(DISTINCT x)
)

var kindNames = [...]string{"count_star", "count", "sum", "avg", "min", "max", "count_distinct"}

func (k Kind) String() string { return kindNames[k] }

// Spec is one aggregate of a GROUP BY: its function and input type.
type Spec struct {
	Kind Kind
	In   vec.Type // input type; ignored for CountStar
	// Distinct folds each distinct value of a group once: sum(DISTINCT x)
	// and avg(DISTINCT x). (count(DISTINCT x) is its own Kind; MIN and MAX
	// are unaffected.)
	Distinct bool
}

// OutType returns the result type of the aggregate, as DuckDB types it
// (except that integer SUM is BIGINT here, not HUGEINT).
func (s Spec) OutType() vec.Type {
	switch s.Kind {
	case CountStar, Count, CountDistinct:
		return vec.Int64
	case Avg:
		return vec.Float64
	case Sum:
		if s.In.IsFloat() {
			return vec.Float64
		}
		return vec.Int64
	default:
		return s.In
	}
}

// HasInput reports whether the aggregate reads an input column.
func (s Spec) HasInput() bool { return s.Kind != CountStar }

// State holds one aggregate's running state for every group of a table,
// in flat arrays indexed by group id.
type State struct {
	spec    Spec
	cnt     []int64
	lo      []uint64 // integer SUM/AVG: low words of a 128-bit sum
	hi      []int64  // integer SUM/AVG: high words
	i64     []int64  // MIN/MAX of integer-like input
	f64     []float64
	strs    [][]byte
	set     *Table   // DISTINCT: the set of (group, value) pairs seen
	pset    *pairSet // DISTINCT over integers: the pairs, without a Table
	hasher  *Hasher
	pairs   []uint32
	ph      []uint64
	gvec    *vec.Vector
	newGids []uint32 // sum/avg(DISTINCT): the groups of the rows first seen
	budget  *Budget
	charged int64 // bytes charged to budget by Resize
}

// NewState returns an empty state for spec.
func NewState(spec Spec, hasher *Hasher, budget *Budget) (*State, error) {
	s := &State{spec: spec, hasher: hasher, budget: budget}
	if spec.Kind == CountDistinct || spec.Distinct && (spec.Kind == Sum || spec.Kind == Avg) {
		if intLike(spec.In) {
			p, err := newPairSet(budget)
			if err != nil {
				return nil, err
			}
			s.pset = p
			return s, nil
		}
		t, err := NewTable([]vec.Type{vec.Int64, spec.In}, 0, budget)
		if err != nil {
			return nil, err
		}
		s.set = t
		s.gvec = vec.NewVector(vec.Int64, 0)
	}
	return s, nil
}

// release returns what the state charged to its budget, once it is done
// with (Finalize copies what it returns).
func (s *State) release() {
	s.budget.Grow(-s.charged)
	s.charged = 0
	if s.set != nil {
		s.set.release()
	}
	if s.pset != nil {
		s.pset.release()
	}
}

// Resize makes room for n groups.
func (s *State) Resize(n int) error {
	old := len(s.cnt)
	if n <= old {
		return nil
	}
	grow := func(c int) int {
		if c >= n {
			return c
		}
		c2 := 2 * c
		if c2 < n {
			c2 = n
		}
		return c2
	}
	newCap := grow(cap(s.cnt))
	if newCap > cap(s.cnt) {
		b := int64(newCap-cap(s.cnt)) * s.bytesPerGroup()
		if err := s.budget.Grow(b); err != nil {
			return fmt.Errorf("%s state for %d groups: %w", s.spec.Kind, n, err)
		}
		s.charged += b
	}
	s.cnt = extend(s.cnt, n, newCap)
	switch s.spec.Kind {
	case Sum, Avg:
		if s.spec.In.IsFloat() {
			s.f64 = extend(s.f64, n, newCap)
		} else {
			s.lo = extend(s.lo, n, newCap)
			s.hi = extend(s.hi, n, newCap)
		}
	case Min, Max:
		switch s.spec.In {
		case vec.Float64, vec.Float32:
			s.f64 = extend(s.f64, n, newCap)
		case vec.String:
			for len(s.strs) < n {
				s.strs = append(s.strs, nil)
			}
		default:
			s.i64 = extend(s.i64, n, newCap)
		}
	}
	return nil
}

func (s *State) bytesPerGroup() int64 {
	switch s.spec.Kind {
	case Sum, Avg:
		return 24
	case Min, Max:
		return 32
	}
	return 8
}

// extend returns a with length n and capacity at least c, keeping its
// contents; new entries are zero. Only they are zeroed: a new array's
// room beyond n is left as the memory was (growNoZero).
func extend[T int64 | uint64 | float64](a []T, n, c int) []T {
	if c > cap(a) {
		a = growNoZero(a, c-len(a))
	}
	old := len(a)
	a = a[:n]
	clear(a[old:])
	return a
}

// Update folds n input rows into the groups given by gids. in is nil for
// count(*).
func (s *State) Update(gids []uint32, in *vec.Vector, n int) error {
	gids = gids[:n]
	cnt := s.cnt
	if s.spec.Kind == CountStar {
		for _, g := range gids {
			cnt[g]++
		}
		return nil
	}
	if s.spec.Kind == CountDistinct {
		return s.updateDistinct(gids, in, n)
	}
	if s.set != nil || s.pset != nil {
		var err error
		if gids, in, err = s.firstSeen(gids, in, n); err != nil {
			return err
		}
	}
	valid := in.Valid
	switch s.spec.Kind {
	case Count:
		for i, g := range gids {
			if valid == nil || valid[i] {
				cnt[g]++
			}
		}
	case Sum, Avg:
		if in.Type.IsFloat() {
			f := s.f64
			for i, g := range gids {
				if valid == nil || valid[i] {
					f[g] += in.F64[i]
					cnt[g]++
				}
			}
			return nil
		}
		lo, hi := s.lo, s.hi
		for i, g := range gids {
			if valid == nil || valid[i] {
				v := in.I64[i]
				var c uint64
				lo[g], c = bits.Add64(lo[g], uint64(v), 0)
				hi[g] += int64(c) + (v >> 63)
				cnt[g]++
			}
		}
	case Min, Max:
		isMin := s.spec.Kind == Min
		switch in.Type {
		case vec.Float64, vec.Float32:
			f := s.f64
			for i, g := range gids {
				if valid != nil && !valid[i] {
					continue
				}
				v := in.F64[i]
				if c := vec.CompareFloat(v, f[g]); cnt[g] == 0 || (isMin && c < 0) || (!isMin && c > 0) {
					f[g] = v
				}
				cnt[g]++
			}
		case vec.String:
			for i, g := range gids {
				if valid != nil && !valid[i] {
					continue
				}
				v := in.Str(i)
				if cnt[g] == 0 {
					s.strs[g] = append(s.strs[g][:0], v...)
				} else if c := bytes.Compare(v, s.strs[g]); (isMin && c < 0) || (!isMin && c > 0) {
					s.strs[g] = append(s.strs[g][:0], v...)
				}
				cnt[g]++
			}
		case vec.UInt64:
			m := s.i64
			for i, g := range gids {
				if valid != nil && !valid[i] {
					continue
				}
				v := uint64(in.I64[i])
				if cnt[g] == 0 || (isMin && v < uint64(m[g])) || (!isMin && v > uint64(m[g])) {
					m[g] = int64(v)
				}
				cnt[g]++
			}
		default:
			m := s.i64
			for i, g := range gids {
				if valid != nil && !valid[i] {
					continue
				}
				v := in.I64[i]
				if cnt[g] == 0 || (isMin && v < m[g]) || (!isMin && v > m[g]) {
					m[g] = v
				}
				cnt[g]++
			}
		}
	}
	return nil
}

func (s *State) updateDistinct(gids []uint32, in *vec.Vector, n int) error {
	if s.pset != nil {
		cnt := s.cnt
		return s.addPairs(gids, in, n, func(_ int, g uint32) { cnt[g]++ })
	}
	next, err := s.groupPairs(gids, in, n)
	if err != nil {
		return err
	}
	for i, p := range s.pairs[:n] {
		if p == next {
			next++
			if !in.IsNull(i) {
				s.cnt[gids[i]]++
			}
		}
	}
	return nil
}

// firstSeen returns the rows of in whose (group, value) pair the state has
// not seen before, with their groups, for sum(DISTINCT x) and avg(DISTINCT x).
func (s *State) firstSeen(gids []uint32, in *vec.Vector, n int) ([]uint32, *vec.Vector, error) {
	if s.pset != nil {
		var sel []int32
		newGids := s.newGids[:0]
		err := s.addPairs(gids, in, n, func(i int, g uint32) {
			sel = append(sel, int32(i))
			newGids = append(newGids, g)
		})
		s.newGids = newGids
		if err != nil {
			return nil, nil, err
		}
		return newGids, in.Gather(sel), nil
	}
	next, err := s.groupPairs(gids, in, n)
	if err != nil {
		return nil, nil, err
	}
	var sel []int32
	newGids := s.newGids[:0]
	for i, p := range s.pairs[:n] {
		if p == next {
			next++
			sel = append(sel, int32(i))
			newGids = append(newGids, gids[i])
		}
	}
	s.newGids = newGids
	return newGids, in.Gather(sel), nil
}

// groupPairs adds the (group, value) pairs of n rows to the state's set of
// pairs seen, leaving each row's pair id in s.pairs, and returns the id the
// first pair new in this batch got: a row whose id equals the running next
// id is the first of its pair.
func (s *State) groupPairs(gids []uint32, in *vec.Vector, n int) (uint32, error) {
	gv := s.gvec
	gv.I64 = gv.I64[:0]
	for _, g := range gids {
		gv.I64 = append(gv.I64, int64(g))
	}
	gv.Len = n
	if cap(s.ph) < n {
		s.ph = make([]uint64, n)
		s.pairs = make([]uint32, n)
	}
	keys := []*vec.Vector{gv, in}
	s.hasher.Hash(keys, n, s.ph)
	before := s.set.Len()
	if err := s.set.Group(keys, s.ph, n, s.pairs); err != nil {
		name := s.spec.Kind.String()
		if s.spec.Kind == CountDistinct {
			name = "count"
		}
		return 0, fmt.Errorf("%s(DISTINCT): %w", name, err)
	}
	return uint32(before), nil
}

// Finalize returns the aggregate's value for groups 0..n-1.
func (s *State) Finalize(n int) (*vec.Vector, error) { return s.finalizeRange(0, n) }

// finalizeRange returns the aggregate's value for groups lo..hi-1, in
// arrays of its own.
func (s *State) finalizeRange(lo, hi int) (*vec.Vector, error) {
	n := hi - lo
	out := &vec.Vector{Type: s.spec.OutType(), Len: n}
	cnt := s.cnt[lo:hi]
	switch s.spec.Kind {
	case CountStar, Count, CountDistinct:
		out.I64 = append([]int64(nil), cnt...)
		return out, nil
	}
	var valid []bool
	for g, c := range cnt {
		if c == 0 {
			if valid == nil {
				valid = make([]bool, n)
				for i := range valid {
					valid[i] = true
				}
			}
			valid[g] = false
		}
	}
	out.Valid = valid
	switch s.spec.Kind {
	case Sum:
		if s.spec.In.IsFloat() {
			out.F64 = append([]float64(nil), s.f64[lo:hi]...)
			return out, nil
		}
		out.I64 = make([]int64, n)
		for g := range out.I64 {
			l, h := s.lo[lo+g], s.hi[lo+g]
			if (h != 0 || int64(l) < 0) && (h != -1 || int64(l) >= 0) {
				return nil, fmt.Errorf("integer overflow in sum: the total does not fit in BIGINT (a HUGEINT sum is not supported)")
			}
			out.I64[g] = int64(l)
		}
	case Avg:
		out.F64 = make([]float64, n)
		for g, c := range cnt {
			if c == 0 {
				continue
			}
			if s.spec.In.IsFloat() {
				out.F64[g] = s.f64[lo+g] / float64(c)
			} else {
				out.F64[g] = int128Float(s.hi[lo+g], s.lo[lo+g]) / float64(c)
			}
		}
	case Min, Max:
		switch s.spec.In {
		case vec.Float64, vec.Float32:
			out.F64 = append([]float64(nil), s.f64[lo:hi]...)
		case vec.String:
			out.Offsets = make([]uint32, 1, n+1)
			for _, b := range s.strs[lo:hi] {
				out.Bytes = append(out.Bytes, b...)
				out.Offsets = append(out.Offsets, uint32(len(out.Bytes)))
			}
		default:
			out.I64 = append([]int64(nil), s.i64[lo:hi]...)
		}
	}
	return out, nil
}

// int128Float converts a two's-complement 128-bit integer to float64.
func int128Float(hi int64, lo uint64) float64 {
	if (hi == 0 && int64(lo) >= 0) || (hi == -1 && int64(lo) < 0) {
		return float64(int64(lo))
	}
	if hi < 0 {
		// Negate, convert the magnitude, negate back.
		l, b := bits.Sub64(0, lo, 0)
		h := uint64(0) - uint64(hi) - b
		return -(float64(h)*math.Exp2(64) + float64(l))
	}
	return float64(hi)*math.Exp2(64) + float64(lo)
}
