package difftest

import (
	"bufio"
	"context"
	"crypto/md5"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"cachebook/engine"
	"cachebook/engine/vec"
)

// This file runs sqllogictest files, DuckDB's test format, against
// cachebook: DuckDB executes the files' statements (CREATE TABLE, INSERT),
// every table is exported to Parquet with DuckDB's COPY, and each query
// block runs on cachebook's engine over that directory and is compared
// with the file's expected result.

// SLTRecord is one statement or query of a sqllogictest file.
type SLTRecord struct {
	Line      int    // 1-based line of the record's header
	Query     bool   // a query block (else a statement)
	WantError bool   // statement error
	SQL       string // the statement text
	Types     string // query: one letter per result column
	Sort      string // query: "nosort", "rowsort" or "valuesort"
	// Label names a query whose result must equal that of the other
	// queries with the label (its Expected is then often empty).
	Label    string
	Expected []string
	// Skip, when not "", says why the record is not run (inside a loop,
	// skipif duckdb, mode skip).
	Skip string
}

// SLTFile is a parsed sqllogictest file.
type SLTFile struct {
	Records []SLTRecord
	// Skip, when not "", says why the whole file is not run (a require of
	// an extension, include, unzip).
	Skip string
}

// requireOK lists the require lines that do not stop a file: properties of
// a build that do not change results.
var requireOK = map[string]bool{
	"skip_reload": true, "noforcestorage": true, "no_alternative_verify": true, "notwindows": true,
	"notmingw": true, "vector_size": true, "longdouble": false, "no_extension_autoloading": true,
	"no_vector_verification": true, "no_block_verification": true, "ram": true, "64bit": true,
	"exact_vector_size": true, "block_size": true, "strinline": true,
}

// ParseSLT parses the text of a sqllogictest file.
func ParseSLT(src string) *SLTFile {
	f := &SLTFile{}
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	loop := 0
	modeSkip := false
	skipNext := ""
	i := 0
	// block reads lines from i up to a blank line or ----; it reports
	// whether it stopped at ----.
	block := func() ([]string, bool) {
		var out []string
		for ; i < len(lines); i++ {
			l := lines[i]
			if strings.TrimSpace(l) == "" {
				return out, false
			}
			if l == "----" {
				i++
				return out, true
			}
			out = append(out, l)
		}
		return out, false
	}
	results := func() []string {
		var out []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		return out
	}
	for i < len(lines) {
		line := strings.TrimSpace(lines[i])
		at := i + 1
		i++
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		tok := strings.Fields(line)
		switch tok[0] {
		case "require":
			if len(tok) > 1 && !requireOK[tok[1]] {
				f.Skip = "require " + strings.Join(tok[1:], " ")
				return f
			}
		case "require-env", "include", "unzip", "test-env":
			f.Skip = line
			return f
		case "halt":
			return f
		case "mode":
			if len(tok) > 1 {
				switch tok[1] {
				case "skip":
					modeSkip = true
				case "unskip":
					modeSkip = false
				}
			}
		case "loop", "foreach", "concurrentloop", "concurrentforeach":
			loop++
		case "endloop":
			loop = max(loop-1, 0)
		case "onlyif":
			if len(tok) > 1 && tok[1] != "duckdb" {
				skipNext = line
			}
		case "skipif":
			if len(tok) > 1 && tok[1] == "duckdb" {
				skipNext = line
			}
		case "statement", "query":
			r := SLTRecord{Line: at, Query: tok[0] == "query"}
			if r.Query {
				r.Sort = "nosort"
				if len(tok) > 1 {
					r.Types = tok[1]
				}
				if len(tok) > 2 {
					r.Sort = tok[2]
				}
				if len(tok) > 3 {
					r.Label = tok[3]
				}
			} else {
				r.WantError = len(tok) > 1 && tok[1] == "error"
			}
			sqlLines, dashes := block()
			r.SQL = strings.Join(sqlLines, "\n")
			if dashes {
				res := results()
				if r.Query {
					r.Expected = res
				}
			}
			switch {
			case loop > 0:
				r.Skip = "inside a loop"
			case modeSkip:
				r.Skip = "mode skip"
			case skipNext != "":
				r.Skip = skipNext
			}
			skipNext = ""
			f.Records = append(f.Records, r)
		default:
			// hash-threshold, load, restart, reconnect, sleep, tags,
			// continue, set, reset: nothing to do for a one-engine run.
		}
	}
	return f
}

