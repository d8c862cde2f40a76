package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"cachebook/engine"
)

// coldQuery is a query a fresh process answers straight from the Parquet
// file: nothing decoded or cached beforehand (the file itself is in the OS
// page cache after the first run, for both engines alike).
type coldQuery struct {
	Name string
	SQL  string // over the table hits
}

var coldQueries = []coldQuery{
	{"Q15 cold", benchQueries[0].sql()},
	{"Q33 cold", benchQueries[2].sql()},
	{"first look", "SELECT * FROM hits LIMIT 10"},
	{"first look, CounterID = 62", "SELECT * FROM hits WHERE CounterID = 62 LIMIT 10"},
}

// coldRow is the result of one engine on one cold query.
type coldRow struct {
	Query    string    `json:"query"`
	SQL      string    `json:"sql"`
	Engine   string    `json:"engine"`
	Threads  int       `json:"threads"`
	Runs     []float64 `json:"runs_ms"`
	MedianMS float64   `json:"median_ms"`
	PeakRSS  int64     `json:"peak_rss_bytes"` // largest over the runs; 0 when unknown
	Rows     int64     `json:"rows"`
	VsDuckDB float64   `json:"time_vs_duckdb,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// scalingRow compares the parallel strategy's 2-thread time with its
// 1-thread time on one query.
type scalingRow struct {
	Query   string  `json:"query"`
	OneMS   float64 `json:"one_thread_ms"`
	TwoMS   float64 `json:"two_threads_ms"`
	Speedup float64 `json:"speedup"`
}

// oneResult is what a child process (bench --one) prints.
type oneResult struct {
	MS      float64 `json:"ms"`
	Rows    int64   `json:"rows"`
	PeakRSS int64   `json:"peak_rss_bytes"`
	Error   string  `json:"error,omitempty"`
}

// benchOne runs sql in this process, a fresh one started by the cold
// benchmark, and prints a oneResult as JSON: the time from opening the
// data directory to the last result row.
func benchOne(ctx context.Context, dir, src string, threads int, stdout io.Writer) error {
	start := time.Now()
	var res oneResult
	db, err := openEngine(engine.Options{DataDir: dir, Cache: hostCacheSizes()})
	if err == nil {
		s := db.NewSession()
		if err = s.Set("threads", strconv.Itoa(threads)); err == nil {
			var rs []*engine.Result
			rs, err = s.Exec(ctx, src, nil)
			if err == nil && len(rs) > 0 {
				r := rs[len(rs)-1]
				res.Rows = int64(r.Rows)
				if r.Rows == 1 && len(r.Vecs) > 0 {
					if g, ok := r.Vecs[0].Value(0).(int64); ok {
						res.Rows = g // the wrapped GROUP BY counts its groups
					}
				}
			}
		}
	}
	res.MS = float64(time.Since(start).Microseconds()) / 1000
	res.PeakRSS = peakRSS(0)
	if err != nil {
		res.Error = err.Error()
	}
	return json.NewEncoder(stdout).Encode(res)
}

// runCold measures every cold query (those named in only, when it names
// any) in fresh processes of this binary and of duckbench (DuckDB's
// read_parquet over the same file), reps times each, alternating, the
// engine that goes first changing each time.
func runCold(ctx context.Context, path string, threads []int, reps int, only []string, duck string, stderr io.Writer) ([]coldRow, error) {
	for _, name := range only {
		if !slices.ContainsFunc(coldQueries, func(q coldQuery) bool { return strings.EqualFold(q.Name, name) }) {
			return nil, fmt.Errorf("--cold-queries: unknown query %q", name)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(abs)
	var out []coldRow
	for _, q := range coldQueries {
		if len(only) > 0 && !slices.ContainsFunc(only, func(name string) bool { return strings.EqualFold(q.Name, name) }) {
			continue
		}
		for _, t := range threads {
			ours := &coldRow{Query: q.Name, SQL: q.SQL, Engine: "cachebook", Threads: t}
			var theirs *coldRow
			if duck != "" {
				theirs = &coldRow{Query: q.Name, Engine: "duckdb", Threads: t,
					SQL: overParquet(q.SQL, abs)}
			}
			runOurs := func() {
				if ours.Error == "" {
					coldOurs(ctx, exe, dir, ours)
				}
			}
			runTheirs := func() {
				if theirs != nil && theirs.Error == "" {
					coldDuck(ctx, duck, theirs)
				}
			}
			if err := alternate(ctx, reps, func(r int) {
				fmt.Fprintf(stderr, "%s, %d thread(s): fresh processes, run %d ...\n", q.Name, t, r)
			}, runOurs, runTheirs); err != nil {
				return nil, err
			}
			for _, row := range []*coldRow{ours, theirs} {
				if row != nil && len(row.Runs) > 0 {
					row.MedianMS = median(row.Runs)
				}
			}
			if theirs != nil && theirs.MedianMS > 0 && ours.MedianMS > 0 {
				ours.VsDuckDB = ours.MedianMS / theirs.MedianMS
			}
			out = append(out, *ours)
			if theirs != nil {
				out = append(out, *theirs)
			}
		}
	}
	return out, nil
}

// alternate runs ours and theirs reps times each, before(r) ahead of
// round r (from 1), and stops early once ctx is done. Which goes first
// alternates: a fresh process right after another one's exit pays for the
// pages that one freed (a VM may hand them back to its host).
func alternate(ctx context.Context, reps int, before func(r int), ours, theirs func()) error {
	for r := 0; r < reps; r++ {
		before(r + 1)
		first, second := ours, theirs
		if r%2 == 1 {
			first, second = second, first
		}
		first()
		second()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// overParquet returns sql with its FROM hits reading the Parquet file at
// path through DuckDB's read_parquet.
func overParquet(sql, path string) string {
	return strings.Replace(sql, "FROM hits", "FROM read_parquet("+sqlQuote(path)+")", 1)
}

// benchChild runs exe with args, a fresh process of this program, and
// decodes the JSON it prints into res; it returns what went wrong as
// text for a row's Error ("" when nothing did). errOf gives the error the
// child reported in res.
func benchChild(ctx context.Context, exe string, args []string, res any, errOf func() string) string {
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return fmt.Sprintf("child process: %v", err)
	}
	if err := json.Unmarshal(b, res); err != nil {
		return fmt.Sprintf("child process output %q: %v", b, err)
	}
	return errOf()
}

// coldOurs runs row's query in a fresh cachebook process.
func coldOurs(ctx context.Context, exe, dir string, row *coldRow) {
	var res oneResult
	args := []string{"bench", "--data", dir, "--one-threads", strconv.Itoa(row.Threads), "--one", row.SQL}
	if row.Error = benchChild(ctx, exe, args, &res, func() string { return res.Error }); row.Error != "" {
		return
	}
	row.Runs = append(row.Runs, res.MS)
	row.Rows = res.Rows
	row.PeakRSS = max(row.PeakRSS, res.PeakRSS)
}

// coldDuck runs row's query in a fresh duckbench process.
func coldDuck(ctx context.Context, duck string, row *coldRow) {
	dc, err := startDuck(ctx, duck)
	if err != nil {
		row.Error = err.Error()
		return
	}
	r, err := dc.query(row.SQL, row.Threads)
	rss := peakRSS(dc.cmd.Process.Pid) // while it still runs
	cerr := dc.close()
	if err != nil {
		row.Error = err.Error()
		return
	}
	if cerr != nil {
		row.Error = cerr.Error()
		return
	}
	row.Runs = append(row.Runs, float64(r.NS)/1e6)
	row.Rows = r.Rows
	if len(r.Result) > 0 && len(r.Result[0]) > 0 && r.Result[0][0] != nil && strings.HasPrefix(row.Query, "Q") {
		row.Rows, _ = strconv.ParseInt(*r.Result[0][0], 10, 64)
	}
	row.PeakRSS = max(row.PeakRSS, rss)
}

// scaling compares parallel/2t with parallel/1t for every query with both.
func scaling(results []benchRow) []scalingRow {
	var out []scalingRow
	for _, one := range results {
		if one.Variant != (benchVariant{"cachebook", "parallel", 1}) || one.MedianMS == 0 {
			continue
		}
		for _, two := range results {
			if two.Query == one.Query && two.Variant == (benchVariant{"cachebook", "parallel", 2}) && two.MedianMS > 0 {
				out = append(out, scalingRow{Query: one.Query, OneMS: one.MedianMS, TwoMS: two.MedianMS, Speedup: one.MedianMS / two.MedianMS})
			}
		}
	}
	return out
}

func writeColdTable(b *strings.Builder, rows []coldRow, scale []scalingRow) {
	if len(rows) > 0 {
		b.WriteString("\nCold and first look: a fresh process per run, straight from the Parquet file (in the OS page cache); time from opening the data to the last row (DuckDB: the query's time in read_parquet), peak resident memory of the process.\n\n")
		b.WriteString("| query | engine | threads | rows/groups | median ms | peak RSS MiB | time vs DuckDB |\n|---|---|---|---|---|---|---|\n")
		for _, r := range rows {
			if r.Error != "" {
				fmt.Fprintf(b, "| %s | %s | %d | | error: %s | | |\n", r.Query, r.Engine, r.Threads, r.Error)
				continue
			}
			vs := ""
			if r.VsDuckDB > 0 {
				vs = fmt.Sprintf("%.2f×", r.VsDuckDB)
			}
			fmt.Fprintf(b, "| %s | %s | %d | %d | %.1f | %.0f | %s |\n", r.Query, r.Engine, r.Threads, r.Rows, r.MedianMS, float64(r.PeakRSS)/(1<<20), vs)
		}
	}
	if len(scale) > 0 {
		b.WriteString("\n| query | parallel 1 thread ms | parallel 2 threads ms | 2-thread speedup |\n|---|---|---|---|\n")
		for _, s := range scale {
			fmt.Fprintf(b, "| %s | %.1f | %.1f | %.2f× |\n", s.Query, s.OneMS, s.TwoMS, s.Speedup)
		}
	}
}
