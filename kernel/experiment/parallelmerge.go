package experiment

import (
	"cmp"
	"context"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// ParallelMergeData is the typed result of the parallel-merge experiment.
type ParallelMergeData struct {
	Rows    int                `json:"rows"`   // total rows, split over the threads
	Groups  int                `json:"groups"` // distinct keys drawn from
	Buckets int                `json:"buckets"`
	Reps    int                `json:"reps"` // rounds per thread count; each row is the median
	Runs    []ParallelMergeRow `json:"runs"`
	// Verdict compares the serial merge's wall time with the two-level
	// merge's at the largest thread count, round by round.
	Verdict
}

// ParallelMergeRow is one strategy at one thread count.
type ParallelMergeRow struct {
	Threads  int    `json:"threads"`
	Strategy string `json:"strategy"` // serial or two-level
	BuildNS  int64  `json:"build_ns"` // wall time of the build phase
	MergeNS  int64  `json:"merge_ns"` // wall time of the merge phase
	// BuildCPUNS and MergeCPUNS are the phases' CPU time, all threads.
	BuildCPUNS int64 `json:"build_cpu_ns"`
	MergeCPUNS int64 `json:"merge_cpu_ns"`
	// Partial is the number of entries in all per-thread tables together:
	// the work the merge must do.
	Partial int64 `json:"partial"`
	// Groups is the number of entries of the merged result.
	Groups int `json:"groups"`
	// MergeCPUShare is the fraction of the merge's wall time x its threads
	// (at most GOMAXPROCS of them) that the merge threads were on a CPU:
	// near 1 when they ran side by side, low when they waited for cores
	// (0 when unknown).
	MergeCPUShare float64 `json:"merge_cpu_share"`
}

func parallelMergeSpec() Spec {
	s := Spec{
		Name: "parallel-merge",
		Summary: "per-thread hash tables merged serially into one vs merged bucket by bucket in parallel " +
			"(two-level, 256 buckets), as threads grow (ClickHouse Q5)",
		Params: []Param{
			{"threads", strconv.Itoa(max(4, defaultThreads())), "largest thread count; runs 1, 2, 4, ... up to it (1..256)"},
			{"rows", "1000000", "rows aggregated, split evenly over the threads"},
			{"groups", "100000", "distinct keys the rows are drawn from"},
			{"buckets", "256", "first-level buckets of the two-level table (a power of two, 2..65536)"},
			{"reps", "3", "rounds per thread count (1..20), serial and two-level taking turns; the median is reported"},
		},
	}
	s.Run = func(ctx context.Context, raw map[string]string, hooks *Hooks) (*Result, error) {
		return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
			return parallelMerge(ctx, p, r, hooks)
		})
	}
	s.Model = func(ctx context.Context, raw map[string]string, hooks *Hooks) (*Result, error) {
		r, err := s.Run(withSerialWorkers(ctx), raw, hooks)
		if err != nil {
			return nil, err
		}
		for i := range r.Tables {
			r.Tables[i].Title = "MODELLED (each thread's work measured here one after another, as if on its own core): " + r.Tables[i].Title
		}
		// Time-sharing does not apply: each modelled thread has a core.
		r.Notes = slices.DeleteFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "threads above GOMAXPROCS") })
		if d, ok := r.Data.(*ParallelMergeData); ok && d.Verdict.Text != "" {
			d.Verdict.Text = "modelled: " + d.Verdict.Text
		}
		if r.Chart != nil {
			r.Chart.Title = "Modelled " + strings.ToLower(r.Chart.Title[:1]) + r.Chart.Title[1:]
		}
		r.Notes = append([]string{"modelled: every thread's build, and every bucket of the two-level merge, ran here one after another on one thread and was timed; " +
			"a phase's time is then the longest of its threads — the time they would take on cores of their own (the two-level merge's buckets dealt out as the workers take them). " +
			"It leaves out what cores share: the L3 and memory bandwidth, so the server's real runs are often slower"}, r.Notes...)
		return r, nil
	}
	s.Memory = func(p *params) int64 {
		// The serial result stays alive while the two-level tables are
		// built: two sets of per-thread maps, each thread's holding at most
		// min(groups, its rows) keys, at about 48 bytes per Go map entry.
		threads := int64(p.Int("threads", 1, 256))
		rows := int64(p.Int("rows", 1, 1<<34))
		groups := int64(p.Int("groups", 1, 1<<34))
		buckets := int64(p.Int("buckets", 2, 65536))
		entries := min(groups*threads, rows+threads)
		return 2*48*entries + buckets*threads*64 + 1<<20
	}
	return s
}

