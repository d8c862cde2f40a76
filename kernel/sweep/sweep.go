// Package sweep measures one GROUP BY shape,
//
//	SELECT k, count(*) FROM t GROUP BY k
//
// at a fixed row count while the number of distinct groups grows (by
// default from 10^3 to 10^7), once per aggregation strategy (naive hash
// table, radix partitioning). As the hash table outgrows each cache level
// the cost per row jumps: this is the experiment of the Pivot article "It's
// the memory latency, stupid" (pivotlake.io) on our own engine.
package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/parquet-go/parquet-go"

	"cachebook/engine"
	"cachebook/engine/agg"
	"cachebook/engine/cachesim"
	"cachebook/engine/cachesim/trace"
	"cachebook/kernel/perf"
)

// Query is the measured statement.
const Query = "SELECT k, count(*) FROM t GROUP BY k"

// Config configures a sweep. Zero fields take defaults.
type Config struct {
	Rows       int64    // rows of t (default 10,000,000)
	Groups     []int64  // distinct keys per point (default 10^3 .. 10^7)
	Strategies []string // SET group_by values (default naive, radix)
	Reps       int      // timed runs per point after one warm-up (default 3)
	Seed       uint64   // key generator seed (0: fixed default)
	// DataDir is where the generated Parquet files go (kept); empty keeps
	// the tables in memory.
	DataDir string
	// Counters opens perf counters on every timed run (kernel/perf) and
	// keeps the report of the median run.
	Counters bool
	// QueryMemory is the engine's per-query memory limit (0: its default).
	QueryMemory int64
	// Availability is a previous perf.Probe result to reuse.
	Availability *perf.Availability
	// Model adds the modelled misses of each point (engine/cachesim/trace:
	// the engine's own traced pass over the same keys, with the strategy,
	// threads and radix bits the measured run used), labelled modelled.
	Model bool
	// ModelGeometry is the modelled machine (zero: cachesim.DefaultGeometry);
	// ModelSource says where it came from.
	ModelGeometry cachesim.Geometry
	ModelSource   string
	// ModelRate is the fraction of cache sets simulated (0: 1/16; 1: all).
	ModelRate float64
	// Progress is called after each point.
	Progress func(p Point, done, total int)
}

// DefaultGroups are 10^3, 10^4, ..., 10^7.
func DefaultGroups() []int64 { return []int64{1e3, 1e4, 1e5, 1e6, 1e7} }

func (c Config) withDefaults() Config {
	if c.Rows <= 0 {
		c.Rows = 10_000_000
	}
	if len(c.Groups) == 0 {
		c.Groups = DefaultGroups()
	}
	if len(c.Strategies) == 0 {
		c.Strategies = []string{"naive", "radix"}
	}
	if c.Reps <= 0 {
		c.Reps = 3
	}
	if c.Seed == 0 {
		c.Seed = 42
	}
	if c.ModelGeometry == (cachesim.Geometry{}) {
		c.ModelGeometry = cachesim.DefaultGeometry()
		if c.ModelSource == "" {
			c.ModelSource = "default geometry"
		}
	}
	if c.ModelRate <= 0 {
		c.ModelRate = 1.0 / 16
	}
	return c
}

// Point is one (groups, strategy) measurement.
type Point struct {
	Groups   int64  `json:"groups"`
	Strategy string `json:"strategy"`
	Rows     int64  `json:"rows"`
	// NsPerRow is the median statement time divided by Rows.
	NsPerRow    float64 `json:"ns_per_row"`
	MinNsPerRow float64 `json:"min_ns_per_row"`
	MedianNs    int64   `json:"median_ns"`
	// Counters is the perf report of the median run, when asked for.
	Counters *perf.Report `json:"counters,omitempty"`
	// Model is the modelled misses of the point, when asked for.
	Model *Model `json:"model,omitempty"`
	// NaiveOverRadix is, on the naive and the radix point of a group
	// count, the median over the rounds of naive's time over radix's in
	// the same round (above 1: radix is faster); Low and High are its
	// extremes. Noisy is set when the rounds fall on both sides of 1, and
	// Verdict states the comparison in words.
	NaiveOverRadix float64 `json:"naive_over_radix,omitempty"`
	Low            float64 `json:"low,omitempty"`
	High           float64 `json:"high,omitempty"`
	Noisy          bool    `json:"noisy,omitempty"`
	Verdict        string  `json:"verdict,omitempty"`
}

