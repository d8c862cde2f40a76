package lessons_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"cachebook/engine"
	"cachebook/engine/gen/gentest"
	"cachebook/engine/sql"
	"cachebook/kernel"
	"cachebook/lessons"
	"cachebook/notebook"
	"cachebook/notebook/predict"
)

// minPredictions is the number of predictions each lesson must have at
// least: one on its key cell.
var minPredictions = map[string]int{
	"01-latency": 1, "02-waiting": 1, "03-radix": 1, "04-many-cores": 1, "05-contention": 2, "06-bandwidth": 2, "07-access-patterns": 2, "08-transfer": 2,
}

// TestPredictionsValid checks every prediction of every lesson: the spec
// decodes, its measure parses and suits the cell's kind, and an SQL
// measure names no more queries than the cell has.
func TestPredictionsValid(t *testing.T) {
	for _, l := range lessonNotebooks(t) {
		n := 0
		for _, c := range l.nb.Cells {
			spec, guess, err := c.Prediction()
			if err != nil {
				t.Errorf("%s: %v", l.Name, err)
				continue
			}
			if spec == nil {
				continue
			}
			n++
			if guess != nil {
				t.Errorf("%s: cell %s ships with a guess; lessons leave it to the learner", l.Name, c.ID)
			}
			if spec.Check == "" {
				t.Errorf("%s: cell %s: the prediction has no check text", l.Name, c.ID)
			}
			if c.Kind != notebook.KindSQL {
				continue
			}
			m, _ := predict.Parse(spec.Measure)
			stmts, err := sql.Parse(c.Source)
			if err != nil {
				t.Errorf("%s: cell %s: %v", l.Name, c.ID, err)
				continue
			}
			queries := 0
			for _, st := range stmts {
				switch st.(type) {
				case *sql.Set, *sql.Reset:
				default:
					queries++
				}
			}
			if m.Queries() > queries {
				t.Errorf("%s: cell %s: measure %q names query %d, and the cell has %d", l.Name, c.ID, spec.Measure, m.Queries(), queries)
			}
		}
		if n < minPredictions[l.Name] {
			t.Errorf("%s has %d predictions, want at least %d", l.Name, n, minPredictions[l.Name])
		}
	}
}

// small are parameters that keep the prediction cells' measurements
// short; they keep every value the measures select (the last point, 8
// chains, 4 threads, ...).
var small = map[string]map[string]string{
	"latency":                   {"min": "4K", "max": "512K", "ppo": "1", "reps": "1", "sample": "1ms"},
	"experiment false-sharing":  {"duration": "5ms", "reps": "1"},
	"experiment parallel-merge": {"rows": "20000", "groups": "2000"},
	"experiment zeroing":        {"size": "64KiB", "allocs": "2"},
	"experiment sum-rewrite":    {"terms": "4", "reps": "1"},
	"experiment mlp":            {"size": "2MiB", "chains": "1,8", "sample": "2ms", "reps": "1"},
	"experiment stride":         {"size": "2MiB", "sample": "2ms", "reps": "1"},
	"experiment c2c":            {"duration": "5ms", "reps": "1"},
	"experiment transpose":      {"n": "256", "reps": "1", "sample": "1ms"},
}

