package experiment

import (
	"cachebook/engine/cachesim"
	"cachebook/engine/units"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"cachebook/kernel/internal/freshmem"
	"cachebook/kernel/internal/threadclock"
)

// ZeroingData is the typed result of the zeroing experiment.
type ZeroingData struct {
	Size    int64        `json:"size"`    // bytes per buffer
	Touched int64        `json:"touched"` // bytes written into each buffer after allocation
	Allocs  int          `json:"allocs"`  // per thread, per run
	Live    int          `json:"live"`    // buffers alive per thread
	Rows    []ZeroingRow `json:"rows"`
	Skipped []string     `json:"skipped,omitempty"` // variants not run here, with the reason
	Reps    int          `json:"reps"`              // rounds; each row is the median
	// Modelled is the cache model's count per operation for make, pool
	// and pool-clear on one thread (the variants that were run).
	Modelled []Modelled `json:"modelled,omitempty"`
	// Verdict compares make with the pool on one thread (CPU time per
	// operation), round by round.
	Verdict
}

// ZeroingRow is one variant at one thread count.
type ZeroingRow struct {
	Variant string `json:"variant"` // make, pool, pool-clear, mmap
	Threads int    `json:"threads"`
	WallNS  int64  `json:"wall_ns"`
	// NSPerOp is the wall time of one allocation plus its use on one
	// thread: wall time divided by the allocations each thread made.
	NSPerOp float64 `json:"ns_per_op"`
	// CPUNSPerOp is the same in thread CPU time, which leaves out time
	// spent waiting for a core on a busy machine (0 if unknown). Cycles
	// stalled on memory are CPU time, so shared-channel contention shows.
	CPUNSPerOp float64 `json:"cpu_ns_per_op"`
	// ExtraNSPerOp is the cost per operation minus the pool variant's at
	// the same thread count (CPU time where known, else wall time): the
	// price of getting zeroed memory.
	ExtraNSPerOp float64 `json:"extra_ns_per_op"`
	// ZeroedPerOp is the bytes zeroed per allocation: the whole buffer for
	// make and pool-clear, the touched pages for mmap, none for pool.
	ZeroedPerOp int64 `json:"zeroed_per_op"`
	// ZeroGBps is the zeroing rate of one thread, in 10^9 B/s: measured
	// around clear() for pool-clear, implied by ExtraNSPerOp for make and
	// mmap (0 when not measurable). All threads together zero Threads
	// times as much.
	ZeroGBps float64 `json:"zero_gbps"`
	// CPUShare is the fraction of wall x threads the threads were running
	// (below 1 when the machine is busy with other work).
	CPUShare float64 `json:"cpu_share"`
	// FaultsPerOp is the page faults each allocation+use took on its
	// thread: a fresh page costs a fault, and the kernel zeroes it then.
	FaultsPerOp float64 `json:"faults_per_op"`
	// NewBuffers counts buffers the pool allocated (pool variants): live
	// per thread, made and touched before the timed run.
	NewBuffers int64 `json:"new_buffers,omitempty"`
}

// cost is what the comparisons use: CPU time per op where known.
func (r *ZeroingRow) cost() float64 {
	if r.CPUNSPerOp > 0 {
		return r.CPUNSPerOp
	}
	return r.NSPerOp
}

var zeroingVariants = []string{"make", "pool", "pool-clear", "mmap"}

