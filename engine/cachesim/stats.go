package cachesim

import (
	"fmt"
	"math"
	"strings"

	"cachebook/engine/units"
)

// LevelStats counts one cache level. Accesses at L1 are every line access;
// at L2 and L3 they are the demand misses of the level above.
type LevelStats struct {
	Accesses   int64
	Misses     int64
	Writebacks int64 // dirty lines evicted from this level
}

// Stats are the modelled counts of a Sim. Access and TLB counts are exact;
// cache counts are estimates scaled from the sampled sets (exact when every
// set is simulated), with the relative standard errors in RelErr.
type Stats struct {
	Loads, Stores int64 // accesses as issued
	Lines         int64 // line accesses (an access straddling two lines counts twice)
	L1, L2, L3    LevelStats
	// DRAMReads are demand line fills from memory (misses of the last
	// present level), the analogue of AMD's ls_dmnd_fills_from_sys.dram_io_*
	// counted per 64 B line; reads for ownership of stores are included.
	DRAMReads int64
	// DRAMWrites are dirty lines written back to memory.
	DRAMWrites int64
	// PrefetchReads are lines the prefetcher brought from memory;
	// PrefetchIssued counts every prefetch request.
	PrefetchReads, PrefetchIssued int64
	// TLB1Misses miss the L1 dTLB; TLBWalks miss both levels.
	TLB1Misses, TLBWalks int64
	// RelErr is the relative standard error of L1, L2 and L3 misses, DRAM
	// reads and DRAM writes from set sampling; zero without sampling.
	RelErr   ErrorEstimate
	Sampling Sampling
	LineSize int
}

// ErrorEstimate holds relative standard errors (0.01 is ±1%).
type ErrorEstimate struct {
	L1, L2, DRAMReads, DRAMWrites float64
}

// Max returns the largest of the errors.
func (e ErrorEstimate) Max() float64 {
	return max(e.L1, e.L2, e.DRAMReads, e.DRAMWrites)
}

// Mark is a snapshot of a Sim's raw counts, to count a phase (Since).
type Mark struct {
	raw rawStats
	res [][nResStat]int64
}

// Mark returns a snapshot of the counts so far.
func (s *Sim) Mark() Mark {
	return Mark{raw: s.raw, res: append([][nResStat]int64(nil), s.res...)}
}

// Stats returns the counts so far.
func (s *Sim) Stats() Stats { return s.stats(s.raw, s.res) }

// Since returns the counts since m, scaled (with sampling) by the phase's
// own ratio of line changes, not the whole run's.
func (s *Sim) Since(m Mark) Stats {
	r := s.raw
	o := m.raw
	d := rawStats{
		loads: r.loads - o.loads, stores: r.stores - o.stores, accesses: r.accesses - o.accesses,
		sampled: r.sampled - o.sampled, fresh: r.fresh - o.fresh,
		l1Miss: r.l1Miss - o.l1Miss, l2Acc: r.l2Acc - o.l2Acc, l2Miss: r.l2Miss - o.l2Miss,
		l3Acc: r.l3Acc - o.l3Acc, memReads: r.memReads - o.memReads,
		l1WB: r.l1WB - o.l1WB, l2WB: r.l2WB - o.l2WB, memWrites: r.memWrites - o.memWrites,
		pfIssued: r.pfIssued - o.pfIssued, pfFill: r.pfFill - o.pfFill,
		tlb1Miss: r.tlb1Miss - o.tlb1Miss, tlb2Miss: r.tlb2Miss - o.tlb2Miss, pages: r.pages - o.pages,
	}
	res := make([][nResStat]int64, len(s.res))
	for i := range res {
		for k := range res[i] {
			res[i][k] = s.res[i][k] - m.res[i][k]
		}
	}
	return s.stats(d, res)
}

func (s *Sim) stats(r rawStats, res [][nResStat]int64) Stats {
	// With sampling, a count is scaled by the ratio of all line changes
	// (an access to another line than the last one of its residue) to
	// those of the sampled sets: a ratio estimator, exact for a stream
	// whose every line falls in the sampled sets, unbiased to first order
	// for one spread evenly over them, and not misled by hits on a few hot
	// lines, which change line rarely.
	var sampledFresh int64
	for _, x := range res {
		sampledFresh += x[resAcc]
	}
	scale := func(n int64) int64 {
		if s.samp.Rate() == 1 || sampledFresh == 0 {
			return n
		}
		return int64(math.Round(float64(n) * float64(r.fresh) / float64(sampledFresh)))
	}
	st := Stats{
		Loads: r.loads, Stores: r.stores, Lines: r.accesses,
		L1:             LevelStats{Accesses: r.accesses, Misses: scale(r.l1Miss), Writebacks: scale(r.l1WB)},
		DRAMReads:      scale(r.memReads),
		DRAMWrites:     scale(r.memWrites),
		PrefetchReads:  r.pfFill,
		PrefetchIssued: r.pfIssued,
		TLB1Misses:     r.tlb1Miss,
		TLBWalks:       r.tlb2Miss,
		Sampling:       s.samp,
		LineSize:       s.geo.LineSize,
	}
	if s.l2.present {
		st.L2 = LevelStats{Accesses: scale(r.l2Acc), Misses: scale(r.l2Miss), Writebacks: scale(r.l2WB)}
	}
	if s.l3.present {
		st.L3 = LevelStats{Accesses: scale(r.l3Acc), Misses: scale(r.memReads), Writebacks: st.DRAMWrites}
	}
	if s.samp.Rate() < 1 {
		st.RelErr = ErrorEstimate{
			L1: s.relErr(res, r.fresh, resL1), L2: s.relErr(res, r.fresh, resL2),
			DRAMReads: s.relErr(res, r.fresh, resL3), DRAMWrites: s.relErr(res, r.fresh, resWB),
		}
	}
	return st
}

