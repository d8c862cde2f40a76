package notebook

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// shape is what a round trip must keep of a cell: its kind, experiment
// name, source (prose without leading and trailing blank lines, which
// carry no meaning), attributes and outputs.
func shape(nb *Notebook) []string {
	var out []string
	for _, c := range nb.Cells {
		src := c.Source
		if c.Kind == KindMarkdown {
			src = trimBlankLines(src)
		}
		out = append(out, fingerprint([]any{c.Kind, c.Name, src, c.Attrs, c.Outputs}))
	}
	return out
}

// roundTrip writes cells as a fresh notebook (as the server does for what
// the page sends), parses the result and returns both notebooks.
func roundTrip(t testing.TB, cells []*Cell) (*Notebook, *Notebook, string) {
	t.Helper()
	nb := &Notebook{Cells: cells}
	nb.AssignIDs()
	md := string(nb.Markdown())
	back, err := Parse([]byte(md))
	if err != nil {
		t.Fatal(err)
	}
	return nb, back, md
}

func TestProseThatLooksLikeACell(t *testing.T) {
	md := func(s string) *Cell { return NewCell(KindMarkdown, s) }
	sql := func(s string) *Cell { return NewCell(KindSQL, s) }
	tests := []struct {
		name  string
		cells []*Cell
		// closes: prose ends in an open block, which gets its closing
		// line; only the kinds and count must then be kept.
		closes bool
	}{
		{"sql fence in prose", []*Cell{md("Run this:\n\n```sql\nSELECT 1\n```\n\nlater.")}, false},
		{"prose is only a fence", []*Cell{md("```sql\nSELECT 1\n```")}, false},
		{"output fence after a code cell", []*Cell{sql("SELECT 1"), md("```output\nnot an output\n```")}, false},
		{"experiment fence", []*Cell{md("~~~experiment zeroing\n~~~")}, false},
		{"notebook metadata comment", []*Cell{md(`<!-- cachebook: {"notebook": {"title": "x"}} -->`), sql("SELECT 1")}, false},
		{"cell metadata before a code cell", []*Cell{md("text\n\n" + `<!-- cachebook: {"id": "stolen"} -->`), sql("SELECT 2")}, false},
		{"a marker and an escape in prose", []*Cell{md(strings.TrimSuffix(markerLine+escapeLine, "\n")), md("b")}, false},
		{"consecutive prose", []*Cell{md("# one"), md("two"), md("three"), sql("SELECT 3"), md("four"), md("five")}, false},
		{"empty prose cells", []*Cell{md(""), md("a"), md("  \n"), sql("x"), md("")}, false},
		{"prose first, then metadata-like text", []*Cell{md("<!-- cachebook: not json -->")}, false},
		{"prose ending in an open fence", []*Cell{md("```go\nfunc main() {"), sql("SELECT 1"), md("~~~~\nx"), md("y")}, true},
		{"prose ending in an open comment", []*Cell{md("note <!-- draft"), md("<!-- draft"), sql("SELECT 1"), md("<pre>\nx"), sql("SELECT 2")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nb, back, out := roundTrip(t, tt.cells)
			if a, b := kinds(nb), kinds(back); !reflect.DeepEqual(a, b) {
				t.Fatalf("cells changed through\n%s\nwant %v\ngot  %v", out, a, b)
			}
			if a, b := shape(nb), shape(back); !tt.closes && !reflect.DeepEqual(a, b) {
				t.Fatalf("cells changed through\n%s\nwant %v\ngot  %v", out, a, b)
			}
			if back.Meta != nil {
				t.Fatalf("prose became notebook metadata: %v", back.Meta)
			}
			// Saving the parsed notebook again gives the same bytes.
			if again := string(back.Markdown()); again != out {
				t.Fatalf("second save differs:\n%q\n%q", out, again)
			}
		})
	}
}

