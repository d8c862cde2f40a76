package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cachebook/engine"
	"cachebook/engine/gen"
	"cachebook/kernel"
	"cachebook/lessons"
	"cachebook/notebook"
)

// smallData generates a 100,000-row hits table once per test binary run.
func smallData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := gen.WriteFile(ctx, filepath.Join(dir, "hits.parquet"), gen.Options{Rows: 100_000, Seed: 1}); err != nil {
		t.Fatalf("generate data: %v", err)
	}
	return dir
}

// cheap holds small parameters for the measurement cells of the lessons,
// keyed by kind and experiment name.
var cheap = map[string]map[string]string{
	"latency":                    {"min": "4K", "max": "256K", "ppo": "1", "reps": "1", "sample": "1ms"},
	"bandwidth":                  {"bytes": "1M", "threads": "1,2", "reps": "1"},
	"sweep":                      {"rows": "20000", "groups": "100,1000,10000", "reps": "1"},
	"experiment false-sharing":   {"duration": "5ms", "reps": "1"},
	"experiment lock-contention": {"ops": "2000"},
	"experiment parallel-merge":  {"rows": "20000", "groups": "2000"},
	"experiment zeroing":         {"size": "64KiB", "allocs": "2"},
	"experiment sum-rewrite":     {"terms": "4", "reps": "1"},
	"experiment mlp":             {"size": "2MiB", "chains": "1,4", "sample": "2ms", "reps": "1"},
	"experiment stride":          {"size": "2MiB", "sample": "2ms", "reps": "1"},
	"experiment associativity":   {"counts": "4,16", "sample": "2ms", "reps": "1"},
	"experiment c2c":             {"duration": "5ms", "reps": "1"},
	"experiment substring":       {"reps": "1", "limit": "20000"},
	"experiment page-reuse":      {"size": "1MiB", "rounds": "2"},
	"experiment branches":        {"reps": "1", "sample": "2ms"},
	"experiment transpose":       {"n": "256", "reps": "1", "sample": "2ms"},
}