// relErr estimates the relative standard error of the ratio estimate of
// statistic k. The kept residues are a sample without replacement of n =
// Keep out of M = Mod set groups; with R = Σy/Σa over them (y the count, a
// the line changes of a group), the estimate R·A has variance about
// (A/ā)² (1 - n/M) s²/n, s² the variance of the residuals y - R·a. With no
// access in the sampled sets nothing can be estimated: the error is
// infinite.
func (s *Sim) relErr(res [][nResStat]int64, fresh int64, k int) float64 {
	n := len(res)
	var sy, sa float64
	for _, r := range res {
		sy += float64(r[k])
		sa += float64(r[resAcc])
	}
	if sa == 0 && fresh > 0 || n < 2 {
		return math.Inf(1)
	}
	if sy == 0 {
		return 0
	}
	ratio := sy / sa
	var ss float64
	for _, r := range res {
		d := float64(r[k]) - ratio*float64(r[resAcc])
		ss += d * d
	}
	s2 := ss / float64(n-1)
	m := float64(s.samp.Mod)
	abar := sa / float64(n)
	total := ratio * float64(fresh)
	a := float64(fresh)
	v := (a / abar) * (a / abar) * (1 - float64(n)/m) * s2 / float64(n)
	return math.Sqrt(v) / total
}

// Sub returns the counts of st since the earlier snapshot o (for a phase of
// a run). The errors are those of st.
func (st Stats) Sub(o Stats) Stats {
	d := st
	d.Loads -= o.Loads
	d.Stores -= o.Stores
	d.Lines -= o.Lines
	sub := func(a, b LevelStats) LevelStats {
		return LevelStats{a.Accesses - b.Accesses, a.Misses - b.Misses, a.Writebacks - b.Writebacks}
	}
	d.L1, d.L2, d.L3 = sub(st.L1, o.L1), sub(st.L2, o.L2), sub(st.L3, o.L3)
	d.DRAMReads -= o.DRAMReads
	d.DRAMWrites -= o.DRAMWrites
	d.PrefetchReads -= o.PrefetchReads
	d.PrefetchIssued -= o.PrefetchIssued
	d.TLB1Misses -= o.TLB1Misses
	d.TLBWalks -= o.TLBWalks
	return d
}

// Add returns the sum of two runs' counts (for workers of one query). The
// errors are the larger of the two.
func (st Stats) Add(o Stats) Stats {
	d := st
	d.Loads += o.Loads
	d.Stores += o.Stores
	d.Lines += o.Lines
	add := func(a, b LevelStats) LevelStats {
		return LevelStats{a.Accesses + b.Accesses, a.Misses + b.Misses, a.Writebacks + b.Writebacks}
	}
	d.L1, d.L2, d.L3 = add(st.L1, o.L1), add(st.L2, o.L2), add(st.L3, o.L3)
	d.DRAMReads += o.DRAMReads
	d.DRAMWrites += o.DRAMWrites
	d.PrefetchReads += o.PrefetchReads
	d.PrefetchIssued += o.PrefetchIssued
	d.TLB1Misses += o.TLB1Misses
	d.TLBWalks += o.TLBWalks
	d.RelErr = ErrorEstimate{max(st.RelErr.L1, o.RelErr.L1), max(st.RelErr.L2, o.RelErr.L2),
		max(st.RelErr.DRAMReads, o.RelErr.DRAMReads), max(st.RelErr.DRAMWrites, o.RelErr.DRAMWrites)}
	if d.LineSize == 0 {
		d.LineSize, d.Sampling = o.LineSize, o.Sampling
	}
	return d
}

// DRAMBytes returns the modelled memory traffic in bytes: demand and
// prefetch reads plus write-backs.
func (st Stats) DRAMBytes() (read, written int64) {
	ls := int64(st.LineSize)
	return (st.DRAMReads + st.PrefetchReads) * ls, st.DRAMWrites * ls
}

// Format renders the counts as a small table, per row when rows > 0. Every
// line says that the figures are modelled.
func (st Stats) Format(g Geometry, rows int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "modelled counters (cachesim, not measured): %s\n", g)
	fmt.Fprintf(&b, "modelled sampling: %s", st.Sampling)
	if st.Sampling.Rate() < 1 {
		fmt.Fprintf(&b, "; standard error ±%.1f%% (L1), ±%.1f%% (L2), ±%.1f%% (DRAM reads)", 100*st.RelErr.L1, 100*st.RelErr.L2, 100*st.RelErr.DRAMReads)
	}
	b.WriteString("\n")
	per := func(n int64) string {
		if rows <= 0 {
			return ""
		}
		return fmt.Sprintf("  %.3f/row", float64(n)/float64(rows))
	}
	line := func(name string, n int64) {
		fmt.Fprintf(&b, "  %-28s %14d%s\n", name, n, per(n))
	}
	line("accesses (lines)", st.Lines)
	line("L1d misses", st.L1.Misses)
	if g.L2.Size > 0 {
		line("L2 misses", st.L2.Misses)
	}
	if g.L3.Size > 0 {
		line("L3 misses", st.L3.Misses)
	}
	r, w := st.DRAMBytes()
	line("DRAM lines read (demand)", st.DRAMReads)
	if g.Prefetch != PrefetchOff {
		line("DRAM lines read (prefetch)", st.PrefetchReads)
	}
	line("DRAM lines written", st.DRAMWrites)
	fmt.Fprintf(&b, "  %-28s %14s\n", "DRAM bytes read/written", units.HumanBytes(r)+" / "+units.HumanBytes(w))
	line("dTLB L1 misses", st.TLB1Misses)
	line("dTLB page walks", st.TLBWalks)
	return b.String()
}