// SLTOutcome classifies one query of a file.
type SLTOutcome struct {
	File, SQL string
	Line      int
	// Status is "pass", "unsupported", "wrong", "error" (an error that
	// does not say "not supported"), "drift" (cachebook answers as the
	// DuckDB linked here, whose answer is not the file's: the file is
	// newer or older), "bad-expected" (VerifyDuck) or "skip".
	Status string
	// Detail is the error, the reason for a skip, or the mismatch.
	Detail string
}

// sltIgnoredSettings are DuckDB settings (SET and PRAGMA) that change how
// DuckDB runs a query, not its result: they are not sent to cachebook.
var sltIgnoredSettings = regexp.MustCompile(`^(debug_|verify_|enable_verification|disable_verification|threads|worker_threads|memory_limit|max_memory|enable_profiling|profiling_|explain_output|temp_directory|force_|checkpoint|wal_|enable_object_cache|perfect_ht_threshold|ordered_aggregate_threshold|preserve_insertion_order|disabled_optimizers|enable_optimizer|disable_optimizer|verify_parallelism|storage_compatibility|enable_external_access|autoload|autoinstall|immediate_transaction_mode|errors_as_json|partitioned_write|variable|integer_division|scalar_subquery_error_on_multiple_rows|order_by_non_integer_literal|disable_checkpoint_on_shutdown|allocator_|arrow_|default_block_size|enable_progress_bar|progress_bar)`)

// sltSetting returns the setting a SET, RESET or PRAGMA statement names
// (lower case), or "".
var sltSettingRE = regexp.MustCompile(`(?is)^\s*(?:set\s+(?:session\s+|global\s+|local\s+)?|reset\s+|pragma\s+)([a-z_]+)`)

// SLTRunner runs sqllogictest files.
type SLTRunner struct {
	// Dir is a scratch directory for the Parquet exports.
	Dir string
	// QueryTimeout bounds each query on cachebook (default 10 s).
	QueryTimeout time.Duration
	// VerifyDuck checks the file's expected results against DuckDB too:
	// a query whose expected result is not DuckDB's answer is reported
	// with status "bad-expected" (for our own test files).
	VerifyDuck bool
}

