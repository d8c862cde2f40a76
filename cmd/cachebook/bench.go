package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"cachebook/engine"
	"cachebook/engine/gen"
	"cachebook/engine/units"
	"cachebook/kernel/perf"
)

// benchQuery is one workload of the benchmark. The GROUP BY is wrapped in
// an outer count so that neither engine spends its time shipping millions of
// result rows to the client: both must still build every group.
type benchQuery struct {
	Name    string   `json:"name"`
	Inner   string   `json:"inner"`
	Columns []string `json:"columns"` // the columns of hits it reads
}

func (q benchQuery) sql() string {
	return "SELECT count(*) AS groups, sum(c) AS rows FROM (" + q.Inner + ") AS t"
}

var benchQueries = []benchQuery{
	{"Q15", "SELECT UserID, count(*) AS c FROM hits GROUP BY UserID", []string{"UserID"}},
	{"Q16", "SELECT UserID, SearchPhrase, count(*) AS c FROM hits GROUP BY UserID, SearchPhrase", []string{"UserID", "SearchPhrase"}},
	{"Q33", "SELECT URL, count(*) AS c FROM hits GROUP BY URL", []string{"URL"}},
}

// benchVariant is one engine configuration measured.
type benchVariant struct {
	Engine   string `json:"engine"`   // cachebook or duckdb
	Strategy string `json:"strategy"` // naive, radix, parallel; "" for duckdb
	Threads  int    `json:"threads"`
}

func (v benchVariant) String() string {
	if v.Engine == "duckdb" {
		return fmt.Sprintf("duckdb/%dt", v.Threads)
	}
	return fmt.Sprintf("%s/%dt", v.Strategy, v.Threads)
}

// benchRow is the result of one variant on one query.
type benchRow struct {
	Query    string       `json:"query"`
	Variant  benchVariant `json:"variant"`
	Runs     []float64    `json:"runs_ms"`
	MedianMS float64      `json:"median_ms"`
	NSPerRow float64      `json:"ns_per_row"`
	Groups   int64        `json:"groups"`
	VsNaive  float64      `json:"speedup_vs_naive,omitempty"`
	VsDuckDB float64      `json:"time_vs_duckdb,omitempty"`
	Counters *perf.Report `json:"counters,omitempty"`
	Error    string       `json:"error,omitempty"`
}

