package notebook

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const sample = `<!-- cachebook: {"notebook": {"title": "Sample", "goal": "test"}} -->
# Sample notebook

Some prose with a ` + "`code span`" + `.

` + "```go" + `
// not a cell
` + "```" + `

<!-- cachebook: {"id": "q1"} -->

` + "```sql {group_by=radix threads=2}" + `
SELECT UserID, count(*) FROM hits GROUP BY UserID
` + "```" + `

` + "```output" + `
UserID  count
1       2
` + "```" + `
` + "```output {mime=text/html}" + `
<table></table>
` + "```" + `
` + "```output {type=error name=ParseError}" + `
boom
` + "```" + `

Between.
` + "~~~~experiment false-sharing threads=4" + `
~~~~
` + "```latency" + `
` + "```" + `
tail
`

func TestParseSample(t *testing.T) {
	nb, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(nb.Markdown()); got != sample {
		t.Fatalf("round trip differs:\n%s", got)
	}
	if nb.Meta["goal"] != "test" || nb.Title() != "Sample" {
		t.Errorf("meta = %v, title %q", nb.Meta, nb.Title())
	}
	var kinds []string
	for _, c := range nb.Cells {
		kinds = append(kinds, string(c.Kind))
	}
	want := []string{"markdown", "sql", "markdown", "experiment", "latency", "markdown"}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("kinds = %v, want %v", kinds, want)
	}
	q := nb.Cells[1]
	if q.ID != "q1" || q.Source != "SELECT UserID, count(*) FROM hits GROUP BY UserID" {
		t.Errorf("sql cell = %+v", q)
	}
	if !reflect.DeepEqual(q.Attrs, map[string]string{"group_by": "radix", "threads": "2"}) {
		t.Errorf("attrs = %v", q.Attrs)
	}
	wantOut := []Output{
		{Type: OutputResult, Text: "UserID  count\n1       2", HTML: "<table></table>"},
		{Type: OutputError, Name: "ParseError", Text: "boom"},
	}
	if !reflect.DeepEqual(q.Outputs, wantOut) {
		t.Errorf("outputs = %+v", q.Outputs)
	}
	e := nb.Cells[3]
	if e.Name != "false-sharing" || e.Attrs["threads"] != "4" || e.Source != "" {
		t.Errorf("experiment cell = %+v", e)
	}
	if !strings.Contains(nb.Cells[0].Source, "```go") {
		t.Errorf("go block should be prose: %q", nb.Cells[0].Source)
	}
	if nb.Cells[4].ID == "" || nb.Cells[4].ID == nb.Cells[3].ID {
		t.Errorf("ids: %q %q", nb.Cells[3].ID, nb.Cells[4].ID)
	}
}

func TestEditedCellIsRewritten(t *testing.T) {
	nb, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	q := nb.Cells[1]
	q.Source = "SELECT 1"
	q.Attrs["note"] = "a b"
	q.Outputs = []Output{{Type: OutputResult, Text: "```\n1"}}
	nb.Meta["goal"] = "changed"
	out := nb.Markdown()
	nb2, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(nb2.Markdown(), out) {
		t.Fatal("second round trip differs")
	}
	q2 := nb2.Cell("q1")
	if q2 == nil {
		t.Fatalf("cell q1 lost:\n%s", out)
	}
	if q2.Source != q.Source || !reflect.DeepEqual(q2.Attrs, q.Attrs) || !reflect.DeepEqual(q2.Outputs, q.Outputs) {
		t.Errorf("edited cell = %+v\n%s", q2, out)
	}
	if nb2.Meta["goal"] != "changed" {
		t.Errorf("meta = %v", nb2.Meta)
	}
	if len(nb2.Cells) != len(nb.Cells) {
		t.Errorf("cells = %d, want %d\n%s", len(nb2.Cells), len(nb.Cells), out)
	}
}

func TestParseInfo(t *testing.T) {
	tests := []struct {
		info  string
		kind  string
		name  string
		attrs map[string]string
	}{
		{"sql", "sql", "", nil},
		{"sql {group_by=radix}", "sql", "", map[string]string{"group_by": "radix"}},
		{"sql{a=1,b=2}", "sql", "", map[string]string{"a": "1", "b": "2"}},
		{"sql a=1 b", "sql", "", map[string]string{"a": "1", "b": "true"}},
		{`sweep {label="a b" x=}`, "sweep", "", map[string]string{"label": "a b", "x": ""}},
		{"experiment zeroing", "experiment", "zeroing", nil},
		{"experiment zeroing {size=8M}", "experiment", "zeroing", map[string]string{"size": "8M"}},
		{"experiment threads=2", "experiment", "", map[string]string{"threads": "2"}},
	}
	for _, tt := range tests {
		kind, name, attrs, ok := parseInfo(tt.info)
		if !ok || kind != tt.kind || name != tt.name || !reflect.DeepEqual(attrs, tt.attrs) {
			t.Errorf("parseInfo(%q) = %q %q %v %v", tt.info, kind, name, attrs, ok)
		}
		if tt.attrs != nil || tt.name != "" {
			k2, n2, a2, _ := parseInfo(formatInfo(kind, name, attrs))
			if k2 != kind || n2 != name || !reflect.DeepEqual(a2, attrs) {
				t.Errorf("format/parse of %q = %q %q %v", tt.info, k2, n2, a2)
			}
		}
	}
}