func zeroingSpec() Spec {
	s := Spec{
		Name: "zeroing",
		Summary: "large buffers allocated zeroed (make) vs reused from a free list vs fresh mmap pages, " +
			"partly filled, on one thread and on all (Oxla make_shared memset)",
		Params: []Param{
			{"size", "8MiB", "bytes per buffer (4KiB..1GiB), as Oxla's 8 MiB Line struct"},
			{"allocs", "8", "allocations per thread per run"},
			{"touch", "0.5", "fraction of each buffer filled after allocation (0..1)"},
			{"live", "4", "buffers each thread keeps alive at once (1..64): 4 x 8 MiB per thread outgrows a 32 MiB L3, so reuse is not served from cache"},
			{"threads", strconv.Itoa(defaultThreads()), "thread count of the parallel runs (the first runs use 1)"},
			{"variants", "make,pool,pool-clear,mmap", "variants to run"},
			{"reps", "3", "rounds (1..20); each runs every variant once, in alternating order; the median is reported"},
		},
	}
	s.Run = func(ctx context.Context, raw map[string]string, hooks *Hooks) (*Result, error) {
		return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
			return zeroing(ctx, p, r, hooks)
		})
	}
	s.Memory = func(p *params) int64 {
		// Every thread keeps live buffers plus the one being replaced;
		// dropped buffers (make) wait for the garbage collector, so count
		// them twice.
		size := p.Bytes("size", 4<<10, 1<<30)
		live := int64(p.Int("live", 1, 64))
		threads := int64(p.Int("threads", 1, 256))
		return 2*size*(live+1)*threads + 1<<20
	}
	return s
}

// bufPool is a free list of equally sized buffers that hands them back
// without clearing them (the point of reuse: no second zeroing pass).
// It is owned by one worker, so it needs no lock.
type bufPool struct {
	size  int
	free  [][]byte
	made  int64 // buffers allocated because the list was empty
	reuse int64 // buffers handed out again
}

func (p *bufPool) get() []byte {
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		p.reuse++
		return b
	}
	p.made++
	return make([]byte, p.size)
}

func (p *bufPool) put(b []byte) { p.free = append(p.free, b) }

// fillSource is what "the data" written into a buffer is copied from; it
// is small enough to stay in the L2 cache, so the fill measures the writes.
func fillSource() []byte {
	src := make([]byte, 64<<10)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	return src
}

// fill copies src over b[:n] again and again, as a reader filling a buffer
// from storage would.
func fill(b []byte, n int, src []byte) {
	for off := 0; off < n; off += len(src) {
		copy(b[off:n], src)
	}
}