// keyOfRow returns row i's key: a pseudo-random draw from [0, groups),
// the same for every strategy and thread count.
func keyOfRow(i, groups uint64) uint64 { return mix64(i+1) % groups }

// bucketOf picks a key's first-level bucket from the top bits of its hash.
func bucketOf(k uint64, shift uint) uint64 { return mix64(k^0x5bd1e995) >> shift }

// rowRange returns worker w's share [lo, hi) of rows split over n workers.
func rowRange(rows, n, w int) (lo, hi uint64) {
	return uint64(rows * w / n), uint64(rows * (w + 1) / n)
}

func parallelMerge(ctx context.Context, p *params, r *Result, hooks *Hooks) error {
	threads := p.Int("threads", 1, 256)
	rows := p.Int("rows", 1, 1<<34)
	groups := p.Int("groups", 1, 1<<34)
	buckets := p.Int("buckets", 2, 65536)
	reps := p.Int("reps", 1, 20)
	if buckets&(buckets-1) != 0 {
		p.fail(fmt.Errorf("buckets must be a power of two, got %d", buckets))
	}
	if err := p.err(); err != nil {
		return err
	}
	shift := uint(64 - bits.TrailingZeros(uint(buckets)))
	g := uint64(groups)
	data := &ParallelMergeData{Rows: rows, Groups: groups, Buckets: buckets, Reps: reps}

	steps := threadSteps(threads)
	for _, n := range steps {
		var serialRuns, twoRuns []ParallelMergeRow
		for rep := range reps {
			var serial map[uint64]uint64
			var merged []map[uint64]uint64
			for _, side := range alternate(2, rep) {
				var row ParallelMergeRow
				var err error
				if side == 0 {
					serial, row, err = serialMerge(ctx, hooks, rows, g, n)
					serialRuns = append(serialRuns, row)
				} else {
					merged, row, err = twoLevelMerge(ctx, hooks, rows, g, n, buckets)
					twoRuns = append(twoRuns, row)
				}
				if err != nil {
					return err
				}
			}
			if err := checkMerged(serial, merged, shift, uint64(rows)); err != nil {
				return fmt.Errorf("%d threads: %w", n, err)
			}
		}
		if n == steps[len(steps)-1] && n > 1 {
			data.Verdict = mergeVerdict(serialRuns, twoRuns)
		}
		data.Runs = append(data.Runs, medianMergeRow(serialRuns), medianMergeRow(twoRuns))
	}

	r.Data = data
	t := Table{
		Title:   fmt.Sprintf("%d rows over %d distinct keys, %d buckets, median of %d alternating rounds", rows, groups, buckets, reps),
		Columns: []string{"threads", "strategy", "build", "merge", "total", "merge share", "merge CPU", "merge CPU share", "entries merged", "groups"},
	}
	for _, row := range data.Runs {
		total := row.BuildNS + row.MergeNS
		t.Rows = append(t.Rows, []string{strconv.Itoa(row.Threads), row.Strategy, fmtMs(row.BuildNS), fmtMs(row.MergeNS),
			fmtMs(total), fmt.Sprintf("%.0f%%", 100*float64(row.MergeNS)/float64(max(total, 1))), fmtMs(row.MergeCPUNS),
			fmt.Sprintf("%.0f%%", 100*row.MergeCPUShare), strconv.FormatInt(row.Partial, 10), strconv.Itoa(row.Groups)})
	}
	r.Tables = append(r.Tables, t)
	// The chart plots the merge alone, the phase the lesson's prediction
	// compares; the build is the same work for both strategies.
	c := &Chart{Title: "Merge time by thread count", XTitle: "threads", YTitle: "merge ms (wall)"}
	for _, strategy := range []string{"serial", "two-level"} {
		sr := ChartSeries{Name: strategy + " merge"}
		for _, row := range data.Runs {
			if row.Strategy == strategy {
				sr.Points = append(sr.Points, ChartPoint{X: float64(row.Threads), Y: float64(row.MergeNS) / 1e6})
			}
		}
		c.Series = append(c.Series, sr)
	}
	r.Chart = c
	r.Notes = append(r.Notes,
		"checked: the serial and the two-level results hold the same keys and counts, and the counts add up to rows",
		"more threads mean more partial tables holding the same keys: the serial merge does more work as threads grow, while the two-level merge splits it over the threads",
		"ClickHouse (Intel's high-core-count article): Q5 slowed from 80 to 112 threads because mixed single/two-level tables forced a serial conversion; converting in parallel gave +264% on 2x112 vCPUs, and parallel merging of single-level tables +235%",
		"merge CPU is the merge's CPU time over all threads: the two-level merge also needs less of it, because each bucket's maps are small enough to stay in cache while the serial merge writes into one table of every group",
		"Go maps stand in for ClickHouse's open-addressing tables; here each thread builds the two-level layout directly instead of converting",
	)
	if data.Verdict.Text != "" {
		r.Notes = append(r.Notes, fmt.Sprintf("verdict (merge phase, %d threads, wall time): %s", steps[len(steps)-1], data.Verdict.Text))
	}
	if threads > r.Machine.GOMAXPROCS {
		r.Notes = append(r.Notes, fmt.Sprintf("threads above GOMAXPROCS (%d) time-share cores, so build and merge times there show the extra work, not extra parallelism", r.Machine.GOMAXPROCS))
	}
	return nil
}