func TestRoundTripEdgeCases(t *testing.T) {
	for _, src := range []string{
		"",
		"\n",
		"```sql",
		"```sql\n",
		"```sql\nSELECT 1",
		"```sql\nSELECT 1\n\n\n",
		"  ```sql\n  SELECT 1\n  ```\n",
		"```sql\r\nSELECT 1\r\n```\r\n",
		"text\n```sql\nx\n```",
		"<!-- cachebook: {\"id\":\"x\"} -->\n```sql\nx\n```\n```output\n",
		"<!-- cachebook: {\"notebook\":{}} -->",
		"<!-- cachebook: nope -->\n```sql\n```\n",
		"> ```sql\n> x\n> ```\n",
		"- ```sql\n  x\n  ```\n",
		"```output\norphan\n```\n",
		"\t```sql\nx\n```\n",
		"[a]: /b\n```sql\nx\n```\n[c]: /d\n```output\ny\n```\n",
	} {
		nb, err := Parse([]byte(src))
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		if got := string(nb.Markdown()); got != src {
			t.Errorf("round trip of %q gave %q", src, got)
		}
	}
}

func TestIDsStableAndUnique(t *testing.T) {
	src := "```sql\nSELECT 1\n```\n\n```sql\nSELECT 1\n```\n\n```sql\nSELECT 2\n```\n"
	a, _ := Parse([]byte(src))
	b, _ := Parse([]byte("intro\n\n" + src))
	seen := map[string]bool{}
	for _, c := range a.Cells {
		if seen[c.ID] || !ValidID(c.ID) {
			t.Errorf("bad or duplicate id %q", c.ID)
		}
		seen[c.ID] = true
	}
	// Adding prose before the cells keeps the code cells' ids.
	var ida, idb []string
	for _, c := range a.Cells {
		if c.Kind.IsCode() {
			ida = append(ida, c.ID)
		}
	}
	for _, c := range b.Cells {
		if c.Kind.IsCode() {
			idb = append(idb, c.ID)
		}
	}
	if !reflect.DeepEqual(ida, idb) {
		t.Errorf("ids changed: %v vs %v", ida, idb)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	lessonFiles, _ := filepath.Glob("../lessons/*.md")
	for _, name := range lessonFiles {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("```sql\nx\n```\n```output {type=stream name=stdout}\ny\n```\n"))
	f.Add([]byte("<!-- cachebook: {\"id\":\"a\"} -->\n\n~~~experiment zeroing {x=\"1 2\"}\n~~~\n"))
	f.Add([]byte("* a\n\n  ```sql\n  b\n  ```\n| a | b |\n|---|---|\n| 1 | 2 |\n[^1]: note\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		nb, err := Parse(src)
		if err != nil {
			return
		}
		if got := nb.Markdown(); !bytes.Equal(got, src) {
			t.Fatalf("round trip of %q gave %q", src, got)
		}
		for _, c := range nb.Cells {
			if !ValidID(c.ID) || !c.Kind.Valid() {
				t.Fatalf("bad cell %+v", c)
			}
		}
		// Rebuilding the notebook from its cells reaches a fixed point.
		first := rebuild(nb).Markdown()
		if nb1, err := Parse(first); err == nil {
			if second := rebuild(nb1).Markdown(); !bytes.Equal(first, second) {
				t.Fatalf("rebuild of %q not stable:\n%q\n%q", src, first, second)
			}
		}
		// Rewriting every code cell canonically must parse back to the
		// same cells.
		for _, c := range nb.Cells {
			c.fp = "edited"
		}
		out := nb.Markdown()
		nb2, err := Parse(out)
		if err != nil {
			return
		}
		if a, b := codeCells(nb), codeCells(nb2); !reflect.DeepEqual(a, b) {
			t.Fatalf("canonical rewrite of %q changed cells:\n%q\n%v\n%v", src, out, a, b)
		}
	})
}

func codeCells(nb *Notebook) []string {
	var out []string
	for _, c := range nb.Cells {
		if c.Kind.IsCode() {
			out = append(out, fingerprint([]any{c.Kind, c.Name, c.Source, c.Attrs, c.Meta, c.Outputs}))
		}
	}
	return out
}

// rebuild makes a fresh notebook from nb's cells, as an editor that keeps
// no parse state would before saving.
func rebuild(nb *Notebook) *Notebook {
	out := &Notebook{Meta: nb.Meta}
	for _, c := range nb.Cells {
		n := NewCell(c.Kind, c.Source)
		n.ID, n.Name, n.Attrs, n.Meta, n.Outputs = c.ID, c.Name, c.Attrs, c.Meta, c.Outputs
		out.Cells = append(out.Cells, n)
	}
	out.AssignIDs()
	return out
}

// TestRebuildIsStable checks that saving a notebook rebuilt from its cells
// reaches a fixed point at once: no blank lines pile up, no cells merge or
// split, code cells keep their content.
func TestRebuildIsStable(t *testing.T) {
	for _, src := range []string{sample, "x", "```sql\nSELECT 1\n```", "\n\n# a\n\n\n```latency\n```\n\n\ntext\n\n"} {
		nb, err := Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		first := rebuild(nb).Markdown()
		nb1, err := Parse(first)
		if err != nil {
			t.Fatal(err)
		}
		second := rebuild(nb1).Markdown()
		if !bytes.Equal(first, second) {
			t.Errorf("rebuild not stable:\n%q\n%q", first, second)
		}
		if a, b := codeCells(nb), codeCells(nb1); !reflect.DeepEqual(a, b) {
			t.Errorf("rebuild changed code cells:\n%v\n%v", a, b)
		}
		if len(nb1.Cells) > len(nb.Cells) {
			t.Errorf("rebuild added cells: %d → %d", len(nb.Cells), len(nb1.Cells))
		}
	}
}
