package experiment

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"cachebook/engine/cachesim"
	"cachebook/engine/units"
)

// TransposeData is the typed result of the transpose experiment.
type TransposeData struct {
	N     int   `json:"n"`     // the matrices are N×N
	Block int   `json:"block"` // the blocked variant's tile side, in elements
	Bytes int64 `json:"bytes"` // one matrix's size (8-byte elements)
	Reps  int   `json:"reps"`
	// Passes is the number of transposes in one timed run of each variant.
	Passes int `json:"passes"`
	// NaiveNS and BlockedNS are the CPU time per element of each timed
	// round, taken in turn (naive, blocked, naive, …).
	NaiveNS   []float64 `json:"naive_ns"`
	BlockedNS []float64 `json:"blocked_ns"`
	// Speedup is the median of the rounds' naive/blocked time ratios,
	// Low and High their extremes; Noisy is set when they fall on both
	// sides of 1.
	Speedup float64 `json:"speedup"`
	Low     float64 `json:"low"`
	High    float64 `json:"high"`
	Noisy   bool    `json:"noisy"`
	// Variants are the cache model's figures for each variant, naive first.
	Variants []TransposeModel `json:"variants"`
	// ModelledL1Ratio is naive's modelled L1 misses over blocked's;
	// ModelledL2Ratio and ModelledDRAMRatio are the same for L2 misses
	// and DRAM lines (reads and writes).
	ModelledL1Ratio   float64 `json:"modelled_l1_ratio"`
	ModelledL2Ratio   float64 `json:"modelled_l2_ratio"`
	ModelledDRAMRatio float64 `json:"modelled_dram_ratio"`
	// Geometry and Sampling describe the model that produced Variants;
	// RelErr is its largest stated relative standard error.
	Geometry string  `json:"geometry"`
	Sampling string  `json:"sampling"`
	RelErr   float64 `json:"rel_err"`
}

// TransposeModel is the cache model's count for one variant's transpose,
// per element, after a warm-up transpose.
type TransposeModel struct {
	Variant string `json:"variant"` // "naive" or "blocked"
	Block   int    `json:"block"`
	// L1MissesPerElement counts loads and stores that miss the L1d.
	L1MissesPerElement float64 `json:"l1_misses_per_element"`
	L2MissesPerElement float64 `json:"l2_misses_per_element"`
	// DRAMLinesPerElement is lines read from and written to memory.
	DRAMLinesPerElement float64 `json:"dram_lines_per_element"`
	// TLBWalksPerElement are accesses that miss both TLB levels.
	TLBWalksPerElement float64 `json:"tlb_walks_per_element"`
}

func transposeSpec() Spec {
	s := Spec{
		Name: "transpose",
		Summary: "an N×N matrix of 8-byte values transposed row by row and in square blocks: the same " +
			"copies in two orders, timed and replayed through the cache model",
		Params: []Param{
			{"n", "2048", "the matrices' side (16..4096); two matrices of n×n×8 bytes are used"},
			{"block", "8", "the blocked variant's tile side in elements (1..n): it copies block×block tiles one after the other; 1 and n are the naive order"},
			{"reps", "5", "timed rounds of each variant, taken in turn after a warm-up (1..50)"},
			{"sample", "20ms", "target CPU time of one timed run (1ms..2s)"},
			{"geometry", "default", "the modelled caches: default (32 KiB 8-way L1d, 1 MiB 16-way L2, 32 MiB 16-way L3) or overrides of it such as \"l1=48K l1ways=12 l2=2M\""},
			{"model", "sampled", "the cache model: sampled (1/16 of the sets, a second or less), full (every set: exact, several times slower) or off"},
		},
	}
	s.Run = func(ctx context.Context, raw map[string]string, hooks *Hooks) (*Result, error) {
		return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
			return transpose(ctx, p, r, hooks)
		})
	}
	s.Memory = transposeMemory
	return s
}

// transposeMemory is the two matrices.
func transposeMemory(p *params) int64 {
	n := int64(p.Int("n", 16, 4096))
	return 2*n*n*8 + 1<<20
}