// Model is the modelled (not measured) misses per row of one point: the
// cache model driven by the engine's traced GROUP BY over the same keys.
type Model struct {
	Modelled   bool    `json:"modelled"`      // always true: these are not counters
	Why        string  `json:"why,omitempty"` // why not modelled, when not
	Partitions int     `json:"partitions"`
	Threads    int     `json:"threads"`
	L1PerRow   float64 `json:"l1_misses_per_row"`
	L2PerRow   float64 `json:"l2_misses_per_row"`
	L3PerRow   float64 `json:"l3_misses_per_row"`
	// DRAMPerRow is the demand lines read from DRAM per row (misses of
	// the last level, reads for ownership included).
	DRAMPerRow        float64 `json:"dram_lines_per_row"`
	DRAMWrittenPerRow float64 `json:"dram_lines_written_per_row"`
	// RelErr is the sampling's relative standard error (largest count).
	RelErr float64 `json:"rel_err"`
	// ModelNs is how long the modelled pass took.
	ModelNs int64 `json:"model_ns"`
}

// Report is a whole sweep.
type Report struct {
	Query  string  `json:"query"`
	Rows   int64   `json:"rows"`
	Reps   int     `json:"reps"`
	Points []Point `json:"points"`
	// ModelGeometry and ModelSampling describe the modelled machine, when
	// the sweep is modelled.
	ModelGeometry string `json:"model_geometry,omitempty"`
	ModelSource   string `json:"model_geometry_source,omitempty"`
	ModelSampling string `json:"model_sampling,omitempty"`
}

// Validate checks a configuration after defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	for _, g := range c.Groups {
		if g < 1 || g > c.Rows {
			return fmt.Errorf("sweep: %d groups need 1 ≤ groups ≤ rows (%d)", g, c.Rows)
		}
	}
	if c.Rows > 1<<31 {
		return fmt.Errorf("sweep: %d rows is too many", c.Rows)
	}
	if c.Model {
		if err := c.ModelGeometry.Validate(); err != nil {
			return fmt.Errorf("sweep: model geometry: %w", err)
		}
	}
	return nil
}

