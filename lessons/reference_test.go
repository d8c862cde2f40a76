package lessons_test

import (
	"strings"
	"testing"

	"cachebook/lessons"
	"cachebook/notebook"
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
				for _, o := range c.Outputs {
					if o.Type == notebook.OutputError {
						t.Errorf("cell %s: the reference run failed: %s: %s", c.ID, o.Name, o.Text)
					}
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
