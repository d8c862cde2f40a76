package experiment

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"unsafe"
)

// FalseSharingData is the typed result of the false-sharing experiment.
type FalseSharingData struct {
	Threads    int               `json:"threads"`
	Iterations int               `json:"iterations"` // per thread, per run
	Reps       int               `json:"reps"`
	Rows       []FalseSharingRow `json:"rows"`
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
			{"iterations", "2000000", "increments per thread per run"},
			{"reps", "3", "runs per layout; the median is reported"},
			{"modes", "atomic,plain", "update modes: atomic (LOCK XADD) and/or plain (load+store)"},
		},
	}
	s.Run = func(ctx context.Context, raw map[string]string, hooks *Hooks) (*Result, error) {
		return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
			return falseSharing(ctx, p, r, hooks)
		})
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
	iters := p.Int("iterations", 1, 1<<40)
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
	for _, mode := range modes {
		var rows []FalseSharingRow
		for _, lay := range counterLayouts {
			var runs []FalseSharingRow
			for range reps {
				words, first, step := counterBlock(threads, lay.stride)
				label := fmt.Sprintf("%s/%s, %d threads", lay.name, mode, threads)
				st, err := runWorkers(ctx, hooks, label, threads, func(w int) error {
					c := &words[first+w*step]
					if mode == "atomic" {
						return incAtomic(ctx, c, iters)
					}
					return incPlain(ctx, c, iters)
				})
				if err != nil {
					return err
				}
				if err := checkCounters(words, first, step, threads, iters); err != nil {
					return fmt.Errorf("%s: %w", label, err)
				}
				ops := float64(threads) * float64(iters)
				wall := max(st.Wall, 1)
				row := FalseSharingRow{
					Layout: lay.name, Stride: lay.stride, Mode: mode, WallNS: wall.Nanoseconds(),
					OpsPerS:    ops / wall.Seconds(),
					CPUNSPerOp: float64(st.CPUTotal()) / ops,
					CPUShare:   st.CPUShare(),
				}
				runs = append(runs, row)
			}
			// The median, not the fastest: on a busy machine the fastest
			// run tends to be the one whose threads overlapped least.
			slices.SortFunc(runs, func(a, b FalseSharingRow) int { return cmp.Compare(a.cost(), b.cost()) })
			rows = append(rows, runs[len(runs)/2])
		}
		base := rows[len(rows)-1].cost()
		for i := range rows {
			rows[i].Slowdown = rows[i].cost() / base
		}
		data.Rows = append(data.Rows, rows...)
	}
	r.Data = data
	t := Table{
		Title: fmt.Sprintf("%d threads x %d increments, median of %d", threads, iters, reps),
		Columns: []string{"layout", "stride", "mode", "wall", "ops/s (all)", "CPU ns/op", "CPU share",
			"vs padded-128"},
	}
	for _, row := range data.Rows {
		t.Rows = append(t.Rows, []string{row.Layout, fmt.Sprintf("%d B", row.Stride), row.Mode,
			fmtMs(row.WallNS), fmtRate(row.OpsPerS), fmt.Sprintf("%.2f", row.CPUNSPerOp),
			fmt.Sprintf("%.0f%%", 100*row.CPUShare), fmtRatio(row.Slowdown)})
	}
	r.Tables = append(r.Tables, t)
	r.Notes = append(r.Notes,
		fmt.Sprintf("checked: every counter ended at %d and the padding was never written", iters),
		"packed: 8 counters share one 64-byte line, so every increment must take the line away from the other cores (false sharing)",
		"CPU ns/op is the threads' CPU time per increment; it leaves out time spent waiting for a core, so it stays meaningful on a busy machine. A CPU share well under 100% means the threads often did not run at the same time, which hides false sharing",
		"padded-128 also separates the line pairs that the adjacent-line prefetcher pulls in together",
		"ClickHouse (Intel's high-core-count article): ProfileEvents::increment took 36.6% of cycles on Q3 on 2x240 vCPUs until the counters were cache-line aligned (PR #82697)",
	)
	if threads == 1 {
		r.Notes = append(r.Notes, "with 1 thread nothing is shared: expect no slowdown")
	}
	return nil
}

// cost is what the median and the slowdown compare: CPU time per increment, or
// wall time when the OS has no per-thread CPU clock.
func (r *FalseSharingRow) cost() float64 {
	if r.CPUNSPerOp > 0 {
		return r.CPUNSPerOp
	}
	return float64(r.WallNS)
}

// checkCounters verifies that each of the threads' counters holds exactly
// iters and that no word outside the counters was written.
func checkCounters(words []uint64, first, step, threads, iters int) error {
	var sum uint64
	for i, v := range words {
		if i >= first && (i-first)%step == 0 && (i-first)/step < threads {
			if v != uint64(iters) {
				return fmt.Errorf("counter %d is %d, want %d", (i-first)/step, v, iters)
			}
			sum += v
		} else if v != 0 {
			return fmt.Errorf("word %d outside the counters was written", i)
		}
	}
	if want := uint64(threads) * uint64(iters); sum != want {
		return fmt.Errorf("counters sum to %d, want %d", sum, want)
	}
	return nil
}

// incAtomic adds 1 to *c n times with atomic read-modify-write.
func incAtomic(ctx context.Context, c *uint64, n int) error {
	for n > 0 {
		k := min(n, 1<<16)
		for range k {
			atomic.AddUint64(c, 1)
		}
		n -= k
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// incPlain adds 1 to *c n times with plain loads and stores. The counter is
// reached through a pointer that escapes, so the compiler keeps the load and
// store inside the loop (checked with go build -gcflags=-S).
//
//go:noinline
func incPlain(ctx context.Context, c *uint64, n int) error {
	for n > 0 {
		k := min(n, 1<<16)
		for range k {
			*c++
		}
		n -= k
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}
