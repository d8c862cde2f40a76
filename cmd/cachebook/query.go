package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"strings"
	"time"
	"unicode/utf8"

	"cachebook/engine"
	"cachebook/engine/sql"
	"cachebook/engine/units"
	"cachebook/engine/vec"
	"cachebook/kernel"
)

// startCPUProfile profiles the process into path until the returned
// function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func cmdQuery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("query", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "data directory (default $CACHEBOOK_DATA or ./data)")
	format := fs.String("format", "table", "output format: table, tsv or json")
	var counters countersFlag
	fs.Var(&counters, "counters", "measure perf counters per phase and per worker (--counters), model them (--counters=model: engine/cachesim), or both")
	cacheSize := fs.String("cache", "8GiB", "memory for decoded columns kept between queries (a SET memory_limit covers each query's own memory, not this cache)")
	geometry := fs.String("geometry", "", `modelled geometry and sampling for --counters=model, e.g. "l1=32K l2=1M l3=32M sample=1/16 dram_ns=90"`)
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run, opening the data included, to this file (go tool pprof)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: cachebook query [--data DIR] [--cache SIZE] [--format table|tsv|json] [--counters[=model|both]] [--geometry "l3=32M ..."] "SQL; SQL; ..."`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("want exactly one SQL argument (statements separated by ;)")
	}
	switch *format {
	case "table", "tsv", "json":
	default:
		return fmt.Errorf("unknown --format %q (want table, tsv or json)", *format)
	}
	cacheBytes, err := units.ParseBytes(*cacheSize)
	if err != nil || cacheBytes <= 0 {
		return fmt.Errorf("--cache %q: want a size such as 512MiB", *cacheSize)
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	base := goMemory() // before the data is opened
	db, err := openEngine(engine.Options{DataDir: dataDir(*data), Cache: hostCacheSizes(), CacheBytes: cacheBytes})
	if err != nil {
		return err
	}
	defer processMemory.boundTo(0)
	src := fs.Arg(0)
	stmts, err := sql.Parse(src)
	if err != nil {
		return sqlError(src, err)
	}
	modelAttrs, err := parseGeometry(*geometry)
	if err != nil {
		return err
	}
	sess := db.NewSession()
	timing := stdout
	if *format != "table" {
		timing = stderr
	}
	for _, st := range stmts {
		// This process runs one session: its memory_limit bounds the
		// collector's garbage too (statementBound).
		processMemory.boundTo(statementBound(base, cacheBytes, sess.Settings().MemoryLimit))
		start := time.Now()
		var meter queryMeter
		var hooks *engine.Hooks
		if counters.pmu() {
			if meter = newQueryMeter(); meter != nil {
				hooks = meter.hooks()
			}
		}
		var model *kernel.ModelRecorder
		if counters.model() {
			if model, err = kernel.NewModelRecorder(modelAttrs); err != nil {
				return err
			}
			hooks = model.Hooks(hooks)
		}
		r, err := sess.ExecStatement(ctx, st, hooks)
		if err != nil {
			return sqlError(src, err)
		}
		elapsed := time.Since(start)
		var modelled *kernel.ModelReport
		if model != nil && r.Plan != nil {
			modelled = model.Finish(ctx)
			modelled.Annotate([]*engine.Result{r}) // EXPLAIN ANALYZE prints them on the aggregate's node
		}
		if err := writeResult(stdout, r, *format); err != nil {
			return err
		}
		if meter != nil && r.Plan != nil {
			if err := meter.write(stdout, *format); err != nil {
				return err
			}
		}
		if modelled != nil {
			if err := writeModel(stdout, modelled, *format); err != nil {
				return err
			}
		}
		fmt.Fprintf(timing, "Time: %.3f ms\n", float64(elapsed.Microseconds())/1000)
	}
	return nil
}

// sqlError renders an error with a caret under its position when it has one.
func sqlError(src string, err error) error {
	var se *sql.Error
	if errors.As(err, &se) {
		return fmt.Errorf("%w\n%s", err, se.Caret(src))
	}
	return err
}

func writeResult(w io.Writer, r *engine.Result, format string) error {
	switch format {
	case "tsv":
		return writeTSV(w, r)
	case "json":
		return writeJSON(w, r)
	default:
		return writeTable(w, r)
	}
}

func writeTable(w io.Writer, r *engine.Result) error {
	if len(r.Columns) == 0 {
		_, err := fmt.Fprintln(w, r.Message)
		return err
	}
	cells := make([][]string, r.Rows)
	widths := make([]int, len(r.Columns))
	right := make([]bool, len(r.Columns))
	for j, c := range r.Columns {
		widths[j] = utf8.RuneCountInString(c.Name)
		right[j] = c.Type.IsNumeric() && c.Type != vec.Bool
	}
	for i := range cells {
		cells[i] = make([]string, len(r.Columns))
		for j, v := range r.Vecs {
			s := v.Format(i)
			cells[i][j] = s
			widths[j] = max(widths[j], utf8.RuneCountInString(s))
		}
	}
	var b strings.Builder
	pad := func(s string, j int) string {
		p := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(s))
		if right[j] {
			return p + s
		}
		return s + p
	}
	for j, c := range r.Columns {
		if j > 0 {
			b.WriteString(" | ")
		} else {
			b.WriteString(" ")
		}
		b.WriteString(pad(c.Name, j))
	}
	b.WriteString("\n")
	for j := range r.Columns {
		if j > 0 {
			b.WriteString("+")
		}
		b.WriteString(strings.Repeat("-", widths[j]+2))
	}
	b.WriteString("\n")
	for _, row := range cells {
		for j, s := range row {
			if j > 0 {
				b.WriteString(" | ")
			} else {
				b.WriteString(" ")
			}
			b.WriteString(pad(s, j))
		}
		b.WriteString("\n")
	}
	if r.Rows == 1 {
		b.WriteString("(1 row)\n")
	} else {
		fmt.Fprintf(&b, "(%d rows)\n", r.Rows)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// tsvEscaper escapes what would break a line of tab-separated values.
var tsvEscaper = strings.NewReplacer("\\", `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)

