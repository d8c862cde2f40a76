package jupyter

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"cachebook/engine"
	"cachebook/kernel"
	"cachebook/kernel/experiment"
	"cachebook/notebook"
)

// keywords are the SQL words the engine reads (engine/sql).
var keywords = []string{
	"SELECT", "FROM", "WHERE", "GROUP BY", "ORDER BY", "HAVING", "LIMIT", "OFFSET", "AS", "AND", "OR",
	"NOT", "IN", "IS", "NULL", "LIKE", "ILIKE", "BETWEEN", "CASE", "WHEN", "THEN", "ELSE", "END", "CAST",
	"DISTINCT", "ASC", "DESC", "NULLS", "WITH", "UNION", "ALL", "EXPLAIN", "EXPLAIN ANALYZE",
	"DESCRIBE", "SHOW TABLES", "SET", "TRUE", "FALSE",
}

// function is a documented SQL function.
type function struct{ name, sig, doc string }

var functions = []function{
	{"count", "count(*) | count(x) | count(DISTINCT x)", "Number of rows, of non-NULL values of x, or of distinct values of x."},
	{"sum", "sum(x)", "Sum of the non-NULL values of x (numeric). With SET sum_rewrite = true, sum(x + c) becomes sum(x) + c*count(x)."},
	{"avg", "avg(x)", "Mean of the non-NULL values of x (numeric)."},
	{"min", "min(x)", "Smallest value of x."},
	{"max", "max(x)", "Largest value of x."},
	{"any_value", "any_value(x)", "Some value of x from the group."},
	{"abs", "abs(x)", "Absolute value."},
	{"round", "round(x [, digits])", "x rounded to digits decimal places (default 0)."},
	{"floor", "floor(x)", "Largest integer not above x."},
	{"ceil", "ceil(x)", "Smallest integer not below x."},
	{"length", "length(s)", "Number of characters of s."},
	{"strlen", "strlen(s)", "Number of bytes of s."},
	{"lower", "lower(s)", "s in lower case."},
	{"upper", "upper(s)", "s in upper case."},
	{"substr", "substr(s, start [, length])", "Part of s from start (1-based)."},
	{"concat", "concat(a, b, ...)", "The arguments joined as text."},
	{"regexp_replace", "regexp_replace(s, pattern, replacement)", "s with the first match of the RE2 pattern replaced (\\1 refers to a group)."},
	{"coalesce", "coalesce(a, b, ...)", "The first non-NULL argument."},
	{"nullif", "nullif(a, b)", "NULL if a = b, else a."},
	{"date_trunc", "date_trunc(part, t)", "t truncated to part: 'year', 'month', 'day', 'hour', 'minute', ..."},
	{"date_part", "date_part(part, t)", "A field of t as a number: 'year', 'month', 'day', 'hour', ..."},
	{"extract", "extract(part FROM t)", "A field of t as a number."},
	{"epoch", "epoch(t)", "Seconds since 1970-01-01 of t."},
	{"to_timestamp", "to_timestamp(seconds)", "The timestamp seconds after 1970-01-01."},
	{"make_date", "make_date(y, m, d)", "The date y-m-d."},
	{"hour", "hour(t)", "Hour of t."},
	{"minute", "minute(t)", "Minute of t."},
	{"day", "day(t)", "Day of the month of t."},
}

// magicParams are the parameters each cell magic takes (kernel/measure.go).
var magicParams = map[string][]string{
	kernel.KindSQL:        {"counters", "timeout"},
	kernel.KindLatency:    {"min", "max", "ppo", "reps", "sample", "huge", "seed", "timeout"},
	kernel.KindBandwidth:  {"bytes", "threads", "ops", "reps", "timeout"},
	kernel.KindSweep:      {"rows", "groups", "strategies", "reps", "seed", "counters", "timeout"},
	kernel.KindExperiment: {"threads", "counters", "timeout"},
	kernel.KindCachesim:   {"l1", "l2", "l3", "l1ways", "prefetch", "sample", "timeout"},
}

