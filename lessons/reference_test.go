package lessons_test

import (
	"encoding/json"
	"strings"
	"testing"

	"cachebook/lessons"
	"cachebook/notebook"
	"cachebook/notebook/predict"
)

// TestReferenceOutputs: every lesson ships reference outputs for every
// code cell, with no stale entries, labelled with the machine; opening the
// lesson shows them. Regenerate with make reference when it fails.
func TestReferenceOutputs(t *testing.T) {
	for _, l := range lessonNotebooks(t) {
		t.Run(l.Name, func(t *testing.T) {
			nb := l.nb
			ref, err := lessons.LoadReference(l.Name)
			if err != nil {
				t.Fatal(err)
			}
			if ref == nil {
				t.Fatalf("no lessons/reference/%s.json: run make reference", l.Name)
			}
			stale, missing := ref.Stale(nb)
			if len(stale) > 0 {
				t.Errorf("stale reference entries %v (their cells changed): run make reference", stale)
			}
			if len(missing) > 0 {
				t.Errorf("cells %v have no reference output: run make reference", missing)
			}
			m := ref.Machine
			if m.CPU == "" || m.Cores == 0 || m.Counters == "" || m.Date == "" || m.Data == "" {
				t.Errorf("machine %+v is not fully described", m)
			}
			opened, err := lessons.Opened(l.Name)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range opened.Cells {
				if !c.Kind.IsCode() || len(c.Outputs) == 0 {
					continue
				}
				if o := c.Outputs[0]; o.Type != notebook.OutputStream || !strings.HasPrefix(o.Text, "reference run on "+m.CPU) {
					t.Errorf("cell %s: first output %+v is not the reference label", c.ID, o)
				}
				failed := ""
				for _, o := range c.Outputs {
					if o.Type != notebook.OutputError {
						continue
					}
					failed = o.Name
					if o.Name != lessons.ExpectedError(c) {
						t.Errorf("cell %s: the reference run failed: %s: %s", c.ID, o.Name, o.Text)
					}
				}
				// A cell the lesson runs to fail must fail in its
				// reference run: that is what the lesson says of it.
				if want := lessons.ExpectedError(c); want != "" && failed != want {
					t.Errorf("cell %s is meant to fail with %s, and its reference run did not", c.ID, want)
				}
			}
		})
	}
}

// TestReferenceApply: an edited cell gets no reference output, and its
// old entry is reported stale; a cell with outputs of its own keeps them.
func TestReferenceApply(t *testing.T) {
	nb, err := notebook.Parse([]byte("# t\n\n```sql\nSELECT 1\n```\n\n```sql {counters=on}\nSELECT 2\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := nb.Cells[1], nb.Cells[2]
	a.Outputs = []notebook.Output{{Type: notebook.OutputResult, Text: "1"}}
	b.Outputs = []notebook.Output{{Type: notebook.OutputResult, Text: "2", HTML: "<b>2</b>",
		Data: map[string]any{"application/vnd.cachebook.result+json": map[string]any{"statements": []any{map[string]any{"rows": make([]any, 50)}}}, "image/svg+xml": "<svg/>"}}}
	ref, err := lessons.NewReference(nb, lessons.Machine{CPU: "Test CPU", Cores: 2, Counters: "measured", Date: "2026-01-01", Data: "hits"})
	if err != nil {
		t.Fatal(err)
	}
	kept := ref.Cells[lessons.CellKey(b)][0]
	if kept.HTML != "" || kept.Data["image/svg+xml"] != nil {
		t.Errorf("reference keeps the HTML or SVG forms: %+v", kept)
	}
	rows := kept.Data["application/vnd.cachebook.result+json"].(map[string]any)["statements"].([]any)[0].(map[string]any)["rows"].([]any)
	if len(rows) != lessons.MaxRows {
		t.Errorf("kept %d rows, want %d", len(rows), lessons.MaxRows)
	}

	fresh, _ := notebook.Parse([]byte("# t\n\n```sql\nSELECT 1\n```\n\n```sql {counters=on}\nSELECT 3\n```\n"))
	if n := ref.Apply(fresh); n != 1 {
		t.Errorf("applied to %d cells, want 1", n)
	}
	if o := fresh.Cells[1].Outputs; len(o) != 2 || !strings.HasPrefix(o[0].Text, "reference run on Test CPU (2 cores") || o[1].Text != "1" {
		t.Errorf("outputs of the unchanged cell: %+v", o)
	}
	if len(fresh.Cells[2].Outputs) != 0 {
		t.Errorf("the edited cell got a reference output")
	}
	stale, missing := ref.Stale(fresh)
	if len(stale) != 1 || len(missing) != 1 || missing[0] != fresh.Cells[2].ID {
		t.Errorf("stale %v, missing %v", stale, missing)
	}
	own, _ := notebook.Parse([]byte("# t\n\n```sql\nSELECT 1\n```\n"))
	own.Cells[1].Outputs = []notebook.Output{{Type: notebook.OutputResult, Text: "mine"}}
	if ref.Apply(own); len(own.Cells[1].Outputs) != 1 || own.Cells[1].Outputs[0].Text != "mine" {
		t.Errorf("a cell's own outputs were replaced: %+v", own.Cells[1].Outputs)
	}
}

// referenceDirections are the key comparisons whose direction a lesson
// states: the measured ratio is above 1 (naive slower than radix, packed
// slower than padded, …). TestReferenceVerdicts holds each reference run
// to it.
var referenceDirections = map[string]bool{
	"branches":          true,
	"naive-vs-radix":    true,
	"spill-vs-memory":   true,
	"merge-two-level":   true,
	"false-sharing":     true,
	"sum-rewrite":       true,
	"stride":            true,
	"mlp":               true,
	"transfer-two-keys": true,
}

// TestReferenceVerdicts: each reference run shows its lesson's point —
// the prediction's measured ratio goes the way the lesson says — or its
// verdict says it was too noisy to tell, which the page then shows the
// learner beside it. A reference recorded on a busy machine that says
// the opposite fails here.
func TestReferenceVerdicts(t *testing.T) {
	seen := map[string]bool{}
	for _, l := range lessonNotebooks(t) {
		opened, err := lessons.Opened(l.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range opened.Cells {
			if !referenceDirections[c.ID] {
				continue
			}
			var o *predict.Outcome
			for _, out := range c.Outputs {
				raw, ok := out.Data[predict.MIME]
				if !ok {
					continue
				}
				b, err := json.Marshal(raw)
				if err != nil {
					t.Fatal(err)
				}
				o = new(predict.Outcome)
				if err := json.Unmarshal(b, o); err != nil {
					t.Fatal(err)
				}
			}
			seen[c.ID] = true
			switch {
			case o == nil:
				t.Errorf("%s: cell %s: the reference run has no prediction output", l.Name, c.ID)
			case o.Measured == nil:
				t.Errorf("%s: cell %s: the reference run measured nothing: %s", l.Name, c.ID, o.Note)
			case o.Noisy:
				t.Logf("%s: cell %s: the reference run says it was too noisy: %s", l.Name, c.ID, o.Verdict)
			case *o.Measured <= 1:
				t.Errorf("%s: cell %s: the reference run measured %.2f, against the lesson's direction (above 1), and did not say it was too noisy", l.Name, c.ID, *o.Measured)
			default:
				t.Logf("%s: cell %s: reference %.2f× %s", l.Name, c.ID, *o.Measured, o.Verdict)
			}
		}
	}
	for id := range referenceDirections {
		if !seen[id] {
			t.Errorf("no lesson has a cell %s", id)
		}
	}
}
