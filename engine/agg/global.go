package agg

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"sync"

	"cachebook/engine/vec"
)

// global is an aggregate without keys: one group, even over empty input.
// With cfg.Threads above one, each worker folds its morsels into states of its own,
// and Finalize merges them into worker 0's, as DuckDB's ungrouped
// aggregate does: the workers share nothing while they sink.
type global struct {
	cfg     Config
	specs   []Spec
	workers []globalWorker
	aggs    []*vec.Vector
	mu      sync.Mutex // guards done: Next runs on every worker
	done    bool
}

// globalWorker is one worker's partial states and its buffer of group ids
// (all zero: the one group).
type globalWorker struct {
	states []*State
	gids   []uint32
}

// GlobalWorkers returns the workers an aggregate without keys of specs
// runs on with threads threads: all of them, as every aggregate's states
// merge (a DISTINCT one's set of the values seen is folded into the
// first worker's as input).
func GlobalWorkers(specs []Spec, threads int) int {
	return max(threads, 1)
}

func newGlobal(specs []Spec, cfg Config) (*global, error) {
	g := &global{cfg: cfg, specs: specs}
	g.workers = make([]globalWorker, GlobalWorkers(specs, cfg.Threads))
	for w := range g.workers {
		for _, sp := range specs {
			s, err := NewState(sp, cfg.Hasher, cfg.Budget)
			if err != nil {
				g.Close()
				return nil, err
			}
			g.workers[w].states = append(g.workers[w].states, s)
			if err := s.Resize(1); err != nil {
				g.Close()
				return nil, err
			}
		}
	}
	return g, nil
}

func (g *global) Workers() int { return len(g.workers) }

func (g *global) Sink(w int, in Input) error {
	gw := &g.workers[w]
	for j, s := range gw.states {
		if s.updateOne(in.Args[j], in.N) {
			continue
		}
		if cap(gw.gids) < in.N {
			gw.gids = make([]uint32, in.N)
		}
		if err := s.Update(gw.gids[:in.N], in.Args[j], in.N); err != nil {
			return err
		}
	}
	return nil
}

func (g *global) Flush(int) error { return nil }

// Finalize merges the other workers' states into worker 0's and computes
// the aggregates.
func (g *global) Finalize(context.Context) error {
	if len(g.workers) == 0 {
		return fmt.Errorf("aggregate: finalized after close")
	}
	zero := []uint32{0}
	for w := 1; w < len(g.workers); w++ {
		for j, s := range g.workers[w].states {
			dst := g.workers[0].states[j]
			var err error
			switch {
			case s.pset != nil:
				err = dst.mergePairs(s, zero)
			case s.set != nil:
				err = dst.mergeDistinct(s, zero)
			default:
				err = dst.Merge(zero, s.partial(1), 1)
			}
			if err != nil {
				return err
			}
			// The worker's set is done with: its memory serves the merge.
			s.release()
		}
	}
	for _, s := range g.workers[0].states {
		v, err := s.Finalize(1)
		if err != nil {
			return err
		}
		g.aggs = append(g.aggs, v)
	}
	g.Close()
	return nil
}

func (g *global) Next(context.Context, int) (Part, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return Part{}, false, nil
	}
	g.done = true
	p := Part{Aggs: g.aggs, Groups: 1}
	if err := p.charge(g.cfg.Budget, 0); err != nil {
		return Part{}, false, err
	}
	g.aggs = nil
	return p, true, nil
}

func (g *global) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Stats{SinkPhase: "aggregate", Groups: 1, Complete: g.aggs != nil || g.done}
}

// Close gives the states' memory back.
func (g *global) Close() {
	for _, gw := range g.workers {
		for _, s := range gw.states {
			s.release()
		}
	}
	g.workers = nil
}