// TestPredictionsMeasure runs every lesson cell that has a prediction, on
// generated data and with small parameters, and checks that the kernel's
// prediction display has a measured value.
func TestPredictionsMeasure(t *testing.T) {
	dir := gentest.HitsDir(t)
	// A small cell memory cap keeps the generated keys table small (kernel/sizing
	// sizes it within a quarter of the cap), as TestLessonsRun does: 16 MiB,
	// still capped below four times any last level over 4 MiB, so the cells
	// measure the same strategies on fewer rows. At 256 MiB lesson 8's
	// two-key GROUP BY took 20 s of this test's 27 natively and ran past the
	// cell's 2-minute limit under -race on a loaded machine.
	db, err := engine.Open(engine.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	x, err := kernel.NewExecutor(kernel.Config{DB: db, DataPath: dir, Limits: kernel.Limits{CellTimeout: 2 * time.Minute, CellMemory: 64 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lessonNotebooks(t) {
		for _, c := range l.nb.Cells {
			spec, _, err := c.Prediction()
			if err != nil || spec == nil {
				continue
			}
			t.Run(l.Name+"/"+c.ID, func(t *testing.T) {
				if _, ok := x.Registry().Lookup(string(c.Kind)); !ok {
					t.Skipf("no %s runner in this build", c.Kind)
				}
				if testing.Short() && c.Kind != notebook.KindSQL {
					t.Skip("measurement cells are skipped with -short")
				}
				attrs := map[string]string{}
				for k, v := range c.Attrs {
					attrs[k] = v
				}
				key := string(c.Kind)
				if c.Name != "" {
					key += " " + c.Name
				}
				for k, v := range small[key] {
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
				var outcome *predict.Outcome
				emit := func(m kernel.Message) {
					if m.Header.MsgType != kernel.MsgDisplayData {
						return
					}
					var d struct {
						Data map[string]json.RawMessage `json:"data"`
					}
					if m.DecodeContent(&d) != nil {
						return
					}
					if raw, ok := d.Data[kernel.MIMEPrediction]; ok {
						var o predict.Outcome
						if json.Unmarshal(raw, &o) == nil {
							outcome = &o
						}
					}
				}
				cell := kernel.Cell{Kind: string(c.Kind), Source: c.ExecSource(), Attrs: attrs, ID: c.ID, Predict: spec}
				if _, err := x.Execute(context.Background(), cell, emit); err != nil {
					t.Fatalf("cell failed: %v", err)
				}
				switch {
				case outcome == nil:
					t.Fatal("no prediction display")
				case outcome.Measured == nil:
					t.Fatalf("no measured value: %s", outcome.Note)
				case len(spec.Choices) > 0 && outcome.MeasuredChoice == nil:
					t.Fatalf("measured %v but no choice", *outcome.Measured)
				}
				t.Logf("%s: measured %s %s", spec.Question, predict.FormatValue(*outcome.Measured), spec.Unit)
			})
		}
	}
}

// checkTextProblems returns what is wrong with a prediction's check text,
// given the text of everything the lesson runs (its cells' sources,
// attributes and reference outputs): every name it quotes in backticks (a
// table, a column, an attribute, a column of an experiment's output) must
// occur there, and it may not promise a table size ("the 2-million-row
// table"), which the sizing code chooses per machine and the cell states.
func checkTextProblems(check, used string) []string {
	var problems []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(check, -1) {
		if !strings.Contains(used, m[1]) {
			problems = append(problems, fmt.Sprintf("names `%s`, which none of the lesson's cells or their reference outputs use", m[1]))
		}
	}
	if m := regexp.MustCompile(`\d[\d.,]*[- ](?:million|M)-row`).FindString(check); m != "" {
		problems = append(problems, fmt.Sprintf("promises a %q table; say where the cell states the size instead", m))
	}
	return problems
}

// TestCheckTextsNameWhatTheLessonRuns applies checkTextProblems to every
// prediction of every lesson.
func TestCheckTextsNameWhatTheLessonRuns(t *testing.T) {
	for _, l := range lessonNotebooks(t) {
		opened, err := lessons.Opened(l.Name)
		if err != nil {
			t.Fatal(err)
		}
		var used strings.Builder
		for _, c := range opened.Cells {
			if !c.Kind.IsCode() {
				continue
			}
			used.WriteString(c.Name + "\n" + c.Source + "\n")
			for k, v := range c.Attrs {
				used.WriteString(k + "=" + v + "\n")
			}
			for _, o := range c.Outputs {
				used.WriteString(o.Text + "\n")
			}
		}
		for _, c := range l.nb.Cells {
			spec, _, err := c.Prediction()
			if err != nil || spec == nil {
				continue
			}
			for _, p := range checkTextProblems(spec.Check, used.String()) {
				t.Errorf("%s: cell %s: the check text %s", l.Name, c.ID, p)
			}
		}
	}
}

func TestCheckTextProblems(t *testing.T) {
	used := "SELECT s, count(*) FROM keys GROUP BY s"
	tests := []struct {
		check string
		want  int
	}{
		{"compare it with the `s` query above, on `keys`", 0},
		{"compare it with the `RegionID` query above", 1},
		{"On the 2-million-row demo table expect 40 ns", 1},
		{"the reference run had 16 M rows (the cell states them)", 0},
	}
	for _, tt := range tests {
		if got := checkTextProblems(tt.check, used); len(got) != tt.want {
			t.Errorf("%q: problems %q, want %d", tt.check, got, tt.want)
		}
	}
}
