package notebook

import (
	"encoding/json"
	"strings"
	"testing"

	"cachebook/notebook/predict"
)

const predictNB = "# P\n\n<!-- cachebook: {\"id\": \"ratio\", \"predict\": {\"question\": \"How many times slower?\", \"unit\": \"×\", " +
	"\"measure\": \"elapsed(1) / elapsed(2)\", \"article\": {\"value\": 1.33, \"source\": \"Pivot\"}, \"check\": \"1.1–2×\"}} -->\n" +
	"```sql\nSET group_by = 'naive';\nSELECT 1;\nSET group_by = 'radix';\nSELECT 1\n```\n\nAfter.\n"

func TestPredictionSpecs(t *testing.T) {
	tests := []struct {
		name string
		cell Cell
		err  string
	}{
		{"none", Cell{ID: "a", Kind: KindSQL}, ""},
		{"sql", Cell{ID: "a", Kind: KindSQL, Meta: map[string]any{"predict": map[string]any{"question": "q", "unit": "ns", "measure": "elapsed(1)"}}}, ""},
		{"latency", Cell{ID: "a", Kind: KindLatency, Meta: map[string]any{"predict": map[string]any{"question": "q", "unit": "ns", "measure": "points[last].ns"},
			"guess": map[string]any{"value": 90.0}}}, ""},
		{"choice guess", Cell{ID: "a", Kind: KindSQL, Meta: map[string]any{"predict": map[string]any{"question": "q", "choices": []any{"x", "y"}, "bounds": []any{1.0}, "measure": "elapsed(1)"},
			"guess": map[string]any{"choice": "y"}}}, ""},
		{"sql reads data", Cell{ID: "a", Kind: KindSQL, Meta: map[string]any{"predict": map[string]any{"question": "q", "unit": "ns", "measure": "points[last].ns"}}}, "an sql cell's measure"},
		{"latency reads sql", Cell{ID: "a", Kind: KindLatency, Meta: map[string]any{"predict": map[string]any{"question": "q", "unit": "ns", "measure": "elapsed(1)"}}}, "a latency cell's measure"},
		{"constant", Cell{ID: "a", Kind: KindSQL, Meta: map[string]any{"predict": map[string]any{"question": "q", "unit": "ns", "measure": "3 * 4"}}}, "reads nothing"},
		{"markdown", Cell{ID: "a", Kind: KindMarkdown, Meta: map[string]any{"predict": map[string]any{}}}, "cannot have a prediction"},
		{"bad measure", Cell{ID: "a", Kind: KindSQL, Meta: map[string]any{"predict": map[string]any{"question": "q", "unit": "ns", "measure": "elapsed(x)"}}}, "cell a: predict: measure \"elapsed(x)\", column 9"},
		{"guess not a choice", Cell{ID: "a", Kind: KindSQL, Meta: map[string]any{"predict": map[string]any{"question": "q", "choices": []any{"x", "y"}, "bounds": []any{1.0}, "measure": "elapsed(1)"},
			"guess": map[string]any{"choice": "z"}}}, "not one of the choices"},
		{"bad guess", Cell{ID: "a", Kind: KindSQL, Meta: map[string]any{"predict": map[string]any{"question": "q", "unit": "ns", "measure": "elapsed(1)"},
			"guess": map[string]any{"value": "3"}}}, "guess"},
	}
	for _, tt := range tests {
		_, _, err := tt.cell.Prediction()
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.err)
		}
	}
}

// TestPredictionRoundTrip commits a guess, writes the notebook as Markdown
// and as .ipynb, and reads both back: the spec and the guess survive.
func TestPredictionRoundTrip(t *testing.T) {
	nb, err := Parse([]byte(predictNB))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(nb.Markdown()); got != predictNB {
		t.Fatalf("unmodified notebook changed:\n%s", got)
	}
	c := nb.Cell("ratio")
	if c == nil {
		t.Fatalf("no cell ratio: %v", nb.Cells)
	}
	s, g, err := c.Prediction()
	if err != nil || s == nil || g != nil || s.Article.Value != 1.33 {
		t.Fatalf("Prediction = %+v, %+v, %v", s, g, err)
	}
	v := 2.5
	c.SetGuess(&predict.Guess{Value: &v, At: "2026-12-02T01:00:00Z"})
	md := nb.Markdown()
	if !strings.Contains(string(md), `"guess":{"at":"2026-12-02T01:00:00Z","value":2.5}`) {
		t.Errorf("guess not written:\n%s", md)
	}
	check := func(how string, nb *Notebook) {
		t.Helper()
		c := nb.Cell("ratio")
		if c == nil {
			t.Fatalf("%s: no cell ratio", how)
		}
		s, g, err := c.Prediction()
		if err != nil || s == nil || g == nil || g.Value == nil || *g.Value != 2.5 || g.At != "2026-12-02T01:00:00Z" ||
			s.Measure != "elapsed(1) / elapsed(2)" || s.Check != "1.1–2×" || c.Source != "SET group_by = 'naive';\nSELECT 1;\nSET group_by = 'radix';\nSELECT 1" {
			t.Errorf("%s: Prediction = %+v, %+v, %v; source %q", how, s, g, err, c.Source)
		}
	}
	back, err := Parse(md)
	if err != nil {
		t.Fatal(err)
	}
	check("markdown", back)
	ipynb, err := back.Ipynb()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cells []struct {
			Metadata map[string]map[string]any `json:"metadata"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(ipynb, &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range doc.Cells {
		if m, ok := c.Metadata["cachebook"]["meta"].(map[string]any); ok && m["predict"] != nil && m["guess"] != nil {
			found = true
		}
	}
	if !found {
		t.Errorf("ipynb has no metadata.cachebook.meta.predict and guess:\n%s", ipynb)
	}
	imp, err := ImportIpynb(ipynb)
	if err != nil {
		t.Fatal(err)
	}
	check("ipynb", imp)
	again, err := Parse(imp.Markdown())
	if err != nil {
		t.Fatal(err)
	}
	check("ipynb then markdown", again)
	// Removing the guess removes it from the file.
	again.Cell("ratio").SetGuess(nil)
	if strings.Contains(string(again.Markdown()), `"guess"`) {
		t.Errorf("guess still written after SetGuess(nil)")
	}
}
