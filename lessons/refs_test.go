package lessons_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"cachebook/engine"
	"cachebook/engine/gen/gentest"
	"cachebook/kernel/experiment"
	"cachebook/kernel/sizing"
	"cachebook/lessons"
	"cachebook/notebook"
)

func TestMain(m *testing.M) {
	code := m.Run()
	gentest.Cleanup()
	os.Exit(code)
}

// source is a work the lessons may cite. An empty title means the title
// is not known: a citation must then say so instead of inventing one.
type source struct{ title, publisher string }

var sources = []source{
	{"It's the memory latency, stupid", "Pivot blog"},
	{"Optimizing ClickHouse for Intel's ultra-high core count processors", "ClickHouse blog"},
	{"The unexpected cost of shared pointers", "Oxla blog"},
	{"A Proof for the Queuing Formula: L = λW", "Operations Research"},
	{"What Every Programmer Should Know About Memory", "Red Hat"},
	{"Algorithms for Modern Hardware", "algorithmica.org"},
}

var quoted = regexp.MustCompile(`"([^"]+)"`)

// checkSources returns a problem for every *Source: paragraph of md that
// names no known publisher, names one without its title (or without
// saying the title is not known), or quotes a title nobody published.
func checkSources(md string) []string {
	var problems []string
	for para := range strings.SplitSeq(md, "\n\n") {
		para = strings.Join(strings.Fields(para), " ")
		if !strings.HasPrefix(para, "*Source") {
			continue
		}
		short := para[:min(len(para), 70)]
		named := 0
		for _, s := range sources {
			if !strings.Contains(para, s.publisher) {
				continue
			}
			named++
			switch {
			case s.title == "" && !strings.Contains(para, "title not known"):
				problems = append(problems, fmt.Sprintf("%q cites the %s without saying its title is not known", short, s.publisher))
			case s.title != "" && !strings.Contains(para, `"`+s.title+`"`):
				problems = append(problems, fmt.Sprintf("%q names the %s without the title %q", short, s.publisher, s.title))
			}
		}
		if named == 0 {
			problems = append(problems, fmt.Sprintf("%q names no known publisher", short))
		}
		for _, m := range quoted.FindAllStringSubmatch(para, -1) {
			if !slices.ContainsFunc(sources, func(s source) bool { return s.title != "" && s.title == m[1] }) {
				problems = append(problems, fmt.Sprintf("%q quotes %q, which is not a known title", short, m[1]))
			}
		}
	}
	return problems
}

func TestCheckSourcesCatchesBadCitations(t *testing.T) {
	good := `*Source: "It's the memory latency, stupid", Pivot blog (pivotlake.io).*`
	tests := []struct {
		md   string
		want string // "" for no problem
	}{
		{good, ""},
		{`*Source: "The unexpected cost of shared pointers", Oxla blog.*`, ""},
		{"*Source: a post on the Oxla blog about make_shared (title not known).*", "without the title"},
		{"*Source: Pivot blog, pivotlake.io.*", "without the title"},
		{"*Source: an Intel engineer's account.*", "names no known publisher"},
		{`*Source: "The unexpected cost of shared pointer", Oxla blog.*`, "not a known title"},
		{`*Source: "Optimizing ClickHouse for Intel's ultra-high core count processors", an Intel article.*`, "names no known publisher"},
		{"text\n\n" + good + "\n\n*Source: nobody.*", "names no known publisher"},
	}
	for _, tt := range tests {
		got := checkSources(tt.md)
		switch {
		case tt.want == "" && len(got) > 0:
			t.Errorf("%q: unexpected problems %q", tt.md, got)
		case tt.want != "" && !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tt.want) }):
			t.Errorf("%q: problems %q, want one containing %q", tt.md, got, tt.want)
		}
	}
}

// TestLessonsCiteTitleAndPublisher checks every citation of every lesson.
func TestLessonsCiteTitleAndPublisher(t *testing.T) {
	list, err := lessons.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		src, err := lessons.Source(l.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range checkSources(string(src)) {
			t.Errorf("%s: %s", l.Name, p)
		}
	}
}

