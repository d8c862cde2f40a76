package experiment

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// C2CData is the typed result of the c2c experiment.
type C2CData struct {
	Pinned     bool      `json:"pinned"` // threads were pinned to the named CPUs
	PinError   string    `json:"pin_error,omitempty"`
	DurationNS int64     `json:"duration_ns"` // length of one run
	Reps       int       `json:"reps"`
	Rows       []C2CPair `json:"rows"`
}

// C2CPair is one pair of CPUs.
type C2CPair struct {
	A, B     int    `json:"-"`
	CPUs     [2]int `json:"cpus"`               // -1 when not pinned
	Relation string `json:"relation,omitempty"` // from sysfs topology, if published
	// Handovers is the number of times the line changed hands in the
	// median run.
	Handovers int64 `json:"handovers"`
	// NSPerHandover is the wall time per hand-over in the fastest window
	// of windowHandovers hand-overs: the time for one write on one core to
	// become visible to a spinning reader on the other and for that one to
	// take the line and write it. The fastest window is one where both
	// threads were running; on a busy machine most windows are not.
	NSPerHandover float64 `json:"ns_per_handover"`
	// MedianNS is the same for the median window.
	MedianNS float64 `json:"median_ns"`
	// CPUShare is the fraction of wall x 2 the two threads were on a CPU
	// in the median run; well below 1 means they often did not run at the
	// same time.
	CPUShare float64 `json:"cpu_share"`
	// Valid is false when the hand-overs were too slow to be cache
	// transfers (the threads were not running at the same moment).
	Valid bool `json:"valid"`
}

func c2cSpec() Spec {
	s := Spec{
		Name:       "c2c",
		MinThreads: 2,
		Summary: "core-to-core latency: two threads pinned to two named CPUs bounce one cache line, " +
			"each writing only after it saw the other's write",
		Params: []Param{
			{"pairs", "auto", "CPU pairs: auto (the first allowed CPU against each other one, at most 16 pairs), all (every pair, at most 64), or a list such as 0-1,0-2"},
			{"duration", "50ms", "length of each run (1ms..2s)"},
			{"reps", "3", "runs per pair (1..20); the median is reported"},
		},
	}
	s.Run = func(ctx context.Context, raw map[string]string, hooks *Hooks) (*Result, error) {
		return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
			return c2c(ctx, p, r, hooks)
		})
	}
	s.Model = func(ctx context.Context, raw map[string]string, _ *Hooks) (*Result, error) {
		return c2cModel(ctx, s, raw)
	}
	return s
}

// pingLine holds the bounced counter alone in a 128-byte block, so that
// nothing else shares its line or the adjacent one.
type pingLine struct {
	_    [64]byte
	v    atomic.Uint64
	_    [56]byte
	stop atomic.Bool // read-mostly: written once, at the end
}

func c2cPairs(spec string, cpus []int) ([][2]int, error) {
	switch spec {
	case "auto", "all":
		if len(cpus) < 2 {
			return nil, fmt.Errorf("this process may run on %d CPU(s); the experiment needs two", len(cpus))
		}
		var pairs [][2]int
		if spec == "auto" {
			for _, c := range cpus[1:] {
				pairs = append(pairs, [2]int{cpus[0], c})
			}
			return pairs[:min(len(pairs), 16)], nil
		}
		for i, a := range cpus {
			for _, b := range cpus[i+1:] {
				if len(pairs) == 64 {
					return pairs, nil
				}
				pairs = append(pairs, [2]int{a, b})
			}
		}
		return pairs, nil
	}
	var pairs [][2]int
	for f := range splitList(spec) {
		as, bs, ok := strings.Cut(f, "-")
		a, errA := strconv.Atoi(as)
		b, errB := strconv.Atoi(bs)
		if !ok || errA != nil || errB != nil || a < 0 || b < 0 || a == b || a > 4095 || b > 4095 {
			return nil, fmt.Errorf("pairs: %q is not two different CPU numbers such as 0-1", f)
		}
		if cpus != nil && (!slices.Contains(cpus, a) || !slices.Contains(cpus, b)) {
			return nil, fmt.Errorf("pairs: %q names a CPU this process may not run on (allowed: %s)", f, intList(cpus))
		}
		pairs = append(pairs, [2]int{a, b})
	}
	if len(pairs) == 0 || len(pairs) > 64 {
		return nil, fmt.Errorf("pairs must list between 1 and 64 pairs, got %d", len(pairs))
	}
	return pairs, nil
}