// RunFile runs one file and returns the outcome of each query record.
func (r *SLTRunner) RunFile(ctx context.Context, name, src string) ([]SLTOutcome, error) {
	f := ParseSLT(src)
	if f.Skip != "" {
		return []SLTOutcome{{File: name, Status: "skip", Detail: f.Skip}}, nil
	}
	duck, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	defer duck.Close()
	duck.SetMaxOpenConns(1)
	dir, err := os.MkdirTemp(r.Dir, "slt-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	timeout := r.QueryTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}

	var (
		ours     *engine.DB
		sess     *engine.Session
		dirty    = true
		settings []string         // SET statements cachebook accepted
		failed   map[string]error // tables DuckDB could not write to Parquet
		setupErr error            // a statement the file expects to work that failed here
		badSet   string           // a SET cachebook refused: later queries depend on it
		out      []SLTOutcome
	)
	defer func() {
		if ours != nil {
			ours.Close()
		}
	}()
	for _, rec := range f.Records {
		o := SLTOutcome{File: name, SQL: rec.SQL, Line: rec.Line}
		if rec.Skip != "" {
			if rec.Query {
				o.Status, o.Detail = "skip", rec.Skip
				out = append(out, o)
			}
			continue
		}
		text := strings.ReplaceAll(rec.SQL, "__TEST_DIR__", dir)
		if rec.Query && strings.Contains(text, "{TEST_DIR}") {
			o.Status, o.Detail = "skip", "reads a file the test wrote"
			out = append(out, o)
			continue
		}
		if !rec.Query || !isReadOnly(text) {
			_, derr := duck.ExecContext(ctx, text)
			if derr != nil && !rec.Query && !rec.WantError {
				setupErr = derr
			}
			if m := sltSettingRE.FindStringSubmatch(text); m != nil && derr == nil {
				setting := strings.ToLower(m[1])
				if !sltIgnoredSettings.MatchString(setting) {
					st := text
					if strings.HasPrefix(strings.ToLower(strings.TrimSpace(st)), "pragma") {
						st = "SET " + strings.TrimSpace(st)[len("pragma"):]
					}
					if sess == nil {
						settings = append(settings, st)
					} else if _, err := sess.Exec(ctx, st, nil); err != nil {
						badSet = fmt.Sprintf("SET %s: %v", setting, err)
					} else {
						settings = append(settings, st)
					}
				}
			} else if derr == nil {
				dirty = true
			}
			if rec.Query {
				o.Status, o.Detail = "skip", "not a SELECT"
				out = append(out, o)
			}
			continue
		}
		if dirty {
			if ours != nil {
				ours.Close()
				ours, sess = nil, nil
			}
			if failed, err = exportTables(ctx, duck, dir); err != nil {
				return nil, err
			}
			ours, err = engine.Open(engine.Options{DataDir: dir})
			if err != nil {
				return nil, fmt.Errorf("engine.Open: %w", err)
			}
			sess = ours.NewSession()
			var keep []string
			for _, st := range settings {
				if _, err := sess.Exec(ctx, st, nil); err != nil {
					badSet = fmt.Sprintf("%s: %v", st, err)
				} else {
					keep = append(keep, st)
				}
			}
			settings = keep
			dirty = false
		}
		if badSet != "" {
			o.Status, o.Detail = "unsupported", badSet
			out = append(out, o)
			continue
		}
		if len(rec.Expected) == 0 && rec.Label != "" {
			// A labelled query without a result must give what the
			// other queries of its label give: DuckDB's answer.
			dgot, derr := duckStrings(ctx, duck, text)
			if derr != nil {
				o.Status, o.Detail = "skip", "labelled query DuckDB does not answer here: "+derr.Error()
				out = append(out, o)
				continue
			}
			rec.Expected = rowsToLines(dgot)
		}
		if r.VerifyDuck {
			dgot, derr := duckStrings(ctx, duck, text)
			if derr == nil && compareSLT(rec, dgot) != "" {
				derr = errors.New(compareSLT(rec, dgot))
			}
			if derr != nil {
				o.Status, o.Detail = "bad-expected", "DuckDB: "+derr.Error()
				out = append(out, o)
				continue
			}
		}
		qctx, cancel := context.WithTimeout(ctx, timeout)
		got, err := oursStrings(qctx, sess, text)
		cancel()
		if err != nil {
			o.Status, o.Detail = "error", err.Error()
			msg := err.Error()
			for name, ferr := range failed {
				if strings.Contains(msg, fmt.Sprintf("table %q does not exist", name)) {
					msg = fmt.Sprintf("table %s has a type Parquet does not hold, not supported: %v", name, ferr)
					o.Detail = msg
				}
			}
			if setupErr != nil && strings.Contains(msg, "does not exist") {
				o.Status, o.Detail = "skip", "a statement before failed in this DuckDB: "+setupErr.Error()
				out = append(out, o)
				continue
			}
			// The storage layer names a column type it cannot read
			// "unsupported Parquet type".
			if strings.Contains(msg, "not supported") || strings.Contains(msg, "unsupported Parquet type") {
				o.Status = "unsupported"
			}
			out = append(out, o)
			continue
		}
		if mismatch := compareSLT(rec, got); mismatch != "" {
			// Hashes need DuckDB's rendering of every value: compare
			// with DuckDB's own answer instead, and say when DuckDB's
			// answer is not the file's either.
			dgot, derr := duckStrings(ctx, duck, text)
			switch {
			case derr != nil:
				mismatch += fmt.Sprintf("\n(DuckDB here: %v)", derr)
			case compareSLT(SLTRecord{Types: rec.Types, Sort: rec.Sort, Expected: rowsToLines(dgot)}, got) == "":
				if isHash(rec.Expected) {
					mismatch = ""
				} else {
					o.Status = "drift"
					mismatch += "\n(cachebook equals this DuckDB's answer: the file expects another version's)"
				}
			}
			if mismatch != "" {
				if o.Status == "" {
					o.Status = "wrong"
				}
				o.Detail = mismatch
				out = append(out, o)
				continue
			}
		}
		o.Status = "pass"
		out = append(out, o)
	}
	return out, nil
}

// isReadOnly reports whether a query block's SQL is a query that cachebook
// could answer (SELECT, WITH, FROM, VALUES, a parenthesised SELECT), not
// a statement with effects or a DuckDB-only command.
func isReadOnly(s string) bool {
	s = strings.ToLower(strings.TrimLeft(s, " \t\n("))
	for _, p := range []string{"select", "with", "from ", "values", "explain", "describe", "show", "summarize", "table "} {
		if strings.HasPrefix(s, p) {
			return p != "explain" && p != "describe" && p != "show" && p != "summarize"
		}
	}
	return false
}

// exportTables writes every table and view of DuckDB's main schema to
// dir/NAME.parquet, after removing the previous exports. It returns the
// tables DuckDB could not write (an aggregate state column, say).
func exportTables(ctx context.Context, duck *sql.DB, dir string) (map[string]error, error) {
	old, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	for _, p := range old {
		os.Remove(p)
	}
	rows, err := duck.QueryContext(ctx, `SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'
		UNION ALL SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main'`)
	if err != nil {
		return nil, fmt.Errorf("duckdb: list tables: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, n)
	}
	rows.Close()
	failed := map[string]error{}
	for _, n := range names {
		if strings.ContainsAny(n, `/\`) {
			continue
		}
		// A table that Parquet cannot hold is left out: queries over it
		// fail on cachebook as over a missing table.
		path := filepath.Join(dir, n+".parquet")
		if err := WriteParquet(ctx, duck, "SELECT * FROM "+SQLIdent(n), path); err != nil {
			os.Remove(path)
			failed[n] = err
		}
	}
	return failed, nil
}

// oursStrings runs src on sess and renders its last result as the
// sqllogictest runner renders values.
func oursStrings(ctx context.Context, sess *engine.Session, src string) ([][]string, error) {
	res, err := sess.Exec(ctx, src, nil)
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, errors.New("no result")
	}
	last := res[len(res)-1]
	out := make([][]string, last.Rows)
	for i := range out {
		row := make([]string, len(last.Vecs))
		for j, v := range last.Vecs {
			row[j] = sltValue(v, i)
		}
		out[i] = row
	}
	return out, nil
}

// sltValue renders value i of v as DuckDB's sqllogictest runner does:
// NULL, (empty) for an empty string, numbers in full precision.
func sltValue(v *vec.Vector, i int) string {
	if v.IsNull(i) {
		return "NULL"
	}
	var s string
	switch v.Type {
	case vec.Float64:
		s = strconv.FormatFloat(v.F64[i], 'g', -1, 64)
	case vec.Float32:
		s = strconv.FormatFloat(float64(float32(v.F64[i])), 'g', -1, 32)
	case vec.Timestamp:
		t := time.UnixMicro(v.I64[i]).UTC()
		s = t.Format("2006-01-02 15:04:05.999999")
	case vec.Interval:
		s = intervalString(v.I64[i])
	default:
		s = v.Format(i)
	}
	if s == "" {
		return "(empty)"
	}
	return s
}

// intervalString renders microseconds as DuckDB renders an INTERVAL of
// days and time.
func intervalString(us int64) string {
	neg := us < 0
	if neg {
		us = -us
	}
	days := us / 86_400_000_000
	us %= 86_400_000_000
	var parts []string
	if days != 0 {
		unit := " days"
		if days == 1 {
			unit = " day"
		}
		d := strconv.FormatInt(days, 10)
		if neg {
			d = "-" + d
		}
		parts = append(parts, d+unit)
	}
	if us != 0 || days == 0 {
		h, m, s, f := us/3_600_000_000, us/60_000_000%60, us/1_000_000%60, us%1_000_000
		t := fmt.Sprintf("%02d:%02d:%02d", h, m, s)
		if f != 0 {
			t += strings.TrimRight(fmt.Sprintf(".%06d", f), "0")
		}
		if neg {
			t = "-" + t
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, " ")
}

// duckStrings runs q on DuckDB and renders its rows.
func duckStrings(ctx context.Context, duck *sql.DB, q string) ([][]string, error) {
	rows, err := duck.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = duckValue(Normalize(v))
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func duckValue(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return "NULL"
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0 {
			s = x.Format("2006-01-02")
		} else {
			s = x.Format("2006-01-02 15:04:05.999999")
		}
	default:
		s = fmt.Sprint(x)
	}
	if s == "" {
		return "(empty)"
	}
	return s
}

func rowsToLines(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, "\t")
	}
	return out
}

var hashRE = regexp.MustCompile(`^(\d+) values hashing to ([0-9a-f]{32})$`)

func isHash(exp []string) bool { return len(exp) == 1 && hashRE.MatchString(exp[0]) }

// compareSLT compares rows with the record's expected result and returns
// "" when they agree, else a description of the difference.
func compareSLT(rec SLTRecord, rows [][]string) string {
	ncols := len(rec.Types)
	if len(rows) > 0 && len(rows[0]) != ncols && ncols > 0 {
		return fmt.Sprintf("%d columns, the file expects %d", len(rows[0]), ncols)
	}
	if len(rows) > 0 {
		ncols = len(rows[0])
	}
	var got []string
	for _, r := range rows {
		got = append(got, r...)
	}
	sortValues(rec.Sort, got, ncols)
	if isHash(rec.Expected) {
		m := hashRE.FindStringSubmatch(rec.Expected[0])
		h := md5.New()
		for _, v := range got {
			h.Write([]byte(v))
			h.Write([]byte("\n"))
		}
		mine := fmt.Sprintf("%d values hashing to %s", len(got), hex.EncodeToString(h.Sum(nil)))
		if mine != rec.Expected[0] {
			return fmt.Sprintf("%s, the file expects %s", mine, m[0])
		}
		return ""
	}
	var want []string
	rowWise := ncols > 0
	for _, l := range rec.Expected {
		if len(strings.Split(l, "\t")) != ncols {
			rowWise = false
		}
	}
	for _, l := range rec.Expected {
		if rowWise {
			for _, v := range strings.Split(l, "\t") {
				// DuckDB's runner ignores spaces around a value.
				want = append(want, strings.TrimSpace(v))
			}
		} else {
			want = append(want, l)
		}
	}
	sortValues(rec.Sort, want, ncols)
	describe := func() string {
		var b strings.Builder
		fmt.Fprintf(&b, "got %d rows:\n", len(rows))
		for i, r := range rows {
			if i == 10 {
				b.WriteString("…\n")
				break
			}
			b.WriteString(strings.Join(r, "\t") + "\n")
		}
		fmt.Fprintf(&b, "the file expects:\n%s", strings.Join(rec.Expected[:min(len(rec.Expected), 10)], "\n"))
		return b.String()
	}
	if len(got) != len(want) {
		return describe()
	}
	same := true
	for i := range got {
		if !sltEqual(got[i], want[i]) {
			same = false
			break
		}
	}
	if same {
		return ""
	}
	if rec.Sort == "nosort" {
		return describe()
	}
	// Sorted as strings, numbers that render differently in the two
	// engines can sort apart: match rows (or values) as multisets.
	width := ncols
	if rec.Sort == "valuesort" || width == 0 {
		width = 1
	}
	used := make([]bool, len(want)/width)
	for i := 0; i < len(got); i += width {
		found := false
		for j := range used {
			if used[j] {
				continue
			}
			ok := true
			for k := 0; k < width; k++ {
				if !sltEqual(got[i+k], want[j*width+k]) {
					ok = false
					break
				}
			}
			if ok {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return describe()
		}
	}
	return ""
}

func sortValues(mode string, vals []string, ncols int) {
	switch mode {
	case "valuesort":
		slices.Sort(vals)
	case "rowsort":
		if ncols == 0 || len(vals)%ncols != 0 {
			return
		}
		rows := make([][]string, len(vals)/ncols)
		for i := range rows {
			rows[i] = slices.Clone(vals[i*ncols : (i+1)*ncols])
		}
		slices.SortFunc(rows, slices.Compare)
		for i, r := range rows {
			copy(vals[i*ncols:], r)
		}
	}
}

// sltEqual compares a value of ours with an expected one: equal text,
// booleans as 1/0 or true/false, integers exactly, and numbers with a
// fraction or exponent within a relative 1e-6 (DuckDB's runner allows 1%,
// which would hide wrong answers).
func sltEqual(got, want string) bool {
	if got == want {
		return true
	}
	lb := func(s string) string {
		switch strings.ToLower(s) {
		case "true", "1":
			return "1"
		case "false", "0":
			return "0"
		}
		return s
	}
	if g, w := lb(got), lb(want); (g == "1" || g == "0") && g == w {
		return true
	}
	gi, ok1 := new(big.Int).SetString(got, 10)
	wi, ok2 := new(big.Int).SetString(want, 10)
	if ok1 && ok2 {
		return gi.Cmp(wi) == 0
	}
	gf, err1 := strconv.ParseFloat(got, 64)
	wf, err2 := strconv.ParseFloat(want, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	if math.IsNaN(gf) || math.IsNaN(wf) {
		return math.IsNaN(gf) && math.IsNaN(wf)
	}
	if math.IsInf(gf, 0) || math.IsInf(wf, 0) {
		return gf == wf
	}
	return math.Abs(gf-wf) <= math.Abs(wf)*1e-6+1e-8
}

// SLTSummary counts outcomes: status → count, and for unsupported and
// error outcomes the normalised message → count.
type SLTSummary struct {
	Counts   map[string]int
	Features map[string]int
	Errors   map[string]int
}

var (
	posRE   = regexp.MustCompile(`^(line \d+, column \d+: |\d+:\d+: )`)
	quoteRE = regexp.MustCompile(`"[^"]*"|'[^']*'|\d+`)
)

// Summarize counts outcomes.
func Summarize(outs []SLTOutcome) SLTSummary {
	s := SLTSummary{Counts: map[string]int{}, Features: map[string]int{}, Errors: map[string]int{}}
	for _, o := range outs {
		s.Counts[o.Status]++
		msg := posRE.ReplaceAllString(firstLineOf(o.Detail), "")
		switch o.Status {
		case "unsupported":
			s.Features[msg]++
		case "error":
			s.Errors[quoteRE.ReplaceAllString(msg, "…")]++
		}
	}
	return s
}

func firstLineOf(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	if sc.Scan() {
		return sc.Text()
	}
	return s
}