// stopEvery is how many elements a transpose copies between looks at its
// stop flag: a few hundred microseconds at DRAM speed.
const stopEvery = 1 << 14

// transposeTiles writes the transpose of the n×n matrix src into dst, in
// tiles of b×b elements taken row of tiles by row of tiles; within a tile
// it reads src row by row and writes dst column by column. b = n (or 1) is
// the naive order: all of row 0, then all of row 1, .... It returns false
// if stop was set before it finished.
//
//go:noinline
func transposeTiles(dst, src []uint64, n, b int, stop *atomic.Bool) bool {
	done := 0
	for ii := 0; ii < n; ii += b {
		iEnd := min(ii+b, n)
		for jj := 0; jj < n; jj += b {
			jEnd := min(jj+b, n)
			for i := ii; i < iEnd; i++ {
				row := src[i*n+jj : i*n+jEnd]
				for k, v := range row {
					dst[(jj+k)*n+i] = v
				}
				if done += len(row); done >= stopEvery {
					if stop.Load() {
						return false
					}
					done = 0
				}
			}
		}
	}
	return true
}

// modelTiles replays transposeTiles's accesses through sim: for every
// element a load of src and a store to dst, in the same order. src and
// dst are the matrices' base addresses in the model. It checks ctx once
// per row of tiles.
func modelTiles(ctx context.Context, sim *cachesim.Sim, dst, src uint64, n, b int) error {
	for ii := 0; ii < n; ii += b {
		if err := ctx.Err(); err != nil {
			return err
		}
		iEnd := min(ii+b, n)
		for jj := 0; jj < n; jj += b {
			jEnd := min(jj+b, n)
			for i := ii; i < iEnd; i++ {
				for j := jj; j < jEnd; j++ {
					sim.Load(src+uint64(i*n+j)*8, 8)
					sim.Store(dst+uint64(j*n+i)*8, 8)
				}
			}
		}
	}
	return nil
}