// columnRef matches prose naming an output column: "the `ns/load` column".
var columnRef = regexp.MustCompile("`([^`]+)`\\s+column")

// quick holds small parameters for the experiments whose columns are
// checked, so that the test runs them in a fraction of a second each. They
// change sizes and durations only, never what the tables' columns are.
var quick = map[string]map[string]string{
	"false-sharing":   {"duration": "2ms", "reps": "1"},
	"lock-contention": {"ops": "500"},
	"parallel-merge":  {"rows": "5000", "groups": "500"},
	"zeroing":         {"size": "64KiB", "allocs": "2"},
	"sum-rewrite":     {"terms": "4", "reps": "1"},
	"mlp":             {"size": "1MiB", "chains": "1,2", "sample": "1ms", "reps": "1"},
	"stride":          {"size": "1MiB", "sample": "1ms", "reps": "1"},
	"associativity":   {"counts": "4,8", "sample": "1ms", "reps": "1"},
	"c2c":             {"duration": "2ms", "reps": "1"},
	"substring":       {"reps": "1"},
	"page-reuse":      {"size": "1MiB", "rounds": "2"},
	"branches":        {"reps": "1", "sample": "1ms"},
	"transpose":       {"n": "256", "reps": "1", "sample": "1ms"},
}

// cellColumns returns the output column names of a code cell, by running
// it: the tables of an experiment, the result columns of a SQL cell.
func cellColumns(t *testing.T, c *notebook.Cell) ([]string, error) {
	t.Helper()
	switch c.Kind {
	case notebook.KindExperiment:
		spec, err := experiment.Lookup(c.Name)
		if err != nil {
			return nil, err
		}
		params := map[string]string{}
		for k, v := range c.Attrs {
			params[k] = v
		}
		for k, v := range quick[c.Name] {
			params[k] = v
		}
		opts := experiment.Options{}
		if spec.RunData != nil {
			dir := gentest.HitsDir(t)
			db, err := engine.Open(engine.Options{DataDir: dir})
			if err != nil {
				return nil, err
			}
			opts.DB, opts.DataDir = db, dir
		}
		res, err := experiment.Run(context.Background(), spec, params, opts)
		if err != nil {
			return nil, err
		}
		var cols []string
		for _, tb := range res.Tables {
			cols = append(cols, tb.Columns...)
		}
		return cols, nil
	case notebook.KindSQL:
		db, err := engine.Open(engine.Options{DataDir: gentest.HitsDir(t)})
		if err != nil {
			return nil, err
		}
		// The kernel generates keys on first use (kernel/sizing); a small
		// one has the same columns.
		if err := (sizing.Plan{Rows: 8000, Groups: 1000}).Register(context.Background(), db, 1); err != nil {
			return nil, err
		}
		res, err := db.NewSession().Exec(context.Background(), c.Source, nil)
		if err != nil {
			return nil, err
		}
		var cols []string
		for _, r := range res {
			for _, col := range r.Columns {
				cols = append(cols, col.Name)
			}
		}
		return cols, nil
	}
	return nil, fmt.Errorf("the output columns of a %s cell cannot be checked; name them without \"the `…` column\"", c.Kind)
}

