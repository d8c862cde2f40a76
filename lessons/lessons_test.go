package lessons_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"cachebook/lessons"
	"cachebook/notebook"
)

func TestList(t *testing.T) {
	list, err := lessons.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 8 {
		t.Fatalf("got %d lessons, want 8", len(list))
	}
	for i, l := range list {
		if l.Order != i+1 {
			t.Errorf("lesson %s has order %d, want %d", l.Name, l.Order, i+1)
		}
		if l.Title == "" || l.Goal == "" {
			t.Errorf("lesson %s lacks a title or goal: %+v", l.Name, l)
		}
	}
}

func TestResolve(t *testing.T) {
	for _, name := range []string{"03-radix", "radix", "03-radix.md"} {
		if _, err := lessons.Source(name); err != nil {
			t.Errorf("Source(%q): %v", name, err)
		}
	}
	for _, name := range []string{"", "nope", "../lessons/03-radix", ".hidden", "a/b"} {
		if _, err := lessons.Source(name); err == nil {
			t.Errorf("Source(%q) succeeded", name)
		}
	}
}

// TestEveryLesson checks that each lesson parses, writes back to the same
// bytes, renders, and has the parts every lesson must have.
func TestEveryLesson(t *testing.T) {
	list, err := lessons.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		t.Run(l.Name, func(t *testing.T) {
			src, err := lessons.Source(l.Name)
			if err != nil {
				t.Fatal(err)
			}
			nb, err := notebook.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			if got := nb.Markdown(); !bytes.Equal(got, src) {
				t.Fatal("Markdown(Parse(lesson)) differs from the lesson")
			}
			var code, predictBeforeCode int
			var prose strings.Builder
			seenPredict := false
			for _, c := range nb.Cells {
				if c.Kind == notebook.KindMarkdown {
					html, err := notebook.RenderHTML(c.Source)
					if err != nil {
						t.Fatal(err)
					}
					if strings.Contains(html, "<script") {
						t.Errorf("rendered prose contains a script tag")
					}
					prose.WriteString(c.Source)
					if strings.Contains(c.Source, "**Predict first.**") {
						seenPredict = true
					}
					continue
				}
				code++
				if seenPredict {
					predictBeforeCode++
					seenPredict = false
				}
				if c.Kind == notebook.KindExperiment && c.Name == "" {
					t.Errorf("experiment cell %s has no name", c.ID)
				}
				if c.Kind == notebook.KindSQL && strings.TrimSpace(c.Source) == "" {
					t.Errorf("sql cell %s is empty", c.ID)
				}
			}
			text := prose.String()
			if code == 0 {
				t.Error("no code cells")
			}
			if predictBeforeCode == 0 {
				t.Error("no \"Predict first\" question directly before a code cell")
			}
			for _, want := range []string{"**Learning goal:**", "*Source:", "## On a machine without counters", "|---|"} {
				if !strings.Contains(text, want) {
					t.Errorf("lesson lacks %q", want)
				}
			}
			// Every lesson exports to a notebook Jupyter can read.
			ipynb, err := nb.Ipynb()
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(ipynb) {
				t.Fatal("invalid ipynb JSON")
			}
		})
	}
}

// lessonNotebook is one built-in lesson, parsed.
type lessonNotebook struct {
	Name string
	nb   *notebook.Notebook
}

// lessonNotebooks returns every built-in lesson, parsed.
func lessonNotebooks(t *testing.T) []lessonNotebook {
	t.Helper()
	list, err := lessons.List()
	if err != nil {
		t.Fatal(err)
	}
	var out []lessonNotebook
	for _, l := range list {
		nb, err := lessons.Notebook(l.Name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, lessonNotebook{Name: l.Name, nb: nb})
	}
	return out
}