func transpose(ctx context.Context, p *params, r *Result, hooks *Hooks) error {
	n := p.Int("n", 16, 4096)
	b := p.Int("block", 1, 4096)
	reps := p.Int("reps", 1, 50)
	sample := p.Duration("sample", time.Millisecond, 2*time.Second)
	geo := cachesim.DefaultGeometry()
	if g := p.String("geometry"); g != "default" {
		var err error
		if geo, err = cachesim.Parse(geo, g); err != nil {
			p.fail(fmt.Errorf("geometry: %w", err))
		}
	}
	mode := p.String("model")
	if mode != "sampled" && mode != "full" && mode != "off" {
		p.fail(fmt.Errorf("model must be sampled, full or off, got %q", mode))
	}
	if err := p.err(); err != nil {
		return err
	}
	if b > n {
		return fmt.Errorf("block must be at most n (%d), got %d", n, b)
	}
	// The model's sampling and geometry are checked before anything is
	// timed, so that a bad geometry fails at once.
	samp := cachesim.Sampling{}
	if mode == "sampled" {
		samp = cachesim.Sampling{Mod: 64, Keep: 4}
	}
	if mode != "off" {
		if _, err := cachesim.New(geo, samp); err != nil {
			return fmt.Errorf("geometry: %w", err)
		}
	}

	src := make([]uint64, n*n)
	dst := make([]uint64, n*n)
	for i := range src {
		src[i] = uint64(i)
	}
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	measure := func(label string, tile int) func(passes int) (time.Duration, error) {
		return func(passes int) (time.Duration, error) {
			st, err := runWorkers(ctx, hooks, label, 1, func(int) error {
				for range passes {
					if !transposeTiles(dst, src, n, tile, &stop) {
						return ctx.Err()
					}
				}
				return nil
			})
			return st.cost(), err
		}
	}
	naiveRun := measure("naive", n)
	blockedRun := measure(fmt.Sprintf("blocked %d×%d", b, b), b)
	// Calibrate on naive, the slower variant as a rule; the calibration's
	// first pass also faults dst's pages in. Then warm the blocked code.
	passes, err := calibrate(ctx, sample, 1, naiveRun)
	if err != nil {
		return err
	}
	if _, err := blockedRun(1); err != nil {
		return err
	}
	if !checkTranspose(dst, src, n) {
		return fmt.Errorf("the blocked transpose with block %d gave a wrong matrix", b)
	}
	d := &TransposeData{N: n, Block: b, Bytes: int64(n) * int64(n) * 8, Reps: reps, Passes: passes}
	per := float64(passes) * float64(n) * float64(n)
	var ratios []float64
	for range reps {
		x, err := naiveRun(passes)
		if err != nil {
			return err
		}
		y, err := blockedRun(passes)
		if err != nil {
			return err
		}
		d.NaiveNS = append(d.NaiveNS, float64(x)/per)
		d.BlockedNS = append(d.BlockedNS, float64(y)/per)
		ratios = append(ratios, float64(x)/float64(max(y, 1)))
	}
	slices.Sort(ratios)
	d.Speedup, d.Low, d.High = median(ratios), ratios[0], ratios[len(ratios)-1]
	d.Noisy = d.Low < 1 && d.High > 1

	if mode != "off" {
		d.Geometry, d.Sampling = geo.String(), samp.String()
		// The two replays are independent models: on two cores at once.
		d.Variants = []TransposeModel{{Variant: "naive", Block: n}, {Variant: "blocked", Block: b}}
		var (
			wg   sync.WaitGroup
			errs [2]error
			rel  [2]float64
		)
		for i := range d.Variants {
			wg.Go(func() {
				v := &d.Variants[i]
				var m TransposeModel
				m, rel[i], errs[i] = modelTranspose(ctx, geo, samp, n, v.Block)
				m.Variant, m.Block = v.Variant, v.Block
				*v = m
			})
		}
		wg.Wait()
		for i := range errs {
			if errs[i] != nil {
				return errs[i]
			}
			d.RelErr = max(d.RelErr, rel[i])
		}
		nv, bv := d.Variants[0], d.Variants[1]
		d.ModelledL1Ratio = nv.L1MissesPerElement / max(bv.L1MissesPerElement, 1e-9)
		d.ModelledL2Ratio = nv.L2MissesPerElement / max(bv.L2MissesPerElement, 1e-9)
		d.ModelledDRAMRatio = nv.DRAMLinesPerElement / max(bv.DRAMLinesPerElement, 1e-9)
	}
	r.Data = d
	transposeReport(r, d)
	return nil
}

// checkTranspose reports whether dst is the transpose of src.
func checkTranspose(dst, src []uint64, n int) bool {
	for i := range n {
		for j := range n {
			if dst[j*n+i] != src[i*n+j] {
				return false
			}
		}
	}
	return true
}

// lastLevel is the size of geo's last cache level.
func lastLevel(g cachesim.Geometry) int64 {
	for _, l := range []cachesim.Level{g.L3, g.L2, g.L1} {
		if l.Size > 0 {
			return l.Size
		}
	}
	return 0
}

// modelTranspose replays one transpose in tiles of b through a fresh
// model of geo, after a warm-up transpose where the matrices fit in its
// last level, and returns the counts per
// element of the second and the largest stated relative error.
func modelTranspose(ctx context.Context, geo cachesim.Geometry, samp cachesim.Sampling, n, b int) (TransposeModel, float64, error) {
	sim, err := cachesim.New(geo, samp)
	if err != nil {
		return TransposeModel{}, 0, err
	}
	// src and dst lie one after the other on 4 KiB pages, page-aligned
	// like the Go heap's large allocations.
	const base = 1 << 32
	src := uint64(base)
	dst := src + (uint64(n*n*8)+4095)&^4095
	// The timed rounds find what the previous transpose left in the
	// caches: replay one first where that can be anything. Matrices
	// larger than the last level leave nothing a transpose would reuse
	// (LRU evicts a cyclic sweep larger than the cache before it comes
	// round again), so the replay is skipped there, halving the time.
	if 2*int64(n)*int64(n)*8 <= lastLevel(geo) {
		if err := modelTiles(ctx, sim, dst, src, n, b); err != nil {
			return TransposeModel{}, 0, err
		}
	}
	m := sim.Mark()
	if err := modelTiles(ctx, sim, dst, src, n, b); err != nil {
		return TransposeModel{}, 0, err
	}
	s := sim.Since(m)
	el := float64(n) * float64(n)
	return TransposeModel{
		L1MissesPerElement:  float64(s.L1.Misses) / el,
		L2MissesPerElement:  float64(s.L2.Misses) / el,
		DRAMLinesPerElement: float64(s.DRAMReads+s.DRAMWrites) / el,
		TLBWalksPerElement:  float64(s.TLBWalks) / el,
	}, s.RelErr.Max(), nil
}

