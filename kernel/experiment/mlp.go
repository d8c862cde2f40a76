package experiment

import (
	"cachebook/engine/cachesim"
	"cmp"
	"context"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"time"

	"cachebook/engine/units"
)

// MLPData is the typed result of the mlp experiment.
type MLPData struct {
	Bytes     int64    `json:"bytes"`      // buffer size
	Lines     int      `json:"lines"`      // 64-byte lines in the buffer, all on one random cycle
	HugePages bool     `json:"huge_pages"` // 2 MiB pages were requested and the advice accepted
	SampleNS  int64    `json:"sample_ns"`  // target length of one timed sample
	Reps      int      `json:"reps"`       // rounds, each timing every chain count once; the median is reported
	Rows      []MLPRow `json:"rows"`
	// Modelled is the cache model's count per load with one chain and
	// with the most chains (1M loads of the buffer's random cycle).
	Modelled []Modelled `json:"modelled,omitempty"`
	// Verdict compares one chain with 8 (or the most up to 8) per load,
	// round by round.
	Verdict
}

// MLPRow is one chain count.
type MLPRow struct {
	Chains int `json:"chains"`
	// Loads is the number of loads in one timed sample (all chains).
	Loads int64 `json:"loads"`
	// NSPerLoad is the median sample's time divided by its loads (thread
	// CPU time where the OS has it, else wall time).
	NSPerLoad float64 `json:"ns_per_load"`
	// Speedup is the one-chain time per load over this row's.
	Speedup float64 `json:"speedup"`
	// InFlight applies Little's law: loads in flight = latency x
	// throughput, with the one-chain time per load as the latency.
	InFlight float64 `json:"in_flight"`
	// GBps is the rate at which cache lines arrive, 64 B per load.
	GBps float64 `json:"gbps"`
}

func mlpSpec() Spec {
	s := Spec{
		Name: "mlp",
		Summary: "memory-level parallelism: 1, 2, 4, ... independent pointer chains through one buffer " +
			"far larger than the caches; time per load falls until the core's miss buffers are full",
		Params: []Param{
			{"size", "128MiB", "buffer size (1MiB..1GiB); choose several times the L3 to measure DRAM. Memory used: size + size/16 while the chains are built"},
			{"chains", "1,2,4,8,16,32,64", "numbers of independent chains to follow at once (each 1..64)"},
			{"sample", "50ms", "target length of one timed sample (1ms..2s)"},
			{"reps", "3", "rounds (1..20); each times every chain count once, in alternating order; the median is reported"},
			{"huge", "true", "ask for 2 MiB pages (Linux), so that TLB misses do not add page walks to every load"},
			{"seed", "1", "seed of the random cycle"},
		},
	}
	s.Run = func(ctx context.Context, raw map[string]string, hooks *Hooks) (*Result, error) {
		return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
			return mlp(ctx, p, r, hooks)
		})
	}
	s.Memory = mlpMemory
	return s
}