func TestOutputsRoundTrip(t *testing.T) {
	result := jsonValue(t, `{"statements":[{"statement":"SELECT 1","columns":[{"name":"1","type":"INTEGER"}],"rows":[["1"]],"row_count":1,"truncated":false,"elapsed_ns":1200}]}`)
	measurement := jsonValue(t, "{\"kind\":\"latency\",\"points\":[{\"bytes\":4096,\"ns\":1.1}],\"note\":\"```\"}")
	counters := jsonValue(t, `{"total":{"events":[{"name":"task-clock","value":1e6}]}}`)
	c := NewCell(KindSQL, "SELECT 1")
	c.Outputs = []Output{
		{Type: OutputStream, Name: "stderr", Text: "result truncated\n"},
		{Type: OutputResult, Text: "1\n(1 row)", Data: map[string]any{"application/vnd.cachebook.result+json": result}},
		{Type: OutputDisplay, Data: map[string]any{"application/vnd.cachebook.counters+json": counters}},
		{Type: OutputDisplay, Data: map[string]any{"application/vnd.cachebook.counters+json": counters}},
		{Type: OutputError, Name: "SQLError", Text: "line 1:8: no column x"},
	}
	m := NewCell(KindLatency, "max=2M")
	m.Outputs = []Output{{Type: OutputResult, Text: "L1 1.1 ns", HTML: "<b>chart</b>", Data: map[string]any{
		"application/vnd.cachebook.measurement+json": measurement, "application/json": jsonValue(t, `[1,2]`), "image/svg+xml": "<svg/>", "traceback": []any{"a", "b"}}}}
	nb, back, out := roundTrip(t, []*Cell{c, NewCell(KindMarkdown, "between"), m})
	if a, b := shape(nb), shape(back); !reflect.DeepEqual(a, b) {
		t.Fatalf("outputs changed through\n%s\nwant %v\ngot  %v", out, a, b)
	}
	if !strings.Contains(out, "```output {mime=application/vnd.cachebook.result+json}\n{\"statements\":[{\"columns\"") {
		t.Errorf("result data not saved as its own block:\n%s", out)
	}
	// Invalid JSON or an unknown MIME type is not an output.
	for _, bad := range []string{"```output {mime=application/json}\n{nope\n```\n", "```output {mime=application/octet-stream}\nxx\n```\n"} {
		nb, _ := Parse([]byte("```sql\nx\n```\n" + bad))
		if len(nb.Cells) != 2 || len(nb.Cells[0].Outputs) != 0 {
			t.Errorf("%q: %d cells, outputs %v", bad, len(nb.Cells), nb.Cells[0].Outputs)
		}
	}
}

// jsonValue decodes s as Parse does (numbers keep their digits).
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// FuzzRoundTrip parses any input, rebuilds the notebook from its cells as
// an editor would (new cells, some of them edited), writes and parses it
// again: the number of cells, their kinds, sources, attributes and outputs
// must be kept. Every cell is also duplicated next to itself, so that
// consecutive prose cells and prose after code are exercised.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte(sample), uint8(0))
	f.Add([]byte("a\n```sql\nx\n```\n```output {mime=application/json}\n[1]\n```\nb\n"), uint8(1))
	f.Add([]byte("<!-- cachebook: {\"cell\":\"markdown\"} -->\n\n```sql\nx\n```\n"), uint8(2))
	f.Add([]byte("<!-- cachebook: {\"prose\":true} -->\n```output\nz\n```\n"), uint8(3))
	f.Fuzz(func(t *testing.T, src []byte, mode uint8) {
		nb, err := Parse(src)
		if err != nil {
			return
		}
		// Prose that ends inside an open block gets its closing line
		// when written, so only its source may change.
		cells, open := nb.Cells, false
		for _, c := range cells {
			open = open || unclosedFence(c)
		}
		if mode%2 == 1 {
			var twice []*Cell
			for _, c := range cells {
				twice = append(twice, c, c)
			}
			cells = twice
		}
		var fresh []*Cell
		for _, c := range cells {
			n := NewCell(c.Kind, c.Source)
			n.Name, n.Attrs, n.Outputs = c.Name, c.Attrs, c.Outputs
			fresh = append(fresh, n)
		}
		want, back, out := roundTrip(t, fresh)
		if a, b := kinds(want), kinds(back); !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip of %q through\n%q\nchanged the cells: want %v, got %v", src, out, a, b)
		}
		if a, b := shape(want), shape(back); !open && !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip of %q through\n%q\nwant %d cells %v\ngot  %d cells %v", src, out, len(a), a, len(b), b)
		}
		if again := string(back.Markdown()); again != out {
			t.Fatalf("second save of %q differs:\n%q\n%q", src, out, again)
		}
	})
}

// kinds lists the kinds of nb's cells.
func kinds(nb *Notebook) []CellKind {
	var k []CellKind
	for _, c := range nb.Cells {
		k = append(k, c.Kind)
	}
	return k
}

// unclosedFence reports whether prose ends inside a block that never
// closes (a fence, an HTML comment): written, it gets a closing line.
func unclosedFence(c *Cell) bool {
	if c.Kind != KindMarkdown {
		return false
	}
	probe := trimBlankLines(c.Source) + "\n\n" + fmt.Sprintf("```sql\nprobe\n```\n")
	nb, err := Parse([]byte(probe))
	return err != nil || len(nb.Cells) == 0 || nb.Cells[len(nb.Cells)-1].Kind != KindSQL
}