// checkColumns returns a problem for every column named in the prose of
// nb that the nearest code cell before it (or, before the first code
// cell, the first one) does not produce.
func checkColumns(t *testing.T, nb *notebook.Notebook) []string {
	var problems []string
	cache := map[*notebook.Cell][]string{}
	for i, c := range nb.Cells {
		if c.Kind != notebook.KindMarkdown {
			continue
		}
		refs := columnRef.FindAllStringSubmatch(c.Source, -1)
		if len(refs) == 0 {
			continue
		}
		var code *notebook.Cell
		for j := i - 1; j >= 0 && code == nil; j-- {
			if nb.Cells[j].Kind.IsCode() {
				code = nb.Cells[j]
			}
		}
		for j := i + 1; j < len(nb.Cells) && code == nil; j++ {
			if nb.Cells[j].Kind.IsCode() {
				code = nb.Cells[j]
			}
		}
		if code == nil {
			problems = append(problems, fmt.Sprintf("prose names column %q but the notebook has no code cell", refs[0][1]))
			continue
		}
		cols, ok := cache[code]
		if !ok {
			var err error
			if cols, err = cellColumns(t, code); err != nil {
				problems = append(problems, fmt.Sprintf("cell %s (%s %s): %v", code.ID, code.Kind, code.Name, err))
				continue
			}
			cache[code] = cols
		}
		for _, r := range refs {
			// Markdown renders a line break inside inline code as a space.
			name := strings.Join(strings.Fields(r[1]), " ")
			if !slices.Contains(cols, name) {
				problems = append(problems, fmt.Sprintf("prose names column %q, but cell %s (%s %s) produces %q", name, code.ID, code.Kind, code.Name, cols))
			}
		}
	}
	return problems
}

func TestCheckColumnsCatchesWrongNames(t *testing.T) {
	tests := []struct {
		md   string
		want string
	}{
		{"# t\n\n```experiment zeroing\n```\n\nThe `extra vs pool` column and the `faults/op` column.\n", ""},
		{"# t\n\n```experiment zeroing\n```\n\nThe `extra ns/op` column.\n", `names column "extra ns/op"`},
		{"# t\n\nThe `rounding` column of the next cell.\n\n```sql\nSELECT count(*) AS rounding FROM hits\n```\n", ""},
		{"# t\n\n```sql\nSELECT count(*) AS n FROM hits\n```\n\nThe `rounding`\ncolumn.\n", `names column "rounding"`},
		{"# t\n\n```latency\n```\n\nThe `ns/access` column.\n", "cannot be checked"},
	}
	for _, tt := range tests {
		nb, err := notebook.Parse([]byte(tt.md))
		if err != nil {
			t.Fatal(err)
		}
		got := checkColumns(t, nb)
		switch {
		case tt.want == "" && len(got) > 0:
			t.Errorf("%q: unexpected problems %q", tt.md, got)
		case tt.want != "" && !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tt.want) }):
			t.Errorf("%q: problems %q, want one containing %q", tt.md, got, tt.want)
		}
	}
}

// TestLessonsNameRealColumns runs the cells whose output columns a lesson
// names in its prose, and checks that they produce those columns.
func TestLessonsNameRealColumns(t *testing.T) {
	for _, l := range lessonNotebooks(t) {
		t.Run(l.Name, func(t *testing.T) {
			for _, p := range checkColumns(t, l.nb) {
				t.Error(p)
			}
		})
	}
}

// goQuote matches a Go code block in lesson prose together with the
// source file named in the text just before it ("from `engine/agg/x.go`").
var goQuote = regexp.MustCompile("(?s)`((?:engine|kernel)/[a-z0-9_/]+\\.go)`[^`]*?(?:`[^`\\n]*`[^`]*?)*?```go\\n(.*?)```")

// TestQuotedCodeIsCurrent checks that every Go excerpt a lesson quotes
// from our source still appears, token for token, in the file it names:
// a lesson must not show a loop the engine no longer runs.
func TestQuotedCodeIsCurrent(t *testing.T) {
	list, err := lessons.List()
	if err != nil {
		t.Fatal(err)
	}
	quotes := 0
	for _, l := range list {
		src, err := lessons.Source(l.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goQuote.FindAllStringSubmatch(string(src), -1) {
			quotes++
			file, code := m[1], m[2]
			b, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(file)))
			if err != nil {
				t.Errorf("%s quotes %s: %v", l.Name, file, err)
				continue
			}
			norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
			if !strings.Contains(norm(string(b)), norm(code)) {
				t.Errorf("%s quotes code that is not (or no longer) in %s:\n%s", l.Name, file, code)
			}
		}
	}
	if quotes < 2 {
		t.Errorf("found %d quoted excerpts of our source, want the naive probe and the radix scatter at least", quotes)
	}
}
