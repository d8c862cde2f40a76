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

// Stats are the modelled counts of a Sim. Access counts are exact; TLB
// counts are exact unless time sampling scales them; cache counts are
// estimates scaled from the sampled sets and windows (exact when every
// set and access is simulated), with the relative standard errors in
// RelErr.
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
	// L1LoadMisses and DRAMLoadReads are the L1 misses and DRAM fills of
	// loads alone (the rest are stores' reads for ownership): what counters
	// such as L1-dcache-load-misses and Intel's MEM_LOAD_RETIRED.L3_MISS
	// count.
	L1LoadMisses, DRAMLoadReads int64
	// PrefetchReads are lines the prefetcher brought from memory;
	// PrefetchIssued counts every prefetch request.
	PrefetchReads, PrefetchIssued int64
	// TLB1Misses miss the L1 dTLB; TLBWalks miss both levels.
	TLB1Misses, TLBWalks int64
	// RelErr is the relative standard error of L1, L2 and L3 misses, DRAM
	// reads and DRAM writes from sampling (zero without): SetErr from set
	// sampling and TimeErr from time sampling combined (root of the sum of
	// squares). Time sampling scales the TLB and prefetch counts too,
	// whose error is not estimated.
	RelErr, SetErr, TimeErr ErrorEstimate
	Sampling                Sampling
	LineSize                int
}

// ErrorEstimate holds relative standard errors (0.01 is ±1%).
type ErrorEstimate struct {
	L1, L2, DRAMReads, DRAMWrites float64
}

// Max returns the largest of the errors.
func (e ErrorEstimate) Max() float64 {
	return max(e.L1, e.L2, e.DRAMReads, e.DRAMWrites)
}

func (e ErrorEstimate) larger(o ErrorEstimate) ErrorEstimate {
	return ErrorEstimate{max(e.L1, o.L1), max(e.L2, o.L2), max(e.DRAMReads, o.DRAMReads), max(e.DRAMWrites, o.DRAMWrites)}
}

// Mark is a snapshot of a Sim's raw counts, to count a phase (Since).
type Mark struct {
	raw rawStats
	res [][nResStat]int64
	ex  exactStats
	win winSums
}

// counted returns the counts that stand: between time-sampling windows,
// those of the last window (the warming's are discarded).
func (s *Sim) counted() (rawStats, [][nResStat]int64) {
	if s.state != winCount {
		return s.saved, s.savedRes
	}
	return s.raw, s.res
}

// Mark returns a snapshot of the counts so far.
func (s *Sim) Mark() Mark {
	r, res := s.counted()
	return Mark{raw: r, res: append([][nResStat]int64(nil), res...), ex: s.ex, win: s.win}
}

// Stats returns the counts so far.
func (s *Sim) Stats() Stats {
	r, res := s.counted()
	return s.stats(r, res, s.ex, s.openWindows(s.win))
}

// openWindows returns ws with the open counted window added, if any.
func (s *Sim) openWindows(ws winSums) winSums {
	if s.samp.Every <= 1 || s.state != winCount || s.raw.accesses == s.winStart.accesses {
		return ws
	}
	x := float64(s.raw.accesses - s.winStart.accesses)
	ws.n++
	ws.x += x
	ws.xx += x * x
	for k, y := range s.windowCounts() {
		ws.y[k] += y
		ws.yy[k] += y * y
		ws.xy[k] += x * y
	}
	return ws
}

// Since returns the counts since m, scaled (with sampling) by the phase's
// own ratio of line changes, not the whole run's.
func (s *Sim) Since(m Mark) Stats {
	r, cres := s.counted()
	o := m.raw
	d := rawStats{
		accesses: r.accesses - o.accesses,
		sampled:  r.sampled - o.sampled, fresh: r.fresh - o.fresh,
		l1Miss: r.l1Miss - o.l1Miss, l2Acc: r.l2Acc - o.l2Acc, l2Miss: r.l2Miss - o.l2Miss,
		l3Acc: r.l3Acc - o.l3Acc, memReads: r.memReads - o.memReads,
		l1LoadMiss: r.l1LoadMiss - o.l1LoadMiss, memLoadReads: r.memLoadReads - o.memLoadReads,
		l1WB: r.l1WB - o.l1WB, l2WB: r.l2WB - o.l2WB, memWrites: r.memWrites - o.memWrites,
		pfIssued: r.pfIssued - o.pfIssued, pfFill: r.pfFill - o.pfFill,
		tlb1Miss: r.tlb1Miss - o.tlb1Miss, tlb2Miss: r.tlb2Miss - o.tlb2Miss, pages: r.pages - o.pages,
	}
	res := make([][nResStat]int64, len(cres))
	for i := range res {
		for k := range res[i] {
			res[i][k] = cres[i][k] - m.res[i][k]
		}
	}
	ex := exactStats{loads: s.ex.loads - m.ex.loads, stores: s.ex.stores - m.ex.stores, extra: s.ex.extra - m.ex.extra}
	ws := s.openWindows(s.win)
	ws.n -= m.win.n
	ws.x -= m.win.x
	ws.xx -= m.win.xx
	for k := range ws.y {
		ws.y[k] -= m.win.y[k]
		ws.yy[k] -= m.win.yy[k]
		ws.xy[k] -= m.win.xy[k]
	}
	return s.stats(d, res, ex, ws)
}