// Run generates one table per group count and measures every strategy on
// it. The tables are kept in memory (so it runs in the browser too) unless
// cfg.DataDir is set. It stops between runs when ctx is cancelled,
// returning what it has.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var avail *perf.Availability
	if cfg.Counters {
		avail = cfg.Availability
		if avail == nil {
			a := perf.Probe()
			avail = &a
		}
	}
	rep := &Report{Query: Query, Rows: cfg.Rows, Reps: cfg.Reps}
	if cfg.Model {
		rep.ModelGeometry, rep.ModelSource = cfg.ModelGeometry.String(), cfg.ModelSource
		rep.ModelSampling = trace.AutoSampling(cfg.ModelGeometry, cfg.ModelRate).String()
	}
	total := len(cfg.Groups) * len(cfg.Strategies)
	done := 0
	for _, g := range cfg.Groups {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		db, keys, err := table(ctx, cfg, g)
		if err != nil {
			return rep, err
		}
		err = func() error {
			defer db.Close() // its huge-page mappings, sized for this point
			// Every strategy runs once untimed (warming the column cache),
			// then the strategies take turns, round after round (forwards,
			// then backwards), so that a busy stretch of the machine falls
			// on all of them rather than on one strategy's block of runs.
			pts := make([]*pointRuns, len(cfg.Strategies))
			for i, strategy := range cfg.Strategies {
				if pts[i], err = warm(ctx, db, cfg, g, strategy); err != nil {
					return err
				}
			}
			for round := range cfg.Reps {
				for j := range pts {
					i := j
					if round%2 == 1 {
						i = len(pts) - 1 - j
					}
					if err := pts[i].timed(ctx, avail); err != nil {
						return err
					}
				}
			}
			points := make([]Point, len(pts))
			for i, pr := range pts {
				points[i] = summarize(g, pr.strategy, cfg.Rows, pr.runs)
				if cfg.Model {
					if points[i].Model, err = model(ctx, cfg, keys, pr.info); err != nil {
						return err
					}
				}
			}
			compareNaiveRadix(points, pts)
			for _, p := range points {
				rep.Points = append(rep.Points, p)
				done++
				if cfg.Progress != nil {
					cfg.Progress(p, done, total)
				}
			}
			return nil
		}()
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// table generates the table of g groups and opens an engine over it: in
// memory, or as DataDir/groups-G/t.parquet when cfg.DataDir is set. The
// keys are returned, in table order, when cfg.Model needs them.
func table(ctx context.Context, cfg Config, g int64) (*engine.DB, []int64, error) {
	keys, err := keysContext(ctx, cfg.Rows, g, cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	ret := func() []int64 {
		if cfg.Model {
			return keys
		}
		return nil
	}
	if cfg.DataDir != "" {
		dir := filepath.Join(cfg.DataDir, fmt.Sprintf("groups-%d", g))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("sweep: %w", err)
		}
		if err := writeKeysFile(ctx, filepath.Join(dir, "t.parquet"), keys); err != nil {
			return nil, nil, err
		}
		db, err := engine.Open(engine.Options{DataDir: dir, QueryMemory: cfg.QueryMemory})
		if err != nil {
			return nil, nil, fmt.Errorf("sweep: open engine: %w", err)
		}
		return db, ret(), nil
	}
	var buf bytes.Buffer
	if err := writeKeys(ctx, &buf, keys); err != nil {
		return nil, nil, err
	}
	kept := ret()
	keys = nil
	db, err := engine.Open(engine.Options{QueryMemory: cfg.QueryMemory})
	if err != nil {
		return nil, nil, fmt.Errorf("sweep: open engine: %w", err)
	}
	b := buf.Bytes()
	if err := db.RegisterFile("t", bytes.NewReader(b), int64(len(b))); err != nil {
		return nil, nil, fmt.Errorf("sweep: register table: %w", err)
	}
	return db, kept, nil
}

// model runs the traced pass of one point over keys with the
// configuration the measured run's aggregation used.
func model(ctx context.Context, cfg Config, keys []int64, info *engine.AggregateInfo) (*Model, error) {
	if info == nil {
		return &Model{Modelled: true, Why: "the query ran no GROUP BY the model could see"}, nil
	}
	c := info.Config
	if !info.Traceable() {
		return &Model{Modelled: true, Why: "the query did not take the tuned count path, which is the one modelled here"}, nil
	}
	o := trace.Options{
		Geometry: cfg.ModelGeometry, Sampling: trace.AutoSampling(cfg.ModelGeometry, cfg.ModelRate),
		Strategy: c.Strategy, Threads: c.Threads, RadixBits: c.RadixBits, HugePages: c.HugePages,
		NoRowsHint: c.RowsHint == 0, MemoryLimit: cfg.QueryMemory,
	}
	t0 := time.Now()
	res, err := trace.Count(ctx, keys, o)
	if err != nil {
		return nil, fmt.Errorf("sweep: model: %w", err)
	}
	m := &Model{Modelled: true, Partitions: 1, Threads: 1, ModelNs: time.Since(t0).Nanoseconds(), RelErr: res.Total.RelErr.Max()}
	if c.Strategy == agg.Radix {
		m.Partitions, m.Threads = 1<<c.RadixBits, max(c.Threads, 1)
	}
	n := float64(max(res.Rows, 1))
	t := res.Total
	m.L1PerRow, m.L2PerRow, m.L3PerRow = float64(t.L1.Misses)/n, float64(t.L2.Misses)/n, float64(t.L3.Misses)/n
	m.DRAMPerRow, m.DRAMWrittenPerRow = float64(t.DRAMReads)/n, float64(t.DRAMWrites)/n
	return m, nil
}

type run struct {
	elapsed time.Duration
	report  *perf.Report
}

// pointRuns is one (groups, strategy) point being measured: its session,
// statement and timed runs so far.
type pointRuns struct {
	strategy string
	groups   int64
	sess     *engine.Session
	src      string
	runs     []run
	// info is what the engine told the warm-up run's Aggregate hook (when
	// cfg.Model): the configuration the model replays.
	info *engine.AggregateInfo
}

// warm runs the point's statement once untimed, which fills the column
// cache and checks the result.
func warm(ctx context.Context, db *engine.DB, cfg Config, groups int64, strategy string) (*pointRuns, error) {
	pr := &pointRuns{strategy: strategy, groups: groups, sess: db.NewSession(),
		src: fmt.Sprintf("SET group_by = '%s'; %s", strategy, Query)}
	var hooks *engine.Hooks
	if cfg.Model {
		hooks = &engine.Hooks{Aggregate: func(ai engine.AggregateInfo, src agg.Source) agg.Source {
			pr.info = &ai
			return src
		}}
	}
	if _, err := pr.exec(ctx, hooks); err != nil {
		return nil, err
	}
	return pr, nil
}

// timed runs the point's statement once more and keeps its time (and its
// perf counters, when avail is set).
func (pr *pointRuns) timed(ctx context.Context, avail *perf.Availability) error {
	var hooks *engine.Hooks
	var m *perf.QueryMeter
	if avail != nil {
		m = perf.NewQueryMeter(perf.Options{Availability: avail})
		hooks = m.Hooks(nil)
	}
	d, err := pr.exec(ctx, hooks)
	if err != nil {
		return err
	}
	r := run{elapsed: d}
	if m != nil {
		r.report = m.Report()
	}
	pr.runs = append(pr.runs, r)
	return nil
}

// exec runs the statement and checks its group count.
func (pr *pointRuns) exec(ctx context.Context, hooks *engine.Hooks) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	res, err := pr.sess.Exec(ctx, pr.src, hooks)
	if err != nil {
		return 0, fmt.Errorf("sweep: %d groups, %s: %w", pr.groups, pr.strategy, err)
	}
	if len(res) == 0 {
		return 0, errors.New("sweep: no result")
	}
	last := res[len(res)-1]
	if int64(last.Rows) != pr.groups {
		return 0, fmt.Errorf("sweep: %s returned %d groups, want %d", pr.strategy, last.Rows, pr.groups)
	}
	return last.Elapsed, nil
}