func mlp(ctx context.Context, p *params, r *Result, hooks *Hooks) error {
	size := p.Bytes("size", 1<<20, 1<<30)
	sample := p.Duration("sample", time.Millisecond, 2*time.Second)
	reps := p.Int("reps", 1, 20)
	huge := boolParam(p, "huge")
	seed := p.Int("seed", 0, 1<<62)
	var counts []int
	for c := range splitList(p.String("chains")) {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 || n > 64 {
			p.fail(fmt.Errorf("chains must list numbers between 1 and 64, got %q", c))
			break
		}
		counts = append(counts, n)
	}
	if len(counts) == 0 {
		p.fail(fmt.Errorf("chains must list at least one number between 1 and 64"))
	}
	if err := p.err(); err != nil {
		return err
	}
	if !slices.Contains(counts, 1) {
		counts = append([]int{1}, counts...) // the latency every row is compared with
	}
	raw, advised, release, err := pageBuffer(int(size), huge)
	if err != nil {
		return err
	}
	defer release()
	lines := int(size / 64)
	buf := viewWords(raw)
	starts, err := buildCycle(ctx, buf, lines, uint64(seed), 64)
	if err != nil {
		return err
	}
	data := &MLPData{Bytes: size, Lines: lines, HugePages: advised, SampleNS: sample.Nanoseconds(), Reps: reps}
	var sink uint32
	// Each chain count is calibrated first (which also warms its path),
	// then the counts take turns, round after round (forwards, then
	// backwards), so that a busy stretch falls on all of them.
	heads := make([][]uint32, len(counts))
	steps := make([]int, len(counts))
	for ci, k := range counts {
		// The k chains start evenly spaced along the one cycle, so no chain
		// ever reads a line another chain fetched recently.
		ps := make([]uint32, k)
		for i := range ps {
			ps[i] = starts[i*len(starts)/k]
		}
		heads[ci] = ps
		label := fmt.Sprintf("%d chains", k)
		steps[ci], err = calibrate(ctx, sample, 256, func(steps int) (time.Duration, error) {
			st, err := runWorkers(ctx, nil, label+" (calibration)", 1, func(int) error {
				sink ^= chaseChains(buf, ps, steps)
				return nil
			})
			return st.cost(), err
		})
		if err != nil {
			return err
		}
	}
	samples := make([][]float64, len(counts)) // ns per load, by round
	for rep := range reps {
		for _, ci := range alternate(len(counts), rep) {
			ps, n := heads[ci], steps[ci]
			st, err := runWorkers(ctx, hooks, fmt.Sprintf("%d chains", counts[ci]), 1, func(int) error {
				sink ^= chaseChains(buf, ps, n)
				return nil
			})
			if err != nil {
				return err
			}
			samples[ci] = append(samples[ci], float64(st.cost())/float64(n*counts[ci]))
		}
	}
	for ci, k := range counts {
		s := slices.Clone(samples[ci])
		slices.SortFunc(s, cmp.Compare)
		data.Rows = append(data.Rows, MLPRow{Chains: k, Loads: int64(steps[ci] * k), NSPerLoad: s[len(s)/2]})
	}
	data.Verdict = mlpVerdict(counts, samples)
	_ = sink
	one := data.Rows[0].NSPerLoad
	for i := range data.Rows {
		row := &data.Rows[i]
		if row.NSPerLoad <= 0 || one <= 0 {
			continue // a coarse clock measured no time: no ratio
		}
		row.Speedup = one / row.NSPerLoad
		row.InFlight = row.Speedup
		row.GBps = 64 / row.NSPerLoad
	}
	r.Data = data
	pages := "4 KiB pages"
	if advised {
		pages = "2 MiB pages requested"
	}
	t := Table{
		Title:   fmt.Sprintf("%s buffer (%d lines on one random cycle, %s), median of %d samples of %s", units.FormatBytes(size), lines, pages, reps, sample),
		Columns: []string{"chains", "ns/load", "vs 1 chain", "loads in flight", "GB/s"},
	}
	for _, row := range data.Rows {
		t.Rows = append(t.Rows, []string{strconv.Itoa(row.Chains), fmt.Sprintf("%.2f", row.NSPerLoad),
			fmtRatio(row.Speedup), fmt.Sprintf("%.1f", row.InFlight), fmt.Sprintf("%.2f", row.GBps)})
	}
	c := &Chart{Title: "Time per load as independent chains are added", XTitle: "independent chains", YTitle: "ns per load", LogX: true,
		Series: []ChartSeries{{Name: "ns per load"}}}
	for _, row := range data.Rows {
		c.Series[0].Points = append(c.Series[0].Points, ChartPoint{X: float64(row.Chains), Y: row.NSPerLoad})
	}
	r.Chart = c
	r.Tables = append(r.Tables, t)
	best := slices.MaxFunc(data.Rows, func(a, b MLPRow) int { return cmp.Compare(a.InFlight, b.InFlight) })
	r.Notes = append(r.Notes,
		"each chain is a dependent pointer chase (a load needs the previous load's value), as in the latency cell; chains are independent of each other, so the core can overlap their misses",
		"loads in flight is Little's law: concurrency = latency x throughput, with the 1-chain time per load as the latency",
		fmt.Sprintf("here: %.1f ns per load with one chain, %.2f ns with %d chains, about %.1f misses in flight at best", one, best.NSPerLoad, best.Chains, best.InFlight),
		"the curve flattens where the core runs out of miss buffers (line-fill buffers / miss address buffers: roughly 10 to 24 outstanding L1 misses on current x86 cores), or earlier if page walks limit it",
		"GB/s is the rate lines arrive (64 B per load); compare it with a one-thread streaming read (the stride experiment, or the bandwidth cell on an idle machine): with the prefetchers' help a stream usually gets more",
	)
	if !advised {
		r.Notes = append(r.Notes, "4 KiB pages: with a buffer this size nearly every load also misses the TLB, and page walks can cap the overlap before the miss buffers do")
	}
	if err := modelMLP(ctx, data, r); err != nil {
		return err
	}
	if data.Verdict.Text != "" {
		r.Notes = append(r.Notes, "verdict (CPU time per load): "+data.Verdict.Text)
	}
	return nil
}