// updateOne folds n rows of in into group 0 without group ids, keeping
// the running values in registers rather than in the state's arrays, for
// the aggregates that have such a loop; it reports whether it did.
// count(*) adds n: it reads no values.
func (s *State) updateOne(in *vec.Vector, n int) bool {
	if s.set != nil || s.pset != nil {
		return false
	}
	switch s.spec.Kind {
	case CountStar:
		s.cnt[0] += int64(n)
		return true
	case Count:
		s.cnt[0] += int64(n - nulls(in, n))
		return true
	case Sum, Avg:
		if in.Type.IsFloat() {
			f, cnt := s.f64[0], s.cnt[0]
			if valid := in.Valid; valid != nil {
				for i, v := range in.F64[:n] {
					if valid[i] {
						f += v
						cnt++
					}
				}
			} else {
				for _, v := range in.F64[:n] {
					f += v
				}
				cnt += int64(n)
			}
			s.f64[0], s.cnt[0] = f, cnt
			return true
		}
		lo, hi, cnt := s.lo[0], s.hi[0], s.cnt[0]
		if valid := in.Valid; valid != nil {
			for i, v := range in.I64[:n] {
				if valid[i] {
					var c uint64
					lo, c = bits.Add64(lo, uint64(v), 0)
					hi += int64(c) + (v >> 63)
					cnt++
				}
			}
		} else if narrow(in.Type) {
			lo, hi = addSumNarrow(lo, hi, in.I64[:n])
			cnt += int64(n)
		} else {
			lo, hi = addSum128(lo, hi, in.I64[:n])
			cnt += int64(n)
		}
		s.lo[0], s.hi[0], s.cnt[0] = lo, hi, cnt
		return true
	case Min, Max:
		switch in.Type {
		case vec.Float64, vec.Float32, vec.String, vec.UInt64:
			return false
		}
		vs, valid := in.I64[:n], in.Valid
		isMin := s.spec.Kind == Min
		// The running value starts at the extreme that any value
		// replaces; seen counts the values.
		m, seen := int64(math.MaxInt64), 0
		if !isMin {
			m = math.MinInt64
		}
		switch {
		case valid != nil:
			for i, v := range vs {
				if valid[i] {
					if isMin {
						m = min(m, v)
					} else {
						m = max(m, v)
					}
					seen++
				}
			}
		case isMin:
			for _, v := range vs {
				m = min(m, v)
			}
			seen = n
		default:
			for _, v := range vs {
				m = max(m, v)
			}
			seen = n
		}
		if seen == 0 {
			return true
		}
		if s.cnt[0] == 0 || (isMin && m < s.i64[0]) || (!isMin && m > s.i64[0]) {
			s.i64[0] = m
		}
		s.cnt[0] += int64(seen)
		return true
	}
	return false
}

// narrow reports whether every value of type t fits in 32 signed bits.
func narrow(t vec.Type) bool {
	return t == vec.Int16 || t == vec.Int32 || t == vec.Bool
}

// addSumNarrow is addSum128 for values that fit in 32 signed bits
// (SMALLINT, INTEGER): fewer than 2^31 of them sum exactly in an int64,
// so each takes one add rather than two.
func addSumNarrow(lo uint64, hi int64, vs []int64) (uint64, int64) {
	for len(vs) > 0 {
		block := vs[:min(len(vs), 1<<30)]
		vs = vs[len(block):]
		var s0, s1, s2, s3 int64
		i := 0
		for ; i+4 <= len(block); i += 4 {
			v := block[i : i+4 : i+4]
			s0 += v[0]
			s1 += v[1]
			s2 += v[2]
			s3 += v[3]
		}
		for _, v := range block[i:] {
			s0 += v
		}
		sum := s0 + s1 + s2 + s3
		var c uint64
		lo, c = bits.Add64(lo, uint64(sum), 0)
		hi += int64(c) + sum>>63
	}
	return lo, hi
}

// addSum128 adds the sum of vs to the 128-bit (lo, hi). It sums the low
// 32 bits of the values unsigned and the high 32 bits signed, in four
// independent pairs of 64-bit registers, then carries once: the two sums
// cannot overflow for fewer than 2^31 values, and the loop has none of the
// add-with-carry chain a 128-bit add per value makes.
func addSum128(lo uint64, hi int64, vs []int64) (uint64, int64) {
	for len(vs) > 0 {
		block := vs[:min(len(vs), 1<<30)]
		vs = vs[len(block):]
		var l0, l1, l2, l3 uint64
		var h0, h1, h2, h3 int64
		i := 0
		for ; i+4 <= len(block); i += 4 {
			v := block[i : i+4 : i+4]
			l0 += uint64(uint32(v[0]))
			h0 += v[0] >> 32
			l1 += uint64(uint32(v[1]))
			h1 += v[1] >> 32
			l2 += uint64(uint32(v[2]))
			h2 += v[2] >> 32
			l3 += uint64(uint32(v[3]))
			h3 += v[3] >> 32
		}
		for _, v := range block[i:] {
			l0 += uint64(uint32(v))
			h0 += v >> 32
		}
		// The block's sum is h<<32 + l, h signed and l unsigned.
		l, h := l0+l1+l2+l3, h0+h1+h2+h3
		var c uint64
		lo, c = bits.Add64(lo, uint64(h)<<32, 0)
		hi += int64(c) + h>>32
		lo, c = bits.Add64(lo, l, 0)
		hi += int64(c)
	}
	return lo, hi
}

// nulls counts the NULLs among in's first n values.
func nulls(in *vec.Vector, n int) int {
	if in.Valid == nil {
		return 0
	}
	k := 0
	for _, ok := range in.Valid[:n] {
		if !ok {
			k++
		}
	}
	return k
}