// runeToByte converts a cursor position in code points (protocol 5.2+) to
// a byte offset in s.
func runeToByte(s string, pos int) int {
	if pos < 0 {
		return 0
	}
	i := 0
	for n := 0; n < pos && i < len(s); n++ {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return i
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c == '%' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// wordAt returns the byte range of the word ending at byte i.
func wordBefore(s string, i int) int {
	j := i
	for j > 0 && isWordByte(s[j-1]) {
		j--
	}
	return j
}

// complete answers a complete_request.
func (k *Kernel) complete(ctx context.Context, code string, cursor int) map[string]any {
	end := runeToByte(code, cursor)
	start := wordBefore(code, end)
	prefix := code[start:end]
	var matches []string
	add := func(cands ...string) {
		for _, c := range cands {
			if strings.HasPrefix(strings.ToLower(c), strings.ToLower(prefix)) {
				matches = append(matches, c)
			}
		}
	}
	line := code[strings.LastIndexByte(code[:start], '\n')+1 : start]
	firstLine := !strings.Contains(code[:start], "\n")
	before := strings.Fields(strings.ToLower(code[:start]))
	prev := func(n int) string {
		if len(before) < n {
			return ""
		}
		return before[len(before)-n]
	}
	switch {
	case firstLine && strings.HasPrefix(prefix, "%"):
		for _, kind := range k.reg.Kinds() {
			add("%%" + kind)
		}
	case firstLine && strings.HasPrefix(strings.TrimSpace(line), "%%"):
		kind, name, _, _, _ := notebook.ParseMagic(code[:start] + "\n")
		if kind == notebook.KindExperiment && len(strings.Fields(line)) == 1 {
			add(experimentNames()...)
		}
		for _, p := range append(experimentParams(name), magicParams[string(kind)]...) {
			add(p + "=")
		}
		if kind == notebook.KindSQL { // a sql cell's attributes are per-cell settings
			for _, st := range engine.AllSettings() {
				add(st.Name + "=")
			}
		}
	case prev(1) == "set":
		for _, s := range engine.AllSettings() {
			add(s.Name)
		}
	case (prev(1) == "=" || prev(1) == "to") && prev(3) == "set", strings.HasSuffix(prev(1), "=") && prev(2) == "set":
		name := strings.TrimSuffix(prev(2), "=")
		if prev(1) != "=" && prev(1) != "to" {
			name = strings.TrimSuffix(prev(1), "=")
		}
		if s, ok := engine.LookupSetting(name); ok {
			add(s.Values...)
		}
	case strings.Contains(prefix, "."):
		dot := strings.LastIndexByte(prefix, '.')
		qual := prefix[:dot]
		for _, t := range k.tables(ctx) {
			for _, c := range k.columns(ctx, t) {
				add(qual + "." + c.name)
			}
		}
	default:
		add(keywords...)
		for _, f := range functions {
			add(f.name)
		}
		tables := k.tables(ctx)
		add(tables...)
		for _, t := range tables {
			for _, c := range k.columns(ctx, t) {
				add(c.name)
			}
		}
	}
	matches = dedupe(matches)
	if matches == nil {
		matches = []string{} // a list, never null: classic Notebook reads its length
	}
	return map[string]any{"status": "ok", "matches": matches, "cursor_start": utf8.RuneCountInString(code[:start]),
		"cursor_end": utf8.RuneCountInString(code[:end]), "metadata": map[string]any{}}
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	out := s[:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func experimentNames() []string {
	var out []string
	for _, s := range experiment.Catalog() {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return out
}

// experimentParams returns the parameter names of experiment name.
func experimentParams(name string) []string {
	spec, err := experiment.Lookup(name)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range spec.Params {
		out = append(out, p.Name)
	}
	return out
}

// tables returns the names of the data directory's tables.
func (k *Kernel) tables(ctx context.Context) []string {
	rows := k.query(ctx, "SHOW TABLES")
	var out []string
	for _, r := range rows {
		if len(r) > 0 && r[0] != nil {
			out = append(out, *r[0])
		}
	}
	return out
}

type column struct{ name, typ string }

// columns returns the columns of table t.
func (k *Kernel) columns(ctx context.Context, t string) []column {
	var out []column
	for _, r := range k.query(ctx, "DESCRIBE "+quoteIdent(t)) {
		if len(r) >= 2 && r[0] != nil && r[1] != nil {
			out = append(out, column{*r[0], *r[1]})
		}
	}
	return out
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// query runs one catalog statement on a session of its own (so it never
// touches the cells' settings) and returns its rows.
func (k *Kernel) query(ctx context.Context, q string) [][]*string {
	if k.db == nil {
		return nil
	}
	res, err := k.db.NewSession().Exec(ctx, q, nil)
	if err != nil {
		return nil
	}
	b := kernel.BuildResult(res, kernel.Limits{})
	if len(b.Statements) == 0 {
		return nil
	}
	return b.Statements[0].Rows
}

// inspect answers an inspect_request: DESCRIBE of a table, the doc of a
// function, setting, keyword or cell magic under the cursor.
func (k *Kernel) inspect(ctx context.Context, code string, cursor int) map[string]any {
	i := runeToByte(code, cursor)
	start, end := wordBefore(code, i), i
	for end < len(code) && isWordByte(code[end]) {
		end++
	}
	word := strings.Trim(code[start:end], ".")
	lw := strings.ToLower(word)
	text := ""
	switch {
	case strings.HasPrefix(word, "%%"):
		kind := strings.TrimPrefix(lw, "%%")
		if ps, ok := magicParams[kind]; ok {
			text = fmt.Sprintf("%%%%%s: a cachebook %s cell. Parameters: %s.", kind, kind, strings.Join(ps, ", "))
			if kind == kernel.KindExperiment {
				text += " Experiments: " + strings.Join(experimentNames(), ", ") + "."
			}
		}
	default:
		for _, f := range functions {
			if f.name == lw {
				text = f.sig + "\n\n" + f.doc
			}
		}
		if s, ok := engine.LookupSetting(lw); ok {
			text = fmt.Sprintf("SET %s = %s\n\n%s", s.Name, strings.Join(s.Values, " | "), s.Doc)
		}
		if text == "" && word != "" {
			for _, t := range k.tables(ctx) {
				if strings.EqualFold(t, word) {
					cols := k.columns(ctx, t)
					var b strings.Builder
					fmt.Fprintf(&b, "DESCRIBE %s: %d columns\n\n", t, len(cols))
					for _, c := range cols {
						fmt.Fprintf(&b, "  %-24s %s\n", c.name, c.typ)
					}
					text = b.String()
				}
			}
		}
	}
	if text == "" {
		return map[string]any{"status": "ok", "found": false, "data": map[string]any{}, "metadata": map[string]any{}}
	}
	return map[string]any{"status": "ok", "found": true, "data": map[string]any{MIMEText: text}, "metadata": map[string]any{}}
}

// isComplete answers an is_complete_request for a console: SQL is
// complete when it ends with ';' outside quotes and comments, a magic cell
// is complete when it ends with a blank line.
func isComplete(code string) map[string]any {
	if strings.TrimSpace(code) == "" {
		return map[string]any{"status": "incomplete", "indent": ""}
	}
	if _, _, _, _, ok := notebook.ParseMagic(code); ok {
		if strings.HasSuffix(code, "\n\n") || !strings.Contains(strings.TrimSpace(code), "\n") && strings.HasSuffix(code, "\n") {
			return map[string]any{"status": "complete"}
		}
		return map[string]any{"status": "incomplete", "indent": ""}
	}
	inStr, inIdent, inLine, inBlock := false, false, false, false
	last := byte(0)
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch {
		case inLine:
			if c == '\n' {
				inLine = false
			}
			continue
		case inBlock:
			if c == '*' && i+1 < len(code) && code[i+1] == '/' {
				inBlock = false
				i++
			}
			continue
		case inStr:
			if c == '\'' {
				inStr = false
			}
		case inIdent:
			if c == '"' {
				inIdent = false
			}
		case c == '\'':
			inStr = true
		case c == '"':
			inIdent = true
		case c == '-' && i+1 < len(code) && code[i+1] == '-':
			inLine = true
			continue
		case c == '/' && i+1 < len(code) && code[i+1] == '*':
			inBlock = true
			i++
			continue
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			last = c
		}
	}
	if inStr || inIdent || inBlock {
		return map[string]any{"status": "incomplete", "indent": ""}
	}
	if last == ';' {
		return map[string]any{"status": "complete"}
	}
	return map[string]any{"status": "incomplete", "indent": ""}
}