func transposeReport(r *Result, d *TransposeData) {
	t := Table{
		Title: fmt.Sprintf("%d×%d matrix of 8-byte values (%s each), CPU time per element, %d rounds of each variant in turn, %s per run",
			d.N, d.N, units.FormatBytes(d.Bytes), d.Reps, plural(d.Passes, "transpose")),
		Columns: []string{"variant", "ns/element (median)", "fastest", "slowest"},
	}
	row := func(name string, v []float64) []string {
		s := slices.Sorted(slices.Values(v))
		return []string{name, fmt.Sprintf("%.2f", median(s)), fmt.Sprintf("%.2f", s[0]), fmt.Sprintf("%.2f", s[len(s)-1])}
	}
	blocked := fmt.Sprintf("blocked %d×%d", d.Block, d.Block)
	t.Rows = append(t.Rows, row("naive", d.NaiveNS), row(blocked, d.BlockedNS))
	r.Tables = append(r.Tables, t)
	verdict := fmt.Sprintf("naive took %s the time of %s (%s–%s over %d rounds)", fmtRatio(d.Speedup), blocked, fmtRatio(d.Low), fmtRatio(d.High), d.Reps)
	if d.Noisy {
		verdict = fmt.Sprintf("too noisy to tell here: the rounds' ratios fell on both sides of 1 (%s–%s over %d rounds); run it again on a quieter machine", fmtRatio(d.Low), fmtRatio(d.High), d.Reps)
	}
	r.Notes = append(r.Notes, verdict)
	if len(d.Variants) == 2 {
		m := Table{
			Title:   "modelled per element of one transpose, in the caches the previous one left: " + d.Geometry + "; " + d.Sampling,
			Columns: []string{"variant", "modelled L1 misses", "modelled L2 misses", "modelled DRAM lines", "modelled page walks"},
		}
		for _, v := range d.Variants {
			name := v.Variant
			if name == "blocked" {
				name = blocked
			}
			m.Rows = append(m.Rows, []string{name, fmt.Sprintf("%.3f", v.L1MissesPerElement), fmt.Sprintf("%.3f", v.L2MissesPerElement),
				fmt.Sprintf("%.3f", v.DRAMLinesPerElement), fmt.Sprintf("%.4f", v.TLBWalksPerElement)})
		}
		r.Tables = append(r.Tables, m)
		errNote := ""
		if d.RelErr > 0 {
			errNote = fmt.Sprintf(" (set sampling: ±%.1f%% standard error)", 100*d.RelErr)
		}
		r.Notes = append(r.Notes,
			fmt.Sprintf("modelled: naive has %s the L1 misses of %s, %s its L2 misses and %s its DRAM lines%s",
				fmtRatio(d.ModelledL1Ratio), blocked, fmtRatio(d.ModelledL2Ratio), fmtRatio(d.ModelledDRAMRatio), errNote))
	}
	r.Notes = append(r.Notes,
		"both variants copy every element once: a load from src read along a row and a store to dst down a column; only the order differs",
		"naive writes one element into each of n lines of dst, "+strconv.Itoa(d.N*8)+" bytes apart, before it comes back to the first of them for the next element: those lines must stay cached for n elements, or every store misses",
		"a tile of b×b touches b lines of src and b lines of dst (b ≥ 8 fills whole 64-byte lines); it works while those 2b lines fit in the L1 together — and in its sets: with n a power of two every dst line of a tile falls in the same set",
		"the model counts lines, not their cost: it has no prefetcher, and it indexes every level by these virtual addresses, so it shows the L1's conflicts exactly and the L2's and L3's as if the pages were contiguous",
	)
}

// plural returns "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
