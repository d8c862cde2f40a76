package experiment

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"
)

// FalseSharingData is the typed result of the false-sharing experiment.
type FalseSharingData struct {
	Threads    int               `json:"threads"`
	Iterations int               `json:"iterations"`  // per thread, per run; 0: timed runs
	DurationNS int64             `json:"duration_ns"` // length of a timed run
	Reps       int               `json:"reps"`
	Rows       []FalseSharingRow `json:"rows"`
	// Verdict compares packed with padded-128 in the first mode, round by
	// round (two or more threads only).
	Verdict
}

// FalseSharingRow is the median of Reps runs of one layout and update mode.
type FalseSharingRow struct {
	Layout  string  `json:"layout"` // packed, padded-64, padded-128
	Stride  int     `json:"stride"` // bytes between neighbouring counters
	Mode    string  `json:"mode"`   // atomic or plain
	WallNS  int64   `json:"wall_ns"`
	OpsPerS float64 `json:"ops_per_s"` // all threads together, by wall time
	// CPUNSPerOp is the threads' CPU time per increment, which excludes
	// time spent waiting for a core on a busy machine (0 if unknown).
	CPUNSPerOp float64 `json:"cpu_ns_per_op"`
	// CPUShare is the fraction of wall x threads the threads were running.
	CPUShare float64 `json:"cpu_share"`
	// Overlap is the fraction of a thread's chunks of 16384 increments
	// during which another thread also made progress, averaged over the
	// threads: near 1 when they truly ran side by side, near 0 when the
	// OS ran them one after another (then nothing was shared).
	Overlap float64 `json:"overlap"`
	// Slowdown is CPU time per increment relative to padded-128 in the same
	// mode (wall time where no CPU clock exists).
	Slowdown float64 `json:"slowdown"`
}

func falseSharingSpec() Spec {
	s := Spec{
		Name: "false-sharing",
		Summary: "each thread increments its own counter; counters packed in one cache line vs padded " +
			"to 64 B and 128 B (ClickHouse ProfileEvents)",
		Params: []Param{
			{"threads", strconv.Itoa(defaultThreads()), "goroutines, each with its own counter (1..256)"},
			{"duration", "100ms", "length of each run; every thread increments until it ends"},
			{"iterations", "0", "if > 0, an exact number of increments per thread per run instead of a duration"},
			{"reps", "5", "rounds; each runs every layout once, in alternating order; the median is reported"},
			{"modes", "atomic,plain", "update modes: atomic (LOCK XADD) and/or plain (load+store)"},
		},
	}
	s.Run = func(ctx context.Context, raw map[string]string, hooks *Hooks) (*Result, error) {
		return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
			return falseSharing(ctx, p, r, hooks)
		})
	}
	s.Model = func(ctx context.Context, raw map[string]string, _ *Hooks) (*Result, error) {
		return falseSharingModel(ctx, s, raw)
	}
	return s
}

// counterLayouts are the strides measured: 8 B puts eight counters in one
// 64-byte line; 64 B gives each its own line; 128 B also keeps the line
// pairs apart that the adjacent-line (spatial) prefetcher fetches together.
var counterLayouts = [...]struct {
	name   string
	stride int
}{{"packed", 8}, {"padded-64", 64}, {"padded-128", 128}}

// counterBlock returns n counters stride bytes apart, the first on a
// 128-byte boundary, inside one freshly allocated slice.
func counterBlock(n, stride int) (words []uint64, first, step int) {
	step = stride / 8
	words = make([]uint64, n*step+16)
	off := int(uintptr(unsafe.Pointer(&words[0])) % 128)
	if off != 0 {
		first = (128 - off) / 8
	}
	return words, first, step
}

