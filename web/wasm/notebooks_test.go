package main

import (
	"encoding/json"
	"strings"
	"testing"

	"cachebook/notebook"
)

const sampleMD = "# Sample\n\nSome *prose* <script>alert(1)</script>.\n\n```sql {counters=on}\nSELECT 1\n```\n"

// TestConvert: a .md and an .ipynb open into the page's form, and the
// page's form downloads as .md and .ipynb that open again the same.
func TestConvert(t *testing.T) {
	opened, err := convert("open", "sample.md", sampleMD)
	if err != nil {
		t.Fatal(err)
	}
	var d notebook.Doc
	if err := json.Unmarshal([]byte(opened), &d); err != nil {
		t.Fatal(err)
	}
	if d.Title != "Sample" || len(d.Cells) != 2 || d.Cells[1].Kind != "sql" || d.Cells[1].Attrs["counters"] != "on" {
		t.Fatalf("opened %s", opened)
	}
	if h := d.Cells[0].HTML; h == nil || strings.Contains(*h, "<script") {
		t.Errorf("prose HTML = %v, want it rendered without the script", h)
	}
	for _, format := range []string{"md", "ipynb"} {
		out, err := convert(format, "", opened)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		again, err := convert("open", "x."+format, out)
		if err != nil {
			t.Fatalf("reopen %s: %v\n%s", format, err, out)
		}
		var d2 notebook.Doc
		if err := json.Unmarshal([]byte(again), &d2); err != nil {
			t.Fatal(err)
		}
		if len(d2.Cells) != 2 || d2.Cells[1].Source != d.Cells[1].Source || d2.Cells[1].Attrs["counters"] != "on" {
			t.Errorf("%s round trip: %s", format, again)
		}
	}
	for _, tt := range []struct{ op, name, text string }{
		{"open", "x.txt", sampleMD},
		{"open", "x.ipynb", "{not json"},
		{"pdf", "", opened},
		{"md", "", "{"},
		{"md", "", `{"cells":[{"cell_type":"code","kind":"nope","source":""}]}`},
	} {
		if _, err := convert(tt.op, tt.name, tt.text); err == nil {
			t.Errorf("convert(%q, %q): no error", tt.op, tt.name)
		}
	}
}