func zeroing(ctx context.Context, p *params, r *Result, hooks *Hooks) error {
	size := p.Bytes("size", 4<<10, 1<<30)
	allocs := p.Int("allocs", 1, 1<<20)
	touch := p.Float("touch", 0, 1)
	live := p.Int("live", 1, 64)
	threads := p.Int("threads", 1, 256)
	reps := p.Int("reps", 1, 20)
	var variants []string
	for v := range splitList(p.String("variants")) {
		ok := false
		for _, known := range zeroingVariants {
			ok = ok || v == known
		}
		if !ok {
			p.fail(fmt.Errorf("variants must be among make, pool, pool-clear, mmap, got %q", v))
		}
		variants = append(variants, v)
	}
	if len(variants) == 0 {
		p.fail(fmt.Errorf("variants must list at least one of make, pool, pool-clear, mmap"))
	}
	if err := p.err(); err != nil {
		return err
	}
	touched := int(float64(size) * touch)
	const page = 4096
	touchedPages := int64((touched + page - 1) / page * page)
	src := fillSource()
	data := &ZeroingData{Size: size, Touched: int64(touched), Allocs: allocs, Live: live, Reps: reps}
	if ok, why := freshmem.Supported(); !ok {
		kept := variants[:0]
		for _, v := range variants {
			if v == "mmap" {
				data.Skipped = append(data.Skipped, "mmap: "+why)
				continue
			}
			kept = append(kept, v)
		}
		variants = kept
	}

	steps := []int{1}
	if threads > 1 {
		steps = append(steps, threads)
	}
	var sink atomic.Uint64 // keeps the buffers' contents observably used
	// measureVariant times one run of variant on n threads.
	measureVariant := func(n int, variant string) (ZeroingRow, error) {
		// Each worker's pool starts with live buffers whose pages are all
		// touched already: the steady state of a pool is reuse.
		pools := make([]*bufPool, n)
		for w := range pools {
			pools[w] = &bufPool{size: int(size)}
			if variant == "pool" || variant == "pool-clear" {
				bufs := make([][]byte, live)
				for i := range bufs {
					bufs[i] = pools[w].get()
					fill(bufs[i], len(bufs[i]), src)
				}
				for _, b := range bufs {
					pools[w].put(b)
				}
			}
		}
		var clearNS atomic.Int64
		label := fmt.Sprintf("%s, %d threads", variant, n)
		st, err := runWorkers(ctx, hooks, label, n, func(w int) error {
			// Allocation i replaces the buffer in slot i%live, which is
			// dropped (make), returned to the pool or unmapped.
			pool := pools[w]
			slots := make([][]byte, live)
			unmap := make([]func() error, live)
			evict := func(j int) error {
				b := slots[j]
				slots[j] = nil
				switch {
				case b == nil:
				case variant == "pool" || variant == "pool-clear":
					pool.put(b)
				case variant == "mmap":
					return unmap[j]()
				}
				return nil
			}
			defer func() {
				for j := range slots {
					_ = evict(j)
				}
			}()
			var local uint64
			for i := range allocs {
				if i&7 == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
				j := i % live
				if err := evict(j); err != nil {
					return err
				}
				var b []byte
				switch variant {
				case "make":
					b = make([]byte, size)
				case "pool", "pool-clear":
					b = pool.get()
					if variant == "pool-clear" {
						c0 := threadclock.CPU()
						clear(b)
						clearNS.Add(int64(threadclock.CPU() - c0))
					}
				case "mmap":
					var err error
					if b, unmap[j], err = freshmem.Map(int(size)); err != nil {
						return err
					}
				}
				fill(b, touched, src)
				local += uint64(b[len(b)-1]) + uint64(b[0])
				slots[j] = b
			}
			sink.Add(local)
			return nil
		})
		if err != nil {
			return ZeroingRow{}, err
		}
		var made int64
		for _, p := range pools {
			made += p.made
		}
		wall := max(st.Wall, 1)
		ops := float64(allocs) * float64(n)
		row := ZeroingRow{Variant: variant, Threads: n, WallNS: wall.Nanoseconds(),
			NSPerOp:     float64(wall.Nanoseconds()) / float64(allocs),
			CPUNSPerOp:  float64(st.CPUTotal()) / ops,
			CPUShare:    st.CPUShare(),
			FaultsPerOp: float64(st.FaultsTotal()) / ops,
		}
		switch variant {
		case "make", "pool-clear":
			row.ZeroedPerOp = size
		case "mmap":
			row.ZeroedPerOp = touchedPages
		}
		if variant == "pool" || variant == "pool-clear" {
			row.NewBuffers = made
		}
		if variant == "pool-clear" && clearNS.Load() > 0 {
			row.ZeroGBps = float64(size) * ops / float64(clearNS.Load())
		}
		return row, nil
	}
	for _, n := range steps {
		// The variants take turns, round after round (forwards, then
		// backwards); each row is the median round by cost.
		runs := make([][]ZeroingRow, len(variants))
		for rep := range reps {
			for _, vi := range alternate(len(variants), rep) {
				row, err := measureVariant(n, variants[vi])
				if err != nil {
					return err
				}
				runs[vi] = append(runs[vi], row)
			}
		}
		if n == 1 {
			data.Verdict = zeroingVerdict(variants, runs)
		}
		var rows []ZeroingRow
		for _, rr := range runs {
			rr = slices.Clone(rr)
			slices.SortFunc(rr, func(a, b ZeroingRow) int { return cmp.Compare(a.cost(), b.cost()) })
			rows = append(rows, rr[len(rr)/2])
		}
		// Compare with the pool (no zeroing) at the same thread count.
		var pool float64
		for i := range rows {
			if rows[i].Variant == "pool" {
				pool = rows[i].cost()
			}
		}
		for i := range rows {
			if pool == 0 || rows[i].Variant == "pool" {
				continue
			}
			rows[i].ExtraNSPerOp = rows[i].cost() - pool
			if rows[i].Variant != "pool-clear" && rows[i].ExtraNSPerOp > 0 && rows[i].ZeroedPerOp > 0 {
				rows[i].ZeroGBps = float64(rows[i].ZeroedPerOp) / rows[i].ExtraNSPerOp
			}
		}
		data.Rows = append(data.Rows, rows...)
	}
	_ = sink.Load()

	r.Data = data
	t := Table{
		Title: fmt.Sprintf("%s buffers, %s filled each, %d allocations per thread, %d alive per thread, median of %d alternating rounds", units.FormatBytes(size),
			units.FormatBytes(int64(touched)), allocs, live, reps),
		Columns: []string{"variant", "threads", "wall", "wall ns/op", "CPU ns/op", "vs pool", "extra vs pool",
			"zeroed/op", "zeroing GB/s/thread", "faults/op", "CPU share"},
	}
	for _, row := range data.Rows {
		extra, gbps, vs := "-", "-", "-"
		if row.Variant != "pool" && row.ExtraNSPerOp != 0 {
			extra = fmt.Sprintf("%+.0f ns", row.ExtraNSPerOp)
		}
		if row.ZeroGBps > 0 {
			gbps = fmt.Sprintf("%.1f", row.ZeroGBps)
		}
		for _, base := range data.Rows {
			if base.Variant == "pool" && base.Threads == row.Threads {
				vs = fmtRatio(row.cost() / base.cost())
			}
		}
		t.Rows = append(t.Rows, []string{row.Variant, strconv.Itoa(row.Threads), fmtMs(row.WallNS),
			fmt.Sprintf("%.0f", row.NSPerOp), fmt.Sprintf("%.0f", row.CPUNSPerOp), vs, extra,
			units.FormatBytes(row.ZeroedPerOp), gbps, fmt.Sprintf("%.0f", row.FaultsPerOp), fmt.Sprintf("%.0f%%", 100*row.CPUShare)})
	}
	r.Tables = append(r.Tables, t)
	// The chart plots what the lesson's prediction reads: CPU time per
	// operation (wall time where no CPU clock exists), by variant.
	c := &Chart{Title: "CPU time per allocation and use", XTitle: "variant", YTitle: "CPU ns per op", Bars: true}
	byThreads := map[int]int{}
	for _, row := range data.Rows {
		i, ok := byThreads[row.Threads]
		if !ok {
			i = len(c.Series)
			byThreads[row.Threads] = i
			c.Series = append(c.Series, ChartSeries{Name: fmt.Sprintf("%d thread%s", row.Threads, map[bool]string{true: "", false: "s"}[row.Threads == 1])})
		}
		c.Series[i].Points = append(c.Series[i].Points, ChartPoint{Label: row.Variant, Y: row.cost()})
	}
	r.Chart = c
	r.Notes = append(r.Notes,
		"make: Go always hands out zeroed memory; the runtime clears a reused heap span itself, while a span fresh from the OS was zeroed by the kernel page by page on first touch; the garbage collector's work is part of make's cost",
		"pool: a per-thread free list returns buffers without clearing them (the Oxla fix: no value-initialisation); pool-clear clears each reused buffer explicitly (the make_shared behaviour) and times that clear in thread CPU time",
		"comparisons (vs pool, extra, implied GB/s) use thread CPU time per operation where the OS provides it, so that waiting for a core on a busy machine does not count; make's background GC work runs on other threads and is not in its CPU column",
		"faults/op counts page faults on the worker's thread: one per fresh 4 KiB page touched. Where make shows them, its buffer came as fresh pages from the OS (the heap was growing, or the runtime's scavenger had returned freed pages), and the kernel zeroed each page at its fault",
		"mmap: fresh anonymous pages, zeroed by the kernel only where touched, plus a page fault per 4 KiB page and the munmap",
		"Oxla (blog post on std::make_shared zeroing large objects): make_shared value-initialised an 8 MiB struct, so memset dominated a cold-query profile; skipping it made a fill-after-allocation benchmark ~19% faster on one thread but ~40% faster with all threads (0.702 s vs 0.420 s), because all cores share the memory channels",
	)
	for _, s := range data.Skipped {
		r.Notes = append(r.Notes, "skipped "+s)
	}
	for _, row := range data.Rows {
		if row.Variant == "mmap" && row.Threads == 1 && row.FaultsPerOp >= 1 && row.ExtraNSPerOp > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("here one fresh-page fault (kernel zeroing included) costs about %.1f µs of CPU: mmap's extra cost over the pool divided by its faults",
				row.ExtraNSPerOp/row.FaultsPerOp/1e3))
		}
	}
	if note := zeroingComparison(data.Rows, steps); note != "" {
		r.Notes = append(r.Notes, note)
	}
	if err := modelZeroing(ctx, data, variants, r); err != nil {
		return err
	}
	if data.Verdict.Text != "" {
		r.Notes = append(r.Notes, "verdict (1 thread, CPU time per operation): "+data.Verdict.Text)
	}
	return nil
}