func (s *Sim) stats(r rawStats, res [][nResStat]int64, ex exactStats, ws winSums) Stats {
	// With sampling, a count is scaled by the ratio of all line changes
	// (an access to another line than the last one of its residue) to
	// those of the sampled sets: a ratio estimator, exact for a stream
	// whose every line falls in the sampled sets, unbiased to first order
	// for one spread evenly over them, and not misled by hits on a few hot
	// lines, which change line rarely. With time sampling it is scaled
	// again by all line accesses over the counted ones.
	var sampledFresh int64
	for _, x := range res {
		sampledFresh += x[resAcc]
	}
	setScale := 1.0
	if s.samp.Rate() < 1 && sampledFresh > 0 {
		setScale = float64(r.fresh) / float64(sampledFresh)
	}
	lines := ex.lines()
	timeScale := 1.0
	if r.accesses > 0 && r.accesses < lines {
		timeScale = float64(lines) / float64(r.accesses)
	}
	scaleBy := func(n int64, f float64) int64 {
		if f == 1 {
			return n
		}
		return int64(math.Round(float64(n) * f))
	}
	scale := func(n int64) int64 { return scaleBy(n, setScale*timeScale) }
	st := Stats{
		Loads: ex.loads, Stores: ex.stores, Lines: lines,
		L1:             LevelStats{Accesses: lines, Misses: scale(r.l1Miss), Writebacks: scale(r.l1WB)},
		DRAMReads:      scale(r.memReads),
		DRAMWrites:     scale(r.memWrites),
		L1LoadMisses:   scale(r.l1LoadMiss),
		DRAMLoadReads:  scale(r.memLoadReads),
		PrefetchReads:  scaleBy(r.pfFill, timeScale),
		PrefetchIssued: scaleBy(r.pfIssued, timeScale),
		TLB1Misses:     scaleBy(r.tlb1Miss, timeScale),
		TLBWalks:       scaleBy(r.tlb2Miss, timeScale),
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
		st.SetErr = ErrorEstimate{
			L1: s.relErr(res, r.fresh, resL1), L2: s.relErr(res, r.fresh, resL2),
			DRAMReads: s.relErr(res, r.fresh, resL3), DRAMWrites: s.relErr(res, r.fresh, resWB),
		}
	}
	if s.samp.TimeRate() < 1 {
		st.TimeErr = ErrorEstimate{
			L1: timeErr(ws, lines, resL1), L2: timeErr(ws, lines, resL2),
			DRAMReads: timeErr(ws, lines, resL3), DRAMWrites: timeErr(ws, lines, resWB),
		}
	}
	comb := func(a, b float64) float64 { return math.Sqrt(a*a + b*b) }
	st.RelErr = ErrorEstimate{
		L1: comb(st.SetErr.L1, st.TimeErr.L1), L2: comb(st.SetErr.L2, st.TimeErr.L2),
		DRAMReads: comb(st.SetErr.DRAMReads, st.TimeErr.DRAMReads), DRAMWrites: comb(st.SetErr.DRAMWrites, st.TimeErr.DRAMWrites),
	}
	return st
}

// timeErr estimates the relative standard error of the time-sampling
// ratio estimate of statistic k: the counted windows are taken as a
// sample of n out of N = lines/x̄ windows (x̄ their mean length); with R =
// Σy/Σx the estimate R·lines has variance about N² (1 - n/N) s²/n, s² the
// variance of the residuals y - R·x between windows. It is zero when every
// access was counted and infinite with fewer than two windows otherwise.
func timeErr(ws winSums, lines int64, k int) float64 {
	if ws.x >= float64(lines) {
		return 0
	}
	if ws.n < 2 || ws.x == 0 {
		return math.Inf(1)
	}
	if ws.y[k] == 0 {
		return 0
	}
	n := float64(ws.n)
	ratio := ws.y[k] / ws.x
	ss := ws.yy[k] - 2*ratio*ws.xy[k] + ratio*ratio*ws.xx
	s2 := max(ss, 0) / (n - 1)
	bigN := float64(lines) / (ws.x / n)
	v := bigN * bigN * max(1-n/bigN, 0) * s2 / n
	return math.Sqrt(v) / (ratio * float64(lines))
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
	d.L1LoadMisses -= o.L1LoadMisses
	d.DRAMLoadReads -= o.DRAMLoadReads
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
	d.L1LoadMisses += o.L1LoadMisses
	d.DRAMLoadReads += o.DRAMLoadReads
	d.PrefetchReads += o.PrefetchReads
	d.PrefetchIssued += o.PrefetchIssued
	d.TLB1Misses += o.TLB1Misses
	d.TLBWalks += o.TLBWalks
	d.RelErr, d.SetErr, d.TimeErr = st.RelErr.larger(o.RelErr), st.SetErr.larger(o.SetErr), st.TimeErr.larger(o.TimeErr)
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
	if st.Sampling.Rate() < 1 || st.Sampling.TimeRate() < 1 {
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