func writeTSV(w io.Writer, r *engine.Result) error {
	if len(r.Columns) == 0 {
		return nil
	}
	var b strings.Builder
	for j, c := range r.Columns {
		if j > 0 {
			b.WriteByte('\t')
		}
		b.WriteString(tsvEscaper.Replace(c.Name))
	}
	b.WriteByte('\n')
	for i := 0; i < r.Rows; i++ {
		for j, v := range r.Vecs {
			if j > 0 {
				b.WriteByte('\t')
			}
			if v.IsNull(i) {
				b.WriteString(`\N`)
			} else {
				b.WriteString(tsvEscaper.Replace(v.Format(i)))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// jsonResult is the JSON shape of one statement's result.
type jsonResult struct {
	Statement string           `json:"statement"`
	Columns   []jsonColumn     `json:"columns,omitempty"`
	Rows      [][]any          `json:"rows,omitempty"`
	RowCount  int              `json:"row_count"`
	Message   string           `json:"message,omitempty"`
	ElapsedMS float64          `json:"elapsed_ms"`
	Plan      *engine.PlanNode `json:"plan,omitempty"`
}

type jsonColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func writeJSON(w io.Writer, r *engine.Result) error {
	out := jsonResult{Statement: r.Statement, RowCount: r.Rows, Message: r.Message,
		ElapsedMS: float64(r.Elapsed.Microseconds()) / 1000, Plan: r.Plan}
	for _, c := range r.Columns {
		out.Columns = append(out.Columns, jsonColumn{c.Name, c.Type.String()})
	}
	for i := 0; i < r.Rows; i++ {
		row := make([]any, len(r.Vecs))
		for j, v := range r.Vecs {
			row[j] = jsonValue(v, i)
		}
		out.Rows = append(out.Rows, row)
	}
	enc := json.NewEncoder(w)
	return enc.Encode(out)
}

// jsonValue renders a value for JSON: numbers as numbers (non-finite
// doubles as strings), dates and timestamps as text.
func jsonValue(v *vec.Vector, i int) any {
	if v.IsNull(i) {
		return nil
	}
	switch v.Type {
	case vec.Float64:
		f := v.F64[i]
		if f != f || f > 1.7976931348623157e308 || f < -1.7976931348623157e308 {
			return v.Format(i)
		}
		return f
	case vec.Float32:
		// A float32 encodes as its shortest single-precision decimal
		// (3.14, not 3.140000104904175).
		f := float32(v.F64[i])
		if f != f || f > math.MaxFloat32 || f < -math.MaxFloat32 {
			return v.Format(i)
		}
		return f
	case vec.Date, vec.Timestamp, vec.TimestampNS, vec.Interval, vec.String:
		return v.Format(i)
	default:
		return v.Value(i)
	}
}