// modelOps is how many operations of each variant the model replays.
const modelOps = 4

// modelZeroing replays one thread's operations through the cache model:
// make zeroes a fresh buffer and then writes the touched part, pool-clear
// zeroes its reused buffer and writes, pool only writes. The lines they
// move to and from memory per operation are what the zeroing costs in
// bandwidth. mmap's zeroing happens in the kernel and is not modelled.
func modelZeroing(ctx context.Context, d *ZeroingData, variants []string, r *Result) error {
	size := min(d.Size, 64<<20)
	touched := min(d.Touched, size)
	for _, v := range variants {
		if v == "mmap" {
			continue
		}
		pass := func(s *cachesim.Sim) error {
			for op := range int64(modelOps) {
				base := uint64(1 << 36)
				if v == "make" {
					base += uint64(op * size) // fresh memory each time
				}
				if v != "pool" {
					for off := int64(0); off < size; off += 64 {
						if off%(modelEvery*64) == 0 && ctx.Err() != nil {
							return ctx.Err()
						}
						s.Store(base+uint64(off), 64)
					}
				}
				for off := int64(0); off < touched; off += 8 {
					if off%(modelEvery*8) == 0 && ctx.Err() != nil {
						return ctx.Err()
					}
					s.Store(base+uint64(off), 8)
				}
			}
			return nil
		}
		m, err := modelSide(ctx, v, modelOps, nil, pass)
		if err != nil {
			return err
		}
		d.Modelled = append(d.Modelled, m)
	}
	if len(d.Modelled) == 0 {
		return nil
	}
	r.Tables = append(r.Tables, modelTable(fmt.Sprintf("%d operations of one thread on %s buffers", modelOps, units.FormatBytes(size)), "op", d.Modelled))
	r.Notes = append(r.Notes, "modelled: zeroing a buffer beyond the caches reads every line for ownership and writes it back, so make and pool-clear move the whole buffer through memory on every operation while pool moves only what it fills; with one thread this is the extra work the timing shows, with many threads it is the shared memory bandwidth they compete for")
	return nil
}