// benchReport is the JSON file make bench writes.
type benchReport struct {
	Rows          int        `json:"rows"`
	Order         string     `json:"order"`
	Reps          int        `json:"reps"`
	Date          string     `json:"date"`
	Threads       []int      `json:"threads"`
	Queries       []string   `json:"queries"`
	Results       []benchRow `json:"results"`
	Counters      string     `json:"counters"` // availability summary
	DuckDB        string     `json:"duckdb"`   // "" when measured, else why not
	DuckDBVersion string     `json:"duckdb_version,omitempty"`
	FloorNote     string     `json:"floor_note,omitempty"`
	GoHeap        string     `json:"go_heap"` // how Go's runtime returns freed heap pages
	// Cold lists queries answered by fresh processes from the file.
	Cold []coldRow `json:"cold,omitempty"`
	// Scaling compares the parallel strategy's 2- and 1-thread times.
	Scaling []scalingRow `json:"scaling,omitempty"`
	// Spill is the spill query under a memory limit that makes cachebook
	// spill, against DuckDB under the same limit, in fresh processes.
	Spill []spillRow `json:"spill,omitempty"`
}

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rows := fs.Int("rows", 20_000_000, "rows of generated hits data")
	order := fs.String("order", "shuffled", "row order: shuffled or clustered")
	threadsFlag := fs.String("threads", "1,2", "comma-separated thread counts for the parallel strategy and DuckDB")
	reps := fs.Int("reps", 5, "timed repetitions per variant (alternated)")
	queries := fs.String("queries", "Q15,Q16,Q33", "queries to run: Q15, Q16, Q33 (empty: only the cold and spill rows)")
	data := fs.String("data", "", "data directory (default data/bench-ROWS-ORDER)")
	duck := fs.String("duckbench", "bin/duckbench", "path of the duckbench binary (empty: skip DuckDB)")
	format := fs.String("format", "table", "output: table (markdown) or json")
	out := fs.String("out", "", "also write the JSON report to this file")
	counters := fs.Bool("counters", true, "measure one extra run per variant with perf counters")
	cold := fs.Int("cold", 5, "fresh-process runs per cold and first-look query (0: skip them)")
	hot := fs.Bool("hot", true, "measure the queries over columns held in memory (false: only the cold and first-look runs)")
	coldOnly := fs.String("cold-queries", "", `cold and first-look queries to run, their names as the table prints them separated by semicolons ("Q33 cold;first look"); empty: all`)
	one := fs.String("one", "", "internal: run this SQL in this process over --data and print the time as JSON")
	oneThreads := fs.Int("one-threads", 1, "internal: threads for --one and --spill-one")
	spillLimit := fs.String("spill-limit", "512MB", "memory_limit for the spill row, "+spillQuery.Name+" in fresh processes (empty: skip it)")
	spillReps := fs.Int("spill-reps", 3, "fresh-process runs per engine and thread count for the spill row")
	spillOne := fs.String("spill-one", "", "internal: run this SQL under --spill-limit in this process over --data and print the time and spill as JSON")
	spillDir := fs.String("spill-dir", "", "internal: temp_directory for --spill-one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *one != "" {
		return benchOne(ctx, *data, *one, *oneThreads, stdout)
	}
	if *spillOne != "" {
		return benchSpillOne(ctx, *data, *spillOne, *oneThreads, *spillLimit, *spillDir, stdout)
	}
	if *order != "shuffled" && *order != "clustered" {
		return fmt.Errorf("--order must be shuffled or clustered, got %q", *order)
	}
	if *reps < 1 || *rows < 1 || *spillReps < 1 {
		return errors.New("--reps, --rows and --spill-reps must be positive")
	}
	if *spillLimit != "" {
		if _, err := units.ParseBytes(*spillLimit); err != nil {
			return fmt.Errorf("--spill-limit: %w", err)
		}
	}
	var threads []int
	for _, f := range strings.Split(*threadsFlag, ",") {
		t, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || t < 1 || t > 256 {
			return fmt.Errorf("--threads: bad thread count %q", f)
		}
		threads = append(threads, t)
	}
	var qs []benchQuery
	for _, name := range strings.Split(*queries, ",") {
		if *queries == "" {
			break
		}
		i := slices.IndexFunc(benchQueries, func(q benchQuery) bool { return strings.EqualFold(q.Name, strings.TrimSpace(name)) })
		if i < 0 {
			return fmt.Errorf("--queries: unknown query %q (known: Q15, Q16, Q33)", name)
		}
		qs = append(qs, benchQueries[i])
	}
	dir := *data
	if dir == "" {
		dir = filepath.Join("data", fmt.Sprintf("bench-%d-%s", *rows, *order))
	}
	path := filepath.Join(dir, "hits.parquet")
	if _, err := os.Stat(path); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "generating %d %s rows into %s ...\n", *rows, *order, path)
		if err := gen.WriteFile(ctx, path, gen.Options{Rows: *rows, Order: *order, Seed: 1}); err != nil {
			return err
		}
	}

	rep := &benchReport{Rows: *rows, Order: *order, Reps: *reps, Date: time.Now().UTC().Format(time.RFC3339), Threads: threads,
		GoHeap: goHeapNote(os.Getenv("GODEBUG"))}
	for _, q := range qs {
		rep.Queries = append(rep.Queries, q.Name)
	}
	avail := perf.Probe()
	rep.Counters = avail.Summary()

	db, err := openEngine(engine.Options{DataDir: dir, Cache: hostCacheSizes()})
	if err != nil {
		return err
	}
	variants := []benchVariant{{"cachebook", "naive", 1}, {"cachebook", "radix", 1}}
	for _, t := range threads {
		variants = append(variants, benchVariant{"cachebook", "parallel", t})
	}
	var dc *duckClient
	duckFound := false
	if *duck != "" {
		_, statErr := os.Stat(*duck)
		duckFound = statErr == nil
		if !duckFound {
			rep.DuckDB = fmt.Sprintf("not measured: %s not found (run make bench, which builds it)", *duck)
		} else if len(qs) == 0 {
			// Only fresh processes below: nothing to load.
		} else if dc, err = startDuck(ctx, *duck); err != nil {
			rep.DuckDB = "not measured: " + err.Error()
		} else {
			defer dc.close()
			rep.DuckDBVersion = dc.version
			// Only the columns the queries read, as our engine loads them:
			// the whole table at 100M rows does not fit in memory.
			var cols []string
			for _, q := range qs {
				for _, c := range q.Columns {
					if !slices.Contains(cols, c) {
						cols = append(cols, c)
					}
				}
			}
			if *hot { // the cold runs read the file
				fmt.Fprintf(stderr, "loading %s of hits into DuckDB (in memory) ...\n", strings.Join(cols, ", "))
				if err := dc.load(path, "hits", cols); err != nil {
					rep.DuckDB = "not measured: " + err.Error()
					dc = nil
				} else {
					for _, t := range threads {
						variants = append(variants, benchVariant{Engine: "duckdb", Threads: t})
					}
				}
			}
		}
	} else {
		rep.DuckDB = "not measured: --duckbench is empty"
	}

	run := func(q benchQuery, v benchVariant, hooks *engine.Hooks) (time.Duration, int64, error) {
		if v.Engine == "duckdb" {
			r, err := dc.query(q.sql(), v.Threads)
			var groups int64
			if err == nil && len(r.Result) > 0 && len(r.Result[0]) > 0 && r.Result[0][0] != nil {
				groups, _ = strconv.ParseInt(*r.Result[0][0], 10, 64)
			}
			return time.Duration(r.NS), groups, err
		}
		s := db.NewSession()
		s.Set("group_by", v.Strategy)
		s.Set("threads", strconv.Itoa(v.Threads))
		start := time.Now()
		res, err := s.Exec(ctx, q.sql(), hooks)
		d := time.Since(start)
		if err != nil {
			return d, 0, err
		}
		var groups int64
		if r := res[0]; r.Rows == 1 {
			groups, _ = r.Vecs[0].Value(0).(int64)
		}
		return d, groups, nil
	}

	if !*hot {
		qs = nil
	}
	for _, q := range qs {
		rowsOf := map[benchVariant]*benchRow{}
		var order []*benchRow
		for _, v := range variants {
			br := &benchRow{Query: q.Name, Variant: v}
			rowsOf[v] = br
			order = append(order, br)
			// Warm-up: loads the columns into the cache and the code paths.
			fmt.Fprintf(stderr, "%s %s: warm-up ...\n", q.Name, v)
			if _, g, err := run(q, v, nil); err != nil {
				br.Error = err.Error()
			} else {
				br.Groups = g
			}
		}
		for r := 0; r < *reps; r++ {
			for _, br := range order {
				if br.Error != "" {
					continue
				}
				d, _, err := run(q, br.Variant, nil)
				if err != nil {
					br.Error = err.Error()
					continue
				}
				br.Runs = append(br.Runs, float64(d.Microseconds())/1000)
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		if *counters && avail.Hardware.Available {
			for _, br := range order {
				if br.Error != "" || br.Variant.Engine != "cachebook" {
					continue
				}
				m := perf.NewQueryMeter(perf.Options{Availability: &avail})
				if _, _, err := run(q, br.Variant, m.Hooks(&engine.Hooks{LockThreads: true})); err == nil {
					br.Counters = m.Report()
				}
			}
		}
		naive := rowsOf[benchVariant{"cachebook", "naive", 1}]
		for _, br := range order {
			if len(br.Runs) == 0 {
				continue
			}
			br.MedianMS = median(br.Runs)
			br.NSPerRow = br.MedianMS * 1e6 / float64(*rows)
			if naive != nil && naive.MedianMS > 0 && len(naive.Runs) > 0 {
				br.VsNaive = median(naive.Runs) / br.MedianMS
			}
			if br.Variant.Engine == "cachebook" {
				if d := rowsOf[benchVariant{Engine: "duckdb", Threads: br.Variant.Threads}]; d != nil && len(d.Runs) > 0 {
					br.VsDuckDB = br.MedianMS / median(d.Runs)
				}
			}
			rep.Results = append(rep.Results, *br)
		}
		for _, br := range order {
			if br.Error != "" {
				rep.Results = append(rep.Results, *br)
			}
		}
	}
	rep.Scaling = scaling(rep.Results)
	if *cold > 0 || *spillLimit != "" {
		duckPath := ""
		if dc != nil || (duckFound && len(qs) == 0) {
			duckPath = *duck
		}
		if dc != nil {
			dc.close()
		}
		// The cold and spill runs are fresh processes: give back what the
		// runs above hold (DuckDB's tables, our column cache and huge-page
		// pool) first, so that they do not run beside gigabytes of this
		// process's memory, which makes their page faults dearer.
		db.Close()
		db = nil
		debug.FreeOSMemory()
		if *cold > 0 {
			var only []string
			if *coldOnly != "" {
				for _, name := range strings.Split(*coldOnly, ";") {
					only = append(only, strings.TrimSpace(name))
				}
			}
			if rep.Cold, err = runCold(ctx, path, threads, *cold, only, duckPath, stderr); err != nil {
				return err
			}
		}
		if *spillLimit != "" {
			if rep.Spill, err = runSpill(ctx, path, threads, *spillReps, *spillLimit, duckPath, stderr); err != nil {
				return err
			}
		}
	}
	if *out != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeBenchTable(stdout, rep)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func writeBenchTable(w io.Writer, rep *benchReport) error {
	var b strings.Builder
	if len(rep.Results) > 0 {
		fmt.Fprintf(&b, "GROUP BY benchmark: %d rows, %s order, %d repetitions alternated, median times; columns held in memory by both engines before timing.\n", rep.Rows, rep.Order, rep.Reps)
	} else {
		fmt.Fprintf(&b, "Cold runs only (--hot=false): %d rows, %s order.\n", rep.Rows, rep.Order)
	}
	fmt.Fprintf(&b, "Counters: %s\n", rep.Counters)
	fmt.Fprintf(&b, "Go heap: %s\n", rep.GoHeap)
	if rep.DuckDB != "" {
		fmt.Fprintf(&b, "DuckDB: %s\n", rep.DuckDB)
	}
	if len(rep.Results) > 0 {
		b.WriteString("\n| query | variant | threads | groups | median ms | ns/row | speedup vs naive | time vs DuckDB (same threads) |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|\n")
	}
	for _, r := range rep.Results {
		name := r.Variant.Strategy
		if r.Variant.Engine == "duckdb" {
			name = "DuckDB"
		}
		if r.Error != "" {
			fmt.Fprintf(&b, "| %s | %s | %d | | error: %s | | | |\n", r.Query, name, r.Variant.Threads, r.Error)
			continue
		}
		vsD := ""
		if r.VsDuckDB > 0 {
			vsD = fmt.Sprintf("%.2f×", r.VsDuckDB)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %.1f | %.1f | %.2f× | %s |\n", r.Query, name, r.Variant.Threads, r.Groups, r.MedianMS, r.NSPerRow, r.VsNaive, vsD)
	}
	writeColdTable(&b, rep.Cold, rep.Scaling)
	writeSpillTable(&b, rep.Spill)
	_, err := io.WriteString(w, b.String())
	return err
}

// goHeapNote says how this process's Go runtime gives freed heap pages back,
// which decides whether a query after a large one pays page faults again.
func goHeapNote(godebug string) string {
	v := ""
	for _, kv := range strings.Split(godebug, ",") {
		if k, val, ok := strings.Cut(kv, "="); ok && strings.TrimSpace(k) == "madvdontneed" {
			v = strings.TrimSpace(val) // the last setting wins, as in the runtime
		}
	}
	if v == "0" {
		return "freed pages returned with MADV_FREE (GODEBUG=madvdontneed=0): they stay mapped until the kernel needs them"
	}
	return "freed pages returned with MADV_DONTNEED (Go's default): later queries fault them in again; make bench sets GODEBUG=madvdontneed=0"
}