// serialMerge builds one flat map per thread from its share of the rows,
// then merges them one after another into the first (ht1 + ht2 -> result,
// result + ht3, ...) on a single goroutine.
func serialMerge(ctx context.Context, hooks *Hooks, rows int, groups uint64, n int) (map[uint64]uint64, ParallelMergeRow, error) {
	row := ParallelMergeRow{Threads: n, Strategy: "serial"}
	flat := make([]map[uint64]uint64, n)
	build, err := runWorkers(ctx, hooks, fmt.Sprintf("serial build, %d threads", n), n, func(w int) error {
		m := make(map[uint64]uint64)
		lo, hi := rowRange(rows, n, w)
		for i := lo; i < hi; i++ {
			m[keyOfRow(i, groups)]++
			if i&0xffff == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
		}
		flat[w] = m
		return nil
	})
	if err != nil {
		return nil, row, err
	}
	for _, m := range flat {
		row.Partial += int64(len(m))
	}
	merge, err := runWorkers(ctx, hooks, fmt.Sprintf("serial merge, %d threads", n), 1, func(int) error {
		dst := flat[0]
		for _, src := range flat[1:] {
			for k, v := range src {
				dst[k] += v
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		return nil
	})
	if err != nil {
		return nil, row, err
	}
	row.setTimes(build, merge)
	row.Groups = len(flat[0])
	return flat[0], row, nil
}

// twoLevelMerge builds one two-level table per thread: buckets maps, a key
// going to the bucket named by the top bits of its hash. Then n merge
// workers each take a whole bucket at a time and merge that bucket of every
// thread's table into the first thread's. It returns the merged buckets.
func twoLevelMerge(ctx context.Context, hooks *Hooks, rows int, groups uint64, n, buckets int) ([]map[uint64]uint64, ParallelMergeRow, error) {
	row := ParallelMergeRow{Threads: n, Strategy: "two-level"}
	shift := uint(64 - bits.TrailingZeros(uint(buckets)))
	two := make([][]map[uint64]uint64, n)
	build, err := runWorkers(ctx, hooks, fmt.Sprintf("two-level build, %d threads", n), n, func(w int) error {
		t := make([]map[uint64]uint64, buckets)
		for b := range t {
			t[b] = make(map[uint64]uint64)
		}
		lo, hi := rowRange(rows, n, w)
		for i := lo; i < hi; i++ {
			k := keyOfRow(i, groups)
			t[bucketOf(k, shift)][k]++
			if i&0xffff == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
		}
		two[w] = t
		return nil
	})
	if err != nil {
		return nil, row, err
	}
	for _, t := range two {
		for _, m := range t {
			row.Partial += int64(len(m))
		}
	}
	mergeBucket := func(b int) error {
		dst := two[0][b]
		for _, t := range two[1:] {
			for k, v := range t[b] {
				dst[k] += v
			}
		}
		return ctx.Err()
	}
	var assigned [][]int
	if serialWorkers(ctx) {
		assigned = scheduleBuckets(two, n, buckets)
	}
	var next atomic.Int64
	merge, err := runWorkers(ctx, hooks, fmt.Sprintf("two-level merge, %d threads", n), n, func(w int) error {
		if assigned != nil { // one after another: the buckets each would take
			for _, b := range assigned[w] {
				if err := mergeBucket(b); err != nil {
					return err
				}
			}
			return nil
		}
		for {
			b := int(next.Add(1) - 1)
			if b >= buckets {
				return nil
			}
			if err := mergeBucket(b); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return nil, row, err
	}
	row.setTimes(build, merge)
	for _, m := range two[0] {
		row.Groups += len(m)
	}
	return two[0], row, nil
}

// scheduleBuckets assigns the buckets, in order, each to the worker with
// the least work so far (the entries it merges): what the workers taking
// the next bucket from a shared counter do when they run at once.
func scheduleBuckets(two [][]map[uint64]uint64, n, buckets int) [][]int {
	out := make([][]int, n)
	load := make([]int, n)
	for b := range buckets {
		work := 1
		for _, t := range two[1:] {
			work += len(t[b])
		}
		w := 0
		for i := range load {
			if load[i] < load[w] {
				w = i
			}
		}
		out[w] = append(out[w], b)
		load[w] += work
	}
	return out
}

func (r *ParallelMergeRow) setTimes(build, merge runStats) {
	r.BuildNS, r.MergeNS = build.Wall.Nanoseconds(), merge.Wall.Nanoseconds()
	r.BuildCPUNS, r.MergeCPUNS = build.CPUTotal().Nanoseconds(), merge.CPUTotal().Nanoseconds()
	if merge.Wall > 0 && len(merge.CPU) > 0 {
		procs := min(len(merge.CPU), runtime.GOMAXPROCS(0))
		if merge.Serial { // modelled: a core per worker
			procs = len(merge.CPU)
		}
		r.MergeCPUShare = float64(merge.CPUTotal()) / (float64(merge.Wall) * float64(procs))
	}
}

// medianMergeRow returns the run with the median merge time.
func medianMergeRow(runs []ParallelMergeRow) ParallelMergeRow {
	rs := slices.Clone(runs)
	slices.SortFunc(rs, func(a, b ParallelMergeRow) int { return cmp.Compare(a.MergeNS, b.MergeNS) })
	return rs[len(rs)/2]
}

// minMergeShare is the least median CPU share of the two-level merge at
// which the merge comparison draws a verdict: the merge is timed by the
// wall clock, the point being that its threads run at once. With more
// threads than CPUs a short merge keeps only about one CPU busy even on an
// idle machine (half of two vCPUs here), while other programs taking the
// CPUs push it well below that.
const minMergeShare = 0.3

// mergeVerdict compares the serial merge's wall time with the two-level
// merge's, round by round.
func mergeVerdict(serial, two []ParallelMergeRow) Verdict {
	n := min(len(serial), len(two))
	ratios := make([]float64, n)
	var shares []float64
	for i := range n {
		ratios[i] = float64(serial[i].MergeNS) / float64(max(two[i].MergeNS, 1))
		if two[i].MergeCPUShare > 0 {
			shares = append(shares, two[i].MergeCPUShare)
		}
	}
	var apart string
	if len(shares) > 0 && median(shares) < minMergeShare {
		apart = fmt.Sprintf("the two-level merge's threads were on a CPU only %.0f%% of the time (median CPU share)", 100*median(shares))
	}
	return judge(comparison{A: "serial merge", B: "two-level merge", Faster: true,
		Model: "the two-level merge is faster, by more than its threads alone, since each bucket's tables stay in the caches"}, ratios, apart)
}

// checkMerged compares the serially merged table with the two-level one.
func checkMerged(serial map[uint64]uint64, two []map[uint64]uint64, shift uint, rows uint64) error {
	var n int
	var sum uint64
	for b, m := range two {
		n += len(m)
		for k, v := range m {
			if bucketOf(k, shift) != uint64(b) {
				return fmt.Errorf("key %d is in bucket %d, belongs in %d", k, b, bucketOf(k, shift))
			}
			if serial[k] != v {
				return fmt.Errorf("key %d: serial merge counted %d, two-level %d", k, serial[k], v)
			}
			sum += v
		}
	}
	if n != len(serial) {
		return fmt.Errorf("serial merge has %d keys, two-level %d", len(serial), n)
	}
	if sum != rows {
		return fmt.Errorf("counts add up to %d, want %d rows", sum, rows)
	}
	return nil
}