// modelMLP replays loads of random lines of the buffer, as one chain and
// as the most chains, through the cache model: the same lines either way,
// so the model counts the same misses per load, and the speed-up the
// experiment measures is overlap, which a cache model without time
// cannot show.
func modelMLP(ctx context.Context, d *MLPData, r *Result) error {
	if len(d.Rows) == 0 {
		return nil
	}
	lines := uint64(1) << (bits.Len64(uint64(d.Lines)) - 1)
	n := min(lines, 1<<20)
	mask, shift := lines-1, uint(bits.Len64(lines-1)/2+1)
	const base = 1 << 32
	for _, chains := range []int{d.Rows[0].Chains, d.Rows[len(d.Rows)-1].Chains} {
		pass := func(s *cachesim.Sim) error {
			for i := range n {
				if i%modelEvery == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
				// Chains interleave their loads; each chain's next line is
				// another random line of the same cycle.
				l := ((i%uint64(chains))*(n/uint64(chains)) + i/uint64(chains)) * 0x9e3779b97f4a7c15 & mask
				l ^= l >> shift
				s.Load(uint64(base)+l*64, 4)
			}
			return nil
		}
		m, err := modelSide(ctx, fmt.Sprintf("%d chain%s", chains, map[bool]string{true: "", false: "s"}[chains == 1]), int64(n), nil, pass)
		if err != nil {
			return err
		}
		d.Modelled = append(d.Modelled, m)
		if len(d.Rows) == 1 {
			break
		}
	}
	r.Tables = append(r.Tables, modelTable(fmt.Sprintf("%d random loads of a %s buffer", n, units.FormatBytes(d.Bytes)), "load", d.Modelled))
	r.Notes = append(r.Notes, "modelled: one chain and many fetch the same random lines, so the model counts the same DRAM lines per load for both; what the chains change is how many of those misses are in flight at once, which the model, counting lines and not time, leaves out")
	return nil
}

// mlpVerdict compares one chain with 8 (or the most chains up to 8) per
// load, round by round; samples[i] are counts[i]'s rounds.
func mlpVerdict(counts []int, samples [][]float64) Verdict {
	one, many := slices.Index(counts, 1), -1
	for i, k := range counts {
		if k > 1 && k <= 8 && (many < 0 || k > counts[many]) {
			many = i
		}
	}
	if one < 0 || many < 0 {
		return Verdict{}
	}
	n := min(len(samples[one]), len(samples[many]))
	ratios := make([]float64, n)
	for i := range n {
		ratios[i] = samples[one][i] / samples[many][i]
	}
	k := counts[many]
	return judge(comparison{A: "1 chain", B: fmt.Sprintf("%d chains", k), Faster: true,
		Model: fmt.Sprintf("%d independent chains overlap their misses, up to %d× faster per load than one", k, k)}, ratios, "")
}

// buildCycle links the lines of buf (16 uint32 words each) into one random
// cycle: word 0 of each line holds the word index of the next line. It
// returns n positions evenly spaced along the cycle (word indices), so
// that several chains can start far apart.
func buildCycle(ctx context.Context, buf []uint32, lines int, seed uint64, n int) ([]uint32, error) {
	order := make([]uint32, lines)
	for i := range order {
		order[i] = uint32(i)
	}
	// Fault the pages in first, in order and looking at ctx: the random
	// stores below would fault them all within their first few thousand
	// (zeroing the whole buffer, huge pages compacted) between two looks.
	for i := 0; i < len(buf); i += 1024 { // a word every 4 KiB
		if i&(1<<20-1) == 0 && ctx.Err() != nil { // every 4 MiB
			return nil, ctx.Err()
		}
		buf[i] = 0
	}
	rng := splitmix64(seed)
	for i := lines - 1; i > 0; i-- {
		if i&0xfffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		j := int(rng.next() % uint64(i+1))
		order[i], order[j] = order[j], order[i]
	}
	for i, l := range order {
		// Each store misses the caches: look at ctx as often as in the
		// shuffle's time, not its count.
		if i&0xffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		buf[int(l)*16] = order[(i+1)%lines] * 16
	}
	n = min(n, lines)
	starts := make([]uint32, n)
	for i := range starts {
		starts[i] = order[i*lines/n] * 16
	}
	return starts, ctx.Err()
}

// chaseChains follows every chain in ps for steps steps, leaving each at
// its new position, and returns a value that depends on all the loads.
// The chains advance in lock step, but the loads of different chains are
// independent, so the core can have one miss per chain outstanding.
//
//go:noinline
func chaseChains(buf []uint32, ps []uint32, steps int) uint32 {
	for range steps {
		for i, p := range ps {
			ps[i] = buf[p]
		}
	}
	var x uint32
	for _, p := range ps {
		x ^= p
	}
	return x
}

// chaseOne follows one chain for steps steps with the position kept in a
// register, so that each step costs exactly one dependent load.
//
//go:noinline
func chaseOne(buf []uint32, p uint32, steps int) uint32 {
	for ; steps >= 4; steps -= 4 {
		p = buf[p]
		p = buf[p]
		p = buf[p]
		p = buf[p]
	}
	for ; steps > 0; steps-- {
		p = buf[p]
	}
	return p
}

// calibrate finds a repetition count whose measured cost (from measure) is
// about target: it doubles from n until a run takes at least a quarter of
// target, then scales.
func calibrate(ctx context.Context, target time.Duration, n int, measure func(n int) (time.Duration, error)) (int, error) {
	for {
		d, err := measure(n)
		if err != nil {
			return 0, err
		}
		if d >= target/4 || n >= 1<<40 {
			if d <= 0 {
				return n, nil
			}
			return max(1, int(float64(n)*float64(target)/float64(d))), ctx.Err()
		}
		n *= 2
	}
}
