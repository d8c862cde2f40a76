package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"cachebook/engine"
)

// spillQuery is ClickBench's Q17 (GROUP BY UserID, SearchPhrase LIMIT 10),
// wrapped like the other benchmark queries so that both engines build every
// group: its groups outgrow a small memory limit, and the radix partitions
// go to disk.
var spillQuery = benchQuery{"Q17 spill",
	"SELECT UserID, SearchPhrase, count(*) AS c FROM hits GROUP BY UserID, SearchPhrase", []string{"UserID", "SearchPhrase"}}

// spillColumnCache bounds the column cache of the spill row's cachebook
// processes. The cache is memory outside memory_limit (DuckDB's limit
// covers its buffers); one this small keeps no whole column, so the
// columns are converted a morsel at a time and the process's peak RSS is
// the query's own memory, comparable with DuckDB's under the same limit.
const spillColumnCache = 64 << 20

// spillRow is one engine's spill query under one memory limit, each run a
// fresh process reading the Parquet file, as the cold rows.
type spillRow struct {
	Query       string    `json:"query"`
	SQL         string    `json:"sql"`
	Engine      string    `json:"engine"`
	Threads     int       `json:"threads"`
	MemoryLimit string    `json:"memory_limit"`
	Runs        []float64 `json:"runs_ms"`
	MedianMS    float64   `json:"median_ms"`
	PeakRSS     int64     `json:"peak_rss_bytes"` // largest over the runs; 0 when unknown
	Groups      int64     `json:"groups"`
	// Spill is the plan's "spilled: ..." line of the last run (cachebook
	// only; empty when it did not spill) and SpilledBytes the bytes it
	// names; DuckDB's temporary files are not measured.
	Spill        string  `json:"spill,omitempty"`
	SpilledBytes int64   `json:"spilled_bytes,omitempty"`
	VsDuckDB     float64 `json:"time_vs_duckdb,omitempty"`
	Error        string  `json:"error,omitempty"`
}

// spillResult is what a child process (bench --spill-one) prints.
type spillResult struct {
	MS           float64 `json:"ms"`
	Groups       int64   `json:"groups"`
	PeakRSS      int64   `json:"peak_rss_bytes"`
	Spill        string  `json:"spill,omitempty"`
	SpilledBytes int64   `json:"spilled_bytes,omitempty"`
	Error        string  `json:"error,omitempty"`
}

// benchSpillOne runs src in this process, a fresh one started by runSpill,
// under memory_limit limit with its spill files in tempDir, and prints a
// spillResult: the time from opening the data directory to the last row,
// and what the aggregate says it spilled.
func benchSpillOne(ctx context.Context, dir, src string, threads int, limit, tempDir string, stdout io.Writer) error {
	start := time.Now()
	var res spillResult
	db, err := openEngine(engine.Options{DataDir: dir, Cache: hostCacheSizes(), CacheBytes: spillColumnCache})
	if err == nil {
		set := fmt.Sprintf("SET threads = %d; SET memory_limit = %s; ", threads, sqlQuote(limit))
		if tempDir != "" {
			set += "SET temp_directory = " + sqlQuote(tempDir) + "; "
		}
		var rs []*engine.Result
		rs, err = db.NewSession().Exec(ctx, set+src, nil)
		if err == nil && len(rs) > 0 {
			r := rs[len(rs)-1]
			if r.Rows == 1 && len(r.Vecs) > 0 {
				res.Groups, _ = r.Vecs[0].Value(0).(int64)
			}
			res.Spill = spillLine(r.Plan)
			res.SpilledBytes = spilledBytes(res.Spill)
		}
	}
	res.MS = float64(time.Since(start).Microseconds()) / 1000
	res.PeakRSS = peakRSS(0)
	if err != nil {
		res.Error = err.Error()
	}
	return json.NewEncoder(stdout).Encode(res)
}

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// spillLine returns the first "spilled: ..." detail of the plan, without
// its prefix, or "" when no operator spilled.
func spillLine(n *engine.PlanNode) string {
	if n == nil {
		return ""
	}
	for _, d := range n.Detail {
		if s, ok := strings.CutPrefix(d, "spilled: "); ok {
			return s
		}
	}
	for _, c := range n.Children {
		if s := spillLine(c); s != "" {
			return s
		}
	}
	return ""
}