func falseSharing(ctx context.Context, p *params, r *Result, hooks *Hooks) error {
	threads := p.Int("threads", 1, 256)
	iters := p.Int("iterations", 0, 1<<40)
	dur := p.Duration("duration", time.Millisecond, time.Minute)
	reps := p.Int("reps", 1, 100)
	var modes []string
	for m := range splitList(p.String("modes")) {
		if m != "atomic" && m != "plain" {
			p.fail(fmt.Errorf("modes must list atomic and/or plain, got %q", m))
		}
		modes = append(modes, m)
	}
	if len(modes) == 0 {
		p.fail(fmt.Errorf("modes must list atomic and/or plain, got %q", p.String("modes")))
	}
	if err := p.err(); err != nil {
		return err
	}

	data := &FalseSharingData{Threads: threads, Iterations: iters, Reps: reps}
	if iters == 0 {
		data.DurationNS = dur.Nanoseconds()
	}
	for _, mode := range modes {
		// The layouts take turns, round after round (forwards, then
		// backwards), so that a stretch of a busy machine falls on all of
		// them rather than on one layout's block of runs.
		runs := make([][]FalseSharingRow, len(counterLayouts))
		for rep := range reps {
			for _, li := range alternate(len(counterLayouts), rep) {
				lay := counterLayouts[li]
				words, first, step := counterBlock(threads, lay.stride)
				label := fmt.Sprintf("%s/%s, %d threads", lay.name, mode, threads)
				tracker := newOverlapTracker(threads)
				overlap := make([]float64, threads)
				done := make([]int, threads)
				st, err := runWorkers(ctx, hooks, label, threads, func(w int) error {
					var err error
					done[w], overlap[w], err = tracker.incrementLoop(ctx, w, &words[first+w*step], iters, dur, mode == "atomic")
					return err
				})
				if err != nil {
					return err
				}
				if err := checkCounters(words, first, step, done); err != nil {
					return fmt.Errorf("%s: %w", label, err)
				}
				var ops float64
				for _, d := range done {
					ops += float64(d)
				}
				wall := max(st.Wall, 1)
				row := FalseSharingRow{
					Layout: lay.name, Stride: lay.stride, Mode: mode, WallNS: wall.Nanoseconds(),
					OpsPerS:    ops / wall.Seconds(),
					CPUNSPerOp: float64(st.CPUTotal()) / ops,
					CPUShare:   st.CPUShare(),
				}
				if threads > 1 {
					for _, f := range overlap {
						row.Overlap += f / float64(threads)
					}
				}
				runs[li] = append(runs[li], row)
			}
		}
		if threads > 1 && data.Verdict.Text == "" {
			data.Verdict = falseSharingVerdict(runs[0], runs[len(runs)-1])
		}
		var rows []FalseSharingRow
		for _, rr := range runs {
			// The median, not the fastest: on a busy machine the fastest
			// run tends to be the one whose threads overlapped least.
			rr = slices.Clone(rr)
			slices.SortFunc(rr, func(a, b FalseSharingRow) int { return cmp.Compare(a.cost(), b.cost()) })
			rows = append(rows, rr[len(rr)/2])
		}
		base := rows[len(rows)-1].cost()
		for i := range rows {
			rows[i].Slowdown = rows[i].cost() / base
		}
		data.Rows = append(data.Rows, rows...)
	}
	r.Data = data
	t := Table{
		Title: fmt.Sprintf("%d threads, %s, median of %d", threads, runLength(iters, dur), reps),
		Columns: []string{"layout", "stride", "mode", "wall", "ops/s (all)", "CPU ns/op", "CPU share",
			"overlap", "vs padded-128"},
	}
	for _, row := range data.Rows {
		t.Rows = append(t.Rows, []string{row.Layout, fmt.Sprintf("%d B", row.Stride), row.Mode,
			fmtMs(row.WallNS), fmtRate(row.OpsPerS), fmt.Sprintf("%.2f", row.CPUNSPerOp),
			fmt.Sprintf("%.0f%%", 100*row.CPUShare), fmt.Sprintf("%.0f%%", 100*row.Overlap), fmtRatio(row.Slowdown)})
	}
	r.Tables = append(r.Tables, t)
	r.Notes = append(r.Notes,
		"checked: every counter ended at exactly the increments its thread made, and the padding was never written",
		"packed: 8 counters share one 64-byte line, so every increment must take the line away from the other cores (false sharing)",
		"CPU ns/op is the threads' CPU time per increment; it leaves out time spent waiting for a core, so it stays meaningful on a busy machine. overlap is the share of 16384-increment chunks during which another thread also advanced: false sharing can only cost where threads overlap, so low overlap (a busy machine) hides it",
		"padded-128 also separates the line pairs that the adjacent-line prefetcher pulls in together",
		"ClickHouse (Intel's high-core-count article): ProfileEvents::increment took 36.6% of cycles on Q3 on 2x240 vCPUs until the counters were cache-line aligned (PR #82697)",
	)
	if threads == 1 {
		r.Notes = append(r.Notes, "with 1 thread nothing is shared: expect no slowdown")
	}
	if data.Verdict.Text != "" {
		r.Notes = append(r.Notes, fmt.Sprintf("verdict (%s mode): %s", data.Rows[0].Mode, data.Verdict.Text))
	}
	return nil
}

// minOverlap is the least overlap (see FalseSharingRow.Overlap) at which a
// false-sharing verdict is drawn: below it the threads mostly took turns,
// and took turns sharing nothing.
const minOverlap = 0.5