// TestLessonsRun runs every cell of every lesson on small data and fails
// on any cell error. Cells of kinds this build's kernel has no runner for
// are logged and skipped; with -short the measurement kinds are skipped
// too (they take seconds each).
func TestLessonsRun(t *testing.T) {
	dir := smallData(t)
	t.Setenv("CACHEBOOK_DATA", dir)
	list, err := lessons.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		t.Run(l.Name, func(t *testing.T) {
			nb, err := lessons.Notebook(l.Name)
			if err != nil {
				t.Fatal(err)
			}
			// A small cell memory cap keeps the generated keys table
			// small (kernel/sizing sizes it within a quarter of the cap):
			// 16 MiB, below the four times the last level that sizing
			// wants wherever that level is over 4 MiB, so the table is
			// capped as it was at 256 MiB and the cells run the same
			// code on fewer rows. Lesson 8's two-key GROUP BY over it
			// is most of this test's time (at 256 MiB, 12 s of 21
			// natively and most of a minute under -race).
			db, err := engine.Open(engine.Options{DataDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			x, err := kernel.NewExecutor(kernel.Config{DB: db, DataPath: dir, Limits: kernel.Limits{CellTimeout: 2 * time.Minute, CellMemory: 64 << 20}})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range nb.Cells {
				if !c.Kind.IsCode() {
					continue
				}
				if _, ok := x.Registry().Lookup(string(c.Kind)); !ok {
					t.Logf("cell %s: no %s runner in this build; skipped", c.ID, c.Kind)
					continue
				}
				if testing.Short() && c.Kind != notebook.KindSQL {
					continue
				}
				// Measurement cells run with small parameters on top of
				// the lesson's own, so the test stays fast; the lesson's
				// parameters are still checked by the runner.
				attrs := map[string]string{}
				for k, v := range c.Attrs {
					attrs[k] = v
				}
				key := string(c.Kind)
				if c.Name != "" {
					key += " " + c.Name
				}
				for k, v := range cheap[key] {
					attrs[k] = v
				}
				if _, ok := attrs["reps"]; ok && c.Kind == notebook.KindSQL {
					attrs["reps"] = "2" // still rounds, alternated, with a spread
				}
				// The cache model of a big GROUP BY takes seconds natively and
				// minutes under -race: model 1 in 16 windows of the rows here.
				if v := attrs["counters"]; (v == "model" || v == "both") && attrs["rows"] == "" {
					attrs["rows"] = "1/16"
				}
				c.Attrs = attrs
				if err := notebook.RunCell(context.Background(), KernelRunner{X: x}, c); err != nil {
					// A cell the lesson runs to fail may fail, with its error only.
					if want := lessons.ExpectedError(c); want != "" && len(c.Outputs) > 0 && c.Outputs[len(c.Outputs)-1].Name == want {
						t.Logf("cell %s failed with %s, as its lesson expects", c.ID, want)
						continue
					}
					t.Errorf("cell %s (%s %s) failed: %v\n%s", c.ID, c.Kind, c.Name, err, c.Source)
					continue
				}
				if len(c.Outputs) == 0 {
					t.Errorf("cell %s (%s) produced no output", c.ID, c.Kind)
				}
			}
		})
	}
}

func TestRunCommand(t *testing.T) {
	dir := smallData(t)
	md := "# t\n\n```sql\nSET group_by = 'radix';\nSELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC LIMIT 3\n```\n\n```sql\nSELECT nope FROM hits\n```\n"
	in := filepath.Join(t.TempDir(), "t.md")
	if err := os.WriteFile(in, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.md")
	var stdout, stderr bytes.Buffer
	err := cmdRun(context.Background(), []string{in, "--data", dir, "--out", out}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 cells failed") {
		t.Fatalf("err = %v, want one failed cell\n%s", err, stdout.String())
	}
	if !strings.Contains(stdout.String(), "UserID") {
		t.Errorf("output lacks the result:\n%s", stdout.String())
	}
	saved, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := notebook.Parse(saved)
	if err != nil {
		t.Fatal(err)
	}
	var results, errs int
	for _, c := range nb.Cells {
		for _, o := range c.Outputs {
			switch o.Type {
			case notebook.OutputResult:
				results++
			case notebook.OutputError:
				errs++
			}
		}
	}
	if results == 0 || errs != 1 {
		t.Errorf("saved notebook has %d results and %d errors:\n%s", results, errs, saved)
	}
}

func TestLessonsExportImportCommands(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := cmdLessons(context.Background(), nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	list, err := lessons.List()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(stdout.String(), "\n"); n != len(list)+1 {
		t.Errorf("lessons printed %d lines, want a header and %d lessons:\n%s", n, len(list), stdout.String())
	}
	dir := t.TempDir()
	ipynb := filepath.Join(dir, "radix.ipynb")
	if err := cmdExport(context.Background(), []string{"radix", "--to", "ipynb", "--out", ipynb}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "radix.md")
	if err := cmdImport(context.Background(), []string{ipynb, "--out", md}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	// Exporting the imported file gives the same .ipynb again.
	stdout.Reset()
	if err := cmdExport(context.Background(), []string{"--to", "ipynb", md}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(ipynb)
	if !bytes.Equal(first, stdout.Bytes()) {
		t.Error("export → import → export changed the .ipynb")
	}
	// --reference fills the cells with the lesson's labelled reference run.
	stdout.Reset()
	if err := cmdExport(context.Background(), []string{"radix", "--to", "ipynb", "--reference"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "reference run on ") || !strings.Contains(stdout.String(), `"outputs": [`) {
		t.Error("export --reference wrote no labelled reference outputs")
	}
	for _, args := range [][]string{{"radix"}, {"radix", "--to", "pdf"}, {"no-such-lesson", "--to", "md"}, {}} {
		if err := cmdExport(context.Background(), args, &stdout, &stderr); err == nil {
			t.Errorf("export %v succeeded", args)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// TestRunPrintsReferenceAfterResult: cachebook run shows a lesson cell's
// reference outputs only after the cell's own, so a prediction's answer
// never comes first; every code cell of a lesson with a reference has one.
func TestRunPrintsReferenceAfterResult(t *testing.T) {
	nb, err := lessons.Notebook("01-latency")
	if err != nil {
		t.Fatal(err)
	}
	refs := referenceOutputs("01-latency", nb)
	var c *notebook.Cell
	for _, cell := range nb.Cells {
		if cell.Kind.IsCode() {
			if len(refs[cell]) < 2 || !strings.HasPrefix(refs[cell][0].Text, notebook.ReferencePrefix) {
				t.Errorf("cell %s: reference outputs %v, want the label and the run", cell.ID, refs[cell])
			}
			if c == nil {
				c = cell
			}
		}
	}
	c.Outputs = []notebook.Output{{Type: notebook.OutputResult, Text: "own result"}}
	var b bytes.Buffer
	printCell(&b, 1, 1, c, refs[c])
	out := b.String()
	own, ref := strings.Index(out, "own result"), strings.Index(out, notebook.ReferencePrefix)
	if own < 0 || ref < 0 || own > ref {
		t.Errorf("own result at %d, reference at %d, want the own result first:\n%s", own, ref, out)
	}
	if refs := referenceOutputs(filepath.Join("..", "..", "lessons", "01-latency.md"), nb); refs != nil {
		t.Errorf("a notebook file got reference outputs: %v", refs)
	}
}