func intList(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// slowHandover is the hand-over time above which the two threads cannot
// have been running side by side: a cache-line transfer takes well under
// a microsecond even across sockets.
const slowHandover = 20 * time.Microsecond

func c2c(ctx context.Context, p *params, r *Result, hooks *Hooks) error {
	dur := p.Duration("duration", time.Millisecond, 2*time.Second)
	reps := p.Int("reps", 1, 20)
	if err := p.err(); err != nil {
		return err
	}
	data := &C2CData{DurationNS: dur.Nanoseconds(), Reps: reps, Pinned: true}
	cpus, err := allowedCPUs()
	if err != nil {
		data.Pinned, data.PinError = false, err.Error()
	}
	spec := p.String("pairs")
	var pairs [][2]int
	if data.Pinned {
		if pairs, err = c2cPairs(spec, cpus); err != nil {
			return err
		}
	} else {
		if spec != "auto" {
			return fmt.Errorf("pairs=%s: %w", spec, err)
		}
		pairs = [][2]int{{-1, -1}}
	}
	for _, pair := range pairs {
		var runs []C2CPair
		for range reps {
			line := new(pingLine)
			var pinErr atomic.Value
			var windows []time.Duration
			label := fmt.Sprintf("CPU %d <-> CPU %d", pair[0], pair[1])
			st, err := runWorkers(ctx, hooks, label, 2, func(w int) error {
				if pair[w] >= 0 {
					restore, err := pinThread(pair[w])
					if err != nil {
						pinErr.Store(err.Error())
						line.stop.Store(true)
						return nil
					}
					defer restore()
				}
				win, err := pingPong(ctx, line, uint64(w), dur)
				if w == 0 {
					windows = win
				}
				return err
			})
			if err != nil {
				return err
			}
			if e, ok := pinErr.Load().(string); ok {
				return fmt.Errorf("%s: %s", label, e)
			}
			n := int64(line.v.Load())
			row := C2CPair{A: pair[0], B: pair[1], CPUs: pair, Relation: cpuRelation(pair[0], pair[1]),
				Handovers: n, CPUShare: st.CPUShare()}
			if len(windows) > 0 {
				slices.Sort(windows)
				row.NSPerHandover = float64(windows[0].Nanoseconds()) / windowHandovers
				row.MedianNS = float64(windows[len(windows)/2].Nanoseconds()) / windowHandovers
			} else if n > 0 {
				row.NSPerHandover = float64(st.Wall.Nanoseconds()) / float64(n)
				row.MedianNS = row.NSPerHandover
			}
			row.Valid = len(windows) > 0 && row.NSPerHandover < float64(slowHandover.Nanoseconds())
			runs = append(runs, row)
		}
		slices.SortFunc(runs, func(a, b C2CPair) int { return cmp.Compare(a.NSPerHandover, b.NSPerHandover) })
		data.Rows = append(data.Rows, runs[len(runs)/2])
	}
	r.Data = data
	t := Table{
		Title:   fmt.Sprintf("one cache line bounced between two threads, %s runs, median of %d", dur, reps),
		Columns: []string{"CPU A", "CPU B", "relation", "hand-overs", "ns/hand-over", "ns/round trip", "median window", "CPU share"},
	}
	for _, row := range data.Rows {
		a, b := strconv.Itoa(row.A), strconv.Itoa(row.B)
		if row.A < 0 {
			a, b = "any", "any"
		}
		rel := row.Relation
		if rel == "" {
			rel = "-"
		}
		per, trip, med := "-", "-", "-"
		if row.Valid {
			per, trip = fmt.Sprintf("%.1f", row.NSPerHandover), fmt.Sprintf("%.1f", 2*row.NSPerHandover)
		} else if row.Handovers > 0 {
			per = fmt.Sprintf("(%.0f)", row.NSPerHandover)
		}
		if row.MedianNS > 0 {
			med = fmt.Sprintf("%.1f", row.MedianNS)
		}
		t.Rows = append(t.Rows, []string{a, b, rel, strconv.FormatInt(row.Handovers, 10), per, trip, med,
			fmt.Sprintf("%.0f%%", 100*row.CPUShare)})
	}
	c := &Chart{Title: "Core-to-core hand-over of one cache line", XTitle: "CPU pair", YTitle: "ns per hand-over", Bars: true,
		Series: []ChartSeries{{Name: "fastest window"}}}
	for _, row := range data.Rows {
		if row.Valid {
			label := fmt.Sprintf("%d-%d", row.A, row.B)
			if row.Relation != "" {
				label += " (" + row.Relation + ")"
			}
			c.Series[0].Points = append(c.Series[0].Points, ChartPoint{Label: label, Y: row.NSPerHandover})
		}
	}
	if len(c.Series[0].Points) > 0 {
		r.Chart = c
	}
	r.Tables = append(r.Tables, t)
	r.Notes = append(r.Notes,
		"each thread spins until the shared counter holds the value the other thread wrote, then writes the next one: every hand-over moves the line from one core's cache to the other's, through the coherence protocol",
		fmt.Sprintf("ns/hand-over is the fastest window of %d hand-overs (a window in which both threads were running); median window is the typical one, which on a busy machine includes time one thread waited for a CPU. A CPU share well below 100%% means the threads often did not run at once", windowHandovers),
		"a round trip is two hand-overs; false sharing (experiment false-sharing) pays about one hand-over per contended write",
		"relation comes from /sys/devices/system/cpu/cpuN/topology and cache/: SMT siblings share one core's L1 and L2, same L3 means the two cores share a last-level cache; on a VM these are virtual CPUs and say little about the physical cores behind them",
	)
	if !data.Pinned {
		r.Notes = append(r.Notes, "not pinned ("+data.PinError+"): the operating system chose the CPUs, so the pair is not named")
	}
	for _, row := range data.Rows {
		if !row.Valid {
			r.Notes = append(r.Notes, fmt.Sprintf("CPU %d and CPU %d: a hand-over took %.0f ns on average, far too slow for a cache transfer: the two threads were not running at the same moment (a busy machine, or fewer real CPUs than it seems), so this pair measured the scheduler; its ns/hand-over is shown in parentheses",
				row.A, row.B, row.NSPerHandover))
		}
	}
	return nil
}

// windowHandovers is how many hand-overs one timed window spans: enough
// that reading the clock (tens of ns) is amortised, few enough that many
// windows fit in a run, so that some fall where both threads were running.
const windowHandovers = 1024

// pingPong is one side of the bounce: side 0 writes odd values after
// seeing even ones, side 1 the reverse. Side 0 ends the run after dur and
// returns the wall time of each window of windowHandovers hand-overs; both
// sides also stop when the context is done.
func pingPong(ctx context.Context, line *pingLine, side uint64, dur time.Duration) ([]time.Duration, error) {
	start := time.Now()
	deadline := start.Add(dur)
	var windows []time.Duration
	last := start
	want := side // the value this side waits for before writing want+1
	for spins := 0; ; spins++ {
		v := line.v.Load()
		if v == want {
			line.v.Store(v + 1)
			want += 2
			if side == 0 && want%windowHandovers == 0 {
				now := time.Now()
				if len(windows) < 1<<16 {
					windows = append(windows, now.Sub(last))
				}
				last = now
			}
			continue
		}
		if spins&1023 == 0 {
			if line.stop.Load() {
				return windows, nil
			}
			if side == 0 && !time.Now().Before(deadline) {
				line.stop.Store(true)
				return windows, nil
			}
			if ctx.Err() != nil {
				line.stop.Store(true)
				return windows, ctx.Err()
			}
		}
	}
}