// compareNaiveRadix sets the naive-over-radix fields of the naive and
// radix points of one group count from their runs, round by round (the
// k-th run of each was taken in the same alternation).
func compareNaiveRadix(points []Point, pts []*pointRuns) {
	nv := slices.IndexFunc(pts, func(p *pointRuns) bool { return p.strategy == "naive" })
	rx := slices.IndexFunc(pts, func(p *pointRuns) bool { return p.strategy == "radix" })
	if nv < 0 || rx < 0 {
		return
	}
	n := min(len(pts[nv].runs), len(pts[rx].runs))
	ratios := make([]float64, 0, n)
	for k := range n {
		ratios = append(ratios, float64(pts[nv].runs[k].elapsed)/float64(max(pts[rx].runs[k].elapsed, 1)))
	}
	if len(ratios) == 0 {
		return
	}
	sorted := slices.Clone(ratios)
	slices.Sort(sorted)
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	lo, hi := sorted[0], sorted[len(sorted)-1]
	over := fmt.Sprintf("over %d alternations", len(sorted))
	if len(sorted) == 1 {
		over = "in 1 round, no spread"
	}
	var verdict string
	noisy := false
	switch {
	case lo <= 1 && hi >= 1:
		noisy = true
		verdict = fmt.Sprintf("too noisy to tell here — naive vs radix ranged %.2f–%.2f× %s, on both sides of 1; the model says radix wins once naive's hash table outgrows the caches; run it again on a quieter machine", lo, hi, over)
	case lo > 1:
		verdict = fmt.Sprintf("radix %.2f× faster than naive (%.2f–%.2f %s)", med, lo, hi, over)
	default:
		verdict = fmt.Sprintf("naive %.2f× faster than radix (%.2f–%.2f %s)", 1/med, 1/hi, 1/lo, over)
	}
	for _, i := range []int{nv, rx} {
		p := &points[i]
		p.NaiveOverRadix, p.Low, p.High, p.Noisy, p.Verdict = med, lo, hi, noisy, verdict
	}
}

