package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cachebook/engine"
	"cachebook/engine/gen"
	"cachebook/engine/vec"
)

func TestSumQueryIsQ29(t *testing.T) {
	q := SumQuery(90)
	if !strings.HasPrefix(q, "SELECT SUM(ResolutionWidth), SUM(ResolutionWidth + 1), SUM(ResolutionWidth + 2), ") {
		t.Errorf("bad start: %.90s", q)
	}
	if !strings.HasSuffix(q, ", SUM(ResolutionWidth + 88), SUM(ResolutionWidth + 89) FROM hits") {
		t.Errorf("bad end: %s", q[len(q)-80:])
	}
	if n := strings.Count(q, "SUM("); n != 90 {
		t.Errorf("%d SUM terms, want 90", n)
	}
}

func TestResultRowAndExplain(t *testing.T) {
	mk := func(vals ...int64) *engine.Result {
		r := &engine.Result{Rows: 1}
		for _, v := range vals {
			x := vec.NewVector(vec.Int64, 1)
			x.AppendInt(v)
			r.Vecs = append(r.Vecs, x)
		}
		return r
	}
	row, err := resultRow(mk(10, 12), 2)
	if err != nil || strings.Join(row, ",") != "10,12" {
		t.Errorf("resultRow = %v, %v", row, err)
	}
	if _, err := resultRow(mk(10), 2); err == nil {
		t.Error("a short row was accepted")
	}
	plan := &engine.Result{Plan: &engine.PlanNode{Name: "PROJECTION", Detail: []string{"sum(x) + 1*count(x)"},
		Children: []*engine.PlanNode{{Name: "SCAN hits"}}}}
	got := strings.Join(explainLines(plan), "|")
	if got != "PROJECTION|    sum(x) + 1*count(x)|  SCAN hits" {
		t.Errorf("explainLines = %q", got)
	}
	if got := clip(strings.Repeat("ab", 100), 10); got != "ababababab ... (190 more bytes)" {
		t.Errorf("clip = %q", got)
	}
	if got := clip("short", 10); got != "short" {
		t.Errorf("clip(short) = %q", got)
	}
	lines := make([]string, 100)
	tb := explainTable("t", lines)
	if len(tb.Rows) != 25 {
		t.Errorf("a 100-line plan shows %d rows, want 12 + elision + 12", len(tb.Rows))
	}
}

func TestSumRewriteOnGeneratedData(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a Parquet file")
	}
	dir := t.TempDir()
	if err := gen.WriteFile(context.Background(), filepath.Join(dir, "hits.parquet"),
		gen.Options{Rows: 20000, Order: "shuffled", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(engine.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := Lookup("sum-rewrite")
	r, err := Run(context.Background(), s, map[string]string{"terms": "7", "reps": "2", "threads": "2"}, Options{DB: db, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r)
	d := r.Data.(*SumRewriteData)
	if d.Rows != 20000 || len(d.LiteralNS) != 2 || len(d.RewrittenNS) != 2 || d.Speedup <= 0 {
		t.Errorf("data %+v", d)
	}
	if len(d.Sums) != 4 || d.Sums[0] == "" {
		t.Errorf("sums %v", d.Sums)
	}
	// The rewritten plan must say so, and the literal one must not.
	lit, rew := strings.Join(d.ExplainLiteral, "\n"), strings.Join(d.ExplainRewritten, "\n")
	if lit == rew || !strings.Contains(strings.ToLower(rew), "count") {
		t.Errorf("EXPLAIN does not show the rewrite:\nliteral:\n%s\nrewritten:\n%s", lit, rew)
	}
}

// TestSumRewriteDataDir: the experiment reads only the data directory's
// hits table, through the kernel's engine; it takes no path, refuses a
// hits.parquet that is not a regular file (a FIFO would hang the reader)
// or that is a symlink out of the directory, and its errors name no path.
func TestSumRewriteDataDir(t *testing.T) {
	s, _ := Lookup("sum-rewrite")
	outside := t.TempDir()
	if err := gen.WriteFile(context.Background(), filepath.Join(outside, "hits.parquet"),
		gen.Options{Rows: 100, Order: "shuffled", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(map[string]string{"data": outside}, Options{DB: db}); err == nil || !strings.Contains(err.Error(), "unknown parameter") {
		t.Errorf("data= accepted: %v", err)
	}
	fifo := t.TempDir()
	if err := syscallMkfifo(filepath.Join(fifo, "hits.parquet")); err != nil {
		t.Skip("no mkfifo:", err)
	}
	link := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "hits.parquet"), filepath.Join(link, "hits.parquet")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, dir, want string }{
		{"missing", t.TempDir(), "has no table hits"},
		{"fifo", fifo, "not a regular file"},
		{"symlink out", link, "not a regular file"},
		{"no dir", filepath.Join(outside, "nope"), "cannot be opened"},
	} {
		err := s.Check(nil, Options{DB: db, DataDir: c.dir})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), outside) || strings.Contains(err.Error(), c.dir) {
			t.Errorf("%s: the error reveals a path: %v", c.name, err)
		}
	}
	if err := s.Check(nil, Options{}); err == nil {
		t.Error("sum-rewrite without a data directory passed Check")
	}
}
