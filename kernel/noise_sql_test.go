package kernel

import (
	"context"
	"maps"
	"runtime"
	"testing"

	"cachebook/engine"
	"cachebook/kernel/internal/timing"
	"cachebook/kernel/sizing"
	"cachebook/lessons"
	"cachebook/notebook/predict"
)

// noiseSQLBudget bounds the keys table of TestNoiseSQLDirection: sized
// against the measured last level like the lessons', but at most 4 M rows,
// so that both phases of both lessons take about half a minute.
var noiseSQLBudget = sizing.Budget{Memory: 512 << 20, MaxRows: 4 << 20}

// noiseSQLCells are lesson 2's and lesson 3's key SQL comparisons: the
// lesson's own cell (source and reps), and the ratio whose direction the
// lesson states, as a prediction spec the kernel grades over the cell's
// alternating rounds (predict.CompareRounds). Lesson 2's own prediction is
// ns per row, which has no direction; its comparison is k against s.
var noiseSQLCells = []struct {
	lesson, cell string
	direction    *predict.Spec // nil: the cell's own prediction
	says         string
}{
	{"02-waiting", "naive-userid", &predict.Spec{Question: "k over s", Unit: "×", Measure: "elapsed(2) / elapsed(1)"},
		"grouping by k (a table beyond the caches) costs more per row than by s"},
	{"03-radix", "naive-vs-radix", nil, "naive is slower than radix"},
}

// TestNoiseSQLDirection runs lesson 2's and lesson 3's key SQL cells,
// through the kernel as a lesson runs them (a warm-up run, then reps
// alternating rounds), on the machine as it is and then while every core
// is kept busy (a spinning goroutine per GOMAXPROCS and memory-streaming
// goroutines, started and stopped here). Each verdict must be the
// lesson's direction or "too noisy to tell here" — never the opposite.
// Like TestNoiseDirection in kernel/experiment, it fails only when every
// round went the wrong way by a spread the verdict trusts.
func TestNoiseSQLDirection(t *testing.T) {
	timing.Skip(t)
	db, err := engine.Open(engine.Options{MaxThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	plan := sizing.ForMeasured(new(keysTable).lastLevel(context.Background()), noiseSQLBudget) // as the kernel sizes it
	if err := plan.Register(context.Background(), db, 1); err != nil {
		t.Fatal(err)
	}
	t.Log(plan)
	x, err := NewExecutor(Config{DB: db, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"quiet", "with hogs"} {
		stop := func() {}
		if phase == "with hogs" {
			stop = timing.StartHogs(runtime.GOMAXPROCS(0), max(1, runtime.GOMAXPROCS(0)/2), 64<<20)
		}
		for _, c := range noiseSQLCells {
			o := noiseSQLVerdict(t, x, c.lesson, c.cell, c.direction)
			t.Logf("%-9s %s %-14s noisy=%-5v %s", phase, c.lesson, c.cell, o.Noisy, o.Verdict)
			switch {
			case o.Measured == nil || o.Verdict == "":
				t.Errorf("%s, %s %s: no verdict (%s)", phase, c.lesson, c.cell, o.Note)
			case !o.Noisy && *o.Measured < 1:
				t.Errorf("%s, %s %s: the verdict states the opposite of the lesson (%s) without being noisy: %s", phase, c.lesson, c.cell, c.says, o.Verdict)
			}
		}
		stop()
	}
}

// noiseSQLVerdict runs one lesson cell with its reps (its counters left
// out: they watch a run that is not timed) and returns the prediction
// outcome the kernel sent for direction, or for the cell's own prediction.
func noiseSQLVerdict(t *testing.T, x *Executor, lesson, id string, direction *predict.Spec) predict.Outcome {
	t.Helper()
	nb, err := lessons.Notebook(lesson)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range nb.Cells {
		if c.ID != id {
			continue
		}
		spec := direction
		if spec == nil {
			if spec, _, err = c.Prediction(); err != nil || spec == nil {
				t.Fatalf("%s %s: prediction %v, %v", lesson, id, spec, err)
			}
		}
		attrs := maps.Clone(c.Attrs)
		delete(attrs, "counters")
		if attrs["reps"] == "" {
			t.Fatalf("%s %s: no reps attribute; the lesson's comparison must alternate its sides", lesson, id)
		}
		var rec recorder
		if _, err := x.Execute(context.Background(), Cell{Kind: KindSQL, ID: id, Source: c.Source, Attrs: attrs, Predict: spec}, rec.emit); err != nil {
			t.Fatalf("%s %s: %v", lesson, id, err)
		}
		ps := predictions(t, &rec)
		if len(ps) != 1 {
			t.Fatalf("%s %s: %d prediction outputs, want 1", lesson, id, len(ps))
		}
		var o predict.Outcome
		if v, ok := ps[0]["measured"].(float64); ok {
			o.Measured = &v
		}
		o.Verdict, _ = ps[0]["verdict"].(string)
		o.Noisy, _ = ps[0]["noisy"].(bool)
		o.Note, _ = ps[0]["note"].(string)
		return o
	}
	t.Fatalf("%s has no cell %s", lesson, id)
	return predict.Outcome{}
}