var spilledRE = regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?) ?([KMGT]iB|B) in [0-9]+ files`)

// spilledBytes reads the size out of a spill line such as "128 partitions,
// 415.0 MiB in 256 files to ...", to the precision it was printed with; 0
// when the line names none.
func spilledBytes(line string) int64 {
	m := spilledRE.FindStringSubmatch(line)
	if m == nil {
		return 0
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	mult := map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[m[2]]
	return int64(math.Round(f * mult))
}

// runSpill measures spillQuery under memory_limit limit in fresh processes
// of this binary and of duckbench (DuckDB's read_parquet over the same file,
// under the same limit and threads, spilling to a temporary directory), reps
// times each, alternating which engine goes first.
func runSpill(ctx context.Context, path string, threads []int, reps int, limit, duck string, stderr io.Writer) ([]spillRow, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "cachebook-bench-spill-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	q := spillQuery.sql()
	var out []spillRow
	for _, t := range threads {
		ours := &spillRow{Query: spillQuery.Name, SQL: q, Engine: "cachebook", Threads: t, MemoryLimit: limit}
		var theirs *spillRow
		if duck != "" {
			theirs = &spillRow{Query: spillQuery.Name, Engine: "duckdb", Threads: t, MemoryLimit: limit,
				SQL: overParquet(q, abs)}
		}
		runOurs := func() {
			if ours.Error == "" {
				spillOurs(ctx, exe, filepath.Dir(abs), filepath.Join(tmp, "cachebook"), ours)
			}
		}
		runTheirs := func() {
			if theirs != nil && theirs.Error == "" {
				spillDuck(ctx, duck, filepath.Join(tmp, "duckdb"), theirs)
			}
		}
		if err := alternate(ctx, reps, func(r int) {
			fmt.Fprintf(stderr, "%s under memory_limit %s, %d thread(s): fresh processes, run %d ...\n", spillQuery.Name, limit, t, r)
		}, runOurs, runTheirs); err != nil {
			return nil, err
		}
		for _, row := range []*spillRow{ours, theirs} {
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
	return out, nil
}

// spillOurs runs row's query in a fresh cachebook process spilling to tmp.
func spillOurs(ctx context.Context, exe, dir, tmp string, row *spillRow) {
	var res spillResult
	args := []string{"bench", "--data", dir, "--one-threads", strconv.Itoa(row.Threads),
		"--spill-limit", row.MemoryLimit, "--spill-dir", tmp, "--spill-one", spillQuery.sql()}
	if row.Error = benchChild(ctx, exe, args, &res, func() string { return res.Error }); row.Error != "" {
		return
	}
	row.Runs = append(row.Runs, res.MS)
	row.Groups = res.Groups
	row.PeakRSS = max(row.PeakRSS, res.PeakRSS)
	row.Spill, row.SpilledBytes = res.Spill, res.SpilledBytes
}

// spillDuck runs row's query in a fresh duckbench process under the row's
// memory limit, spilling to tmp.
func spillDuck(ctx context.Context, duck, tmp string, row *spillRow) {
	dc, err := startDuck(ctx, duck, "-threads", strconv.Itoa(row.Threads), "-memory-limit", row.MemoryLimit)
	if err != nil {
		row.Error = err.Error()
		return
	}
	err = dc.exec("SET temp_directory = " + sqlQuote(tmp))
	var r duckReply
	if err == nil {
		r, err = dc.query(row.SQL, row.Threads)
	}
	rss := peakRSS(dc.cmd.Process.Pid) // while it still runs
	cerr := dc.close()
	os.RemoveAll(tmp)
	if err != nil {
		row.Error = err.Error()
		return
	}
	if cerr != nil {
		row.Error = cerr.Error()
		return
	}
	row.Runs = append(row.Runs, float64(r.NS)/1e6)
	if len(r.Result) > 0 && len(r.Result[0]) > 0 && r.Result[0][0] != nil {
		row.Groups, _ = strconv.ParseInt(*r.Result[0][0], 10, 64)
	}
	row.PeakRSS = max(row.PeakRSS, rss)
}

// writeSpillTable writes the spill rows as a markdown table.
func writeSpillTable(b *strings.Builder, rows []spillRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "\nSpill: %s under SET memory_limit = '%s' in both engines, a fresh process per run, straight from the Parquet file (cachebook's column cache %d MiB); time from opening the data to the last row (DuckDB: the query's time in read_parquet), peak resident memory of the process.\n\n",
		rows[0].Query, rows[0].MemoryLimit, spillColumnCache>>20)
	b.WriteString("| query | engine | threads | groups | median ms | peak RSS MiB | spilled | time vs DuckDB |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(b, "| %s | %s | %d | | error: %s | | | |\n", r.Query, r.Engine, r.Threads, r.Error)
			continue
		}
		spilled := "not measured"
		if r.Engine == "cachebook" {
			spilled = "did not spill"
			if r.Spill != "" {
				spilled = fmt.Sprintf("%.0f MiB", float64(r.SpilledBytes)/(1<<20))
			}
		}
		vs := ""
		if r.VsDuckDB > 0 {
			vs = fmt.Sprintf("%.2f×", r.VsDuckDB)
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %.1f | %.0f | %s | %s |\n", r.Query, r.Engine, r.Threads, r.Groups, r.MedianMS,
			float64(r.PeakRSS)/(1<<20), spilled, vs)
	}
}