// zeroingVerdict compares make with the pool round by round (runs[i] are
// variants[i]'s rounds); no verdict when either was not run.
func zeroingVerdict(variants []string, runs [][]ZeroingRow) Verdict {
	mk, pl := slices.Index(variants, "make"), slices.Index(variants, "pool")
	if mk < 0 || pl < 0 {
		return Verdict{}
	}
	n := min(len(runs[mk]), len(runs[pl]))
	ratios := make([]float64, n)
	for i := range n {
		ratios[i] = runs[mk][i].cost() / runs[pl][i].cost()
	}
	return judge(comparison{A: "make", B: "pool",
		Model: "make costs more per buffer than the pool, since it hands out zeroed memory (a clear, or a fault per fresh page)"}, ratios, "")
}

// zeroingComparison states the make-vs-pool cost ratio at 1 and N threads.
func zeroingComparison(rows []ZeroingRow, steps []int) string {
	if len(steps) < 2 {
		return ""
	}
	ratio := func(threads int) float64 {
		var mk, pl float64
		for _, r := range rows {
			if r.Threads != threads {
				continue
			}
			switch r.Variant {
			case "make":
				mk = r.cost()
			case "pool":
				pl = r.cost()
			}
		}
		if mk == 0 || pl == 0 {
			return 0
		}
		return mk / pl
	}
	one, all := ratio(steps[0]), ratio(steps[1])
	if one == 0 || all == 0 {
		return ""
	}
	return fmt.Sprintf("here: make costs %.2fx the pool on 1 thread and %.2fx on %d threads (CPU time per operation)", one, all, steps[1])
}