// summarize picks the median run (by time) and converts to ns per row.
func summarize(groups int64, strategy string, rows int64, runs []run) Point {
	slices.SortFunc(runs, func(a, b run) int { return int(a.elapsed - b.elapsed) })
	med := runs[(len(runs)-1)/2] // the lower median for an even count
	return Point{Groups: groups, Strategy: strategy, Rows: rows,
		NsPerRow:    float64(med.elapsed.Nanoseconds()) / float64(rows),
		MinNsPerRow: float64(runs[0].elapsed.Nanoseconds()) / float64(rows),
		MedianNs:    med.elapsed.Nanoseconds(),
		Counters:    med.report}
}

// splitmix64 is a bijection on uint64, so distinct inputs give distinct
// keys that look random.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Keys returns rows uniform random int64 keys with exactly groups distinct
// values: every value appears at least once, the rest are drawn uniformly,
// and the order is shuffled.
func Keys(rows, groups int64, seed uint64) []int64 {
	keys, _ := keysContext(context.Background(), rows, groups, seed)
	return keys
}

// keysContext is Keys, stopping with ctx's error when it is cancelled (it
// looks every 64K keys).
func keysContext(ctx context.Context, rows, groups int64, seed uint64) ([]int64, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	keys := make([]int64, rows)
	for i := range keys {
		if i&(1<<16-1) == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		j := int64(i)
		if j >= groups {
			j = rng.Int64N(groups)
		}
		keys[i] = int64(splitmix64(uint64(j) ^ seed))
	}
	// rng.Shuffle, written out to look at ctx: the same draws, so the
	// same order.
	for i := len(keys) - 1; i > 0; i-- {
		if i&(1<<16-1) == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		j := int(rng.Uint64N(uint64(i + 1)))
		keys[i], keys[j] = keys[j], keys[i]
	}
	return keys, nil
}

type keyRow struct {
	K int64 `parquet:"k"`
}

// WriteKeys writes keys as a Parquet file with one int64 column k.
func WriteKeys(path string, keys []int64) error {
	return writeKeysFile(context.Background(), path, keys)
}

func writeKeysFile(ctx context.Context, path string, keys []int64) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if err := writeKeys(ctx, f, keys); err != nil {
		f.Close()
		return fmt.Errorf("sweep: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sweep: close %s: %w", path, err)
	}
	return nil
}

// writeKeys writes keys as Parquet to w, looking at ctx between batches
// of 64K rows.
func writeKeys(ctx context.Context, w io.Writer, keys []int64) error {
	pw := parquet.NewGenericWriter[keyRow](w)
	buf := make([]keyRow, 0, 64<<10)
	for i, k := range keys {
		buf = append(buf, keyRow{K: k})
		if len(buf) == cap(buf) || i == len(keys)-1 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, err := pw.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return pw.Close()
}

// ModelHeader is the column header of Model.Columns.
const ModelHeader = "modelled: L1/row  L2/row  L3/row  DRAM/row  parts"

// Columns renders m as the columns under ModelHeader.
func (m *Model) Columns() string {
	if m == nil {
		return ""
	}
	if m.Why != "" {
		return "modelled: " + m.Why
	}
	return fmt.Sprintf("%17.3f  %6.3f  %6.3f  %8.3f  %5d", m.L1PerRow, m.L2PerRow, m.L3PerRow, m.DRAMPerRow, m.Partitions)
}