// falseSharingVerdict compares packed with padded-128 round by round (the
// i-th run of each was taken in the same alternation).
func falseSharingVerdict(packed, padded []FalseSharingRow) Verdict {
	n := min(len(packed), len(padded))
	ratios := make([]float64, n)
	var overlaps []float64
	for i := range n {
		ratios[i] = packed[i].cost() / padded[i].cost()
		overlaps = append(overlaps, packed[i].Overlap, padded[i].Overlap)
	}
	var apart string
	if ov := median(overlaps); ov < minOverlap {
		apart = fmt.Sprintf("the threads overlapped only %.0f%% of the time (median), so they had little to share", 100*ov)
	}
	return judge(comparison{A: "packed", B: "padded-128",
		Model: "packed counters cost several times more per increment whenever the threads run at the same time"}, ratios, apart)
}

// cost is what the median and the slowdown compare: CPU time per increment, or
// wall time when the OS has no per-thread CPU clock.
func (r *FalseSharingRow) cost() float64 {
	if r.CPUNSPerOp > 0 {
		return r.CPUNSPerOp
	}
	return float64(r.WallNS)
}

// checkCounters verifies that counter w holds exactly done[w] and that no
// word outside the counters was written.
func checkCounters(words []uint64, first, step int, done []int) error {
	var sum, want uint64
	for i, v := range words {
		if i >= first && (i-first)%step == 0 && (i-first)/step < len(done) {
			w := (i - first) / step
			if v != uint64(done[w]) {
				return fmt.Errorf("counter %d is %d, want %d", w, v, done[w])
			}
			sum += v
		} else if v != 0 {
			return fmt.Errorf("word %d outside the counters was written", i)
		}
	}
	for _, d := range done {
		want += uint64(d)
	}
	if sum != want {
		return fmt.Errorf("counters sum to %d, want %d", sum, want)
	}
	return nil
}

func runLength(iters int, dur time.Duration) string {
	if iters > 0 {
		return fmt.Sprintf("%d increments each", iters)
	}
	return fmt.Sprintf("%s runs", dur)
}

// incAtomic adds 1 to *c n times with atomic read-modify-write.
//
//go:noinline
func incAtomic(c *uint64, n int) {
	for range n {
		atomic.AddUint64(c, 1)
	}
}

// incPlain adds 1 to *c n times with plain loads and stores. The counter is
// reached through a pointer and the function is not inlined, so the
// compiler keeps the load and store inside the loop (an INCQ on memory;
// checked with go build -gcflags=-S).
//
//go:noinline
func incPlain(c *uint64, n int) {
	for range n {
		*c++
	}
}

// chunkIncrements is how many increments a worker does between looks at
// the context and at the other workers' progress.
const chunkIncrements = 1 << 14

// overlapTracker estimates how much of the time the workers really ran at
// the same moment, which false sharing needs: each worker publishes its
// finished chunks in its own padded slot and, after each chunk, checks
// whether any other worker finished a chunk meanwhile.
type overlapTracker struct {
	slots []uint64 // worker w's progress at slots[w*16] (128 bytes apart)
}

func newOverlapTracker(n int) *overlapTracker {
	return &overlapTracker{slots: make([]uint64, n*16)}
}

// incrementLoop runs worker w's increments in chunks, iters of them or,
// if iters is 0, until dur has passed. It returns how many it made and the
// fraction of its chunks during which another worker made progress.
func (o *overlapTracker) incrementLoop(ctx context.Context, w int, c *uint64, iters int, dur time.Duration, atomicMode bool) (int, float64, error) {
	n := len(o.slots) / 16
	others := func() uint64 {
		var sum uint64
		for i := range n {
			if i != w {
				sum += atomic.LoadUint64(&o.slots[i*16])
			}
		}
		return sum
	}
	deadline := time.Now().Add(dur)
	var done, chunks, overlapped int
	before := others()
	for {
		if iters > 0 && done >= iters || iters == 0 && chunks > 0 && !time.Now().Before(deadline) {
			break
		}
		k := chunkIncrements
		if iters > 0 {
			k = min(iters-done, chunkIncrements)
		}
		if atomicMode {
			incAtomic(c, k)
		} else {
			incPlain(c, k)
		}
		done += k
		chunks++
		atomic.AddUint64(&o.slots[w*16], 1)
		if after := others(); after != before {
			overlapped++
			before = after
		}
		if err := ctx.Err(); err != nil {
			return done, 0, err
		}
	}
	return done, float64(overlapped) / float64(max(chunks, 1)), nil
}
