package web

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"cachebook/kernel"
	"cachebook/notebook"
)

// TestSaveKeepsOutputs saves a notebook with the outputs the page
// records (a result table, a measurement, counters, a stream, an error),
// reopens it and wants them back unchanged; the saved Markdown holds the
// result as text too.
func TestSaveKeepsOutputs(t *testing.T) {
	dir := t.TempDir()
	nd := &NotebookDir{Root: dir}
	bundle := `{"statements":[{"statement":"SELECT 1 AS one","columns":[{"name":"one","type":"INTEGER"}],"rows":[["1"]],"row_count":1,"truncated":false,"elapsed_ns":1500}]}`
	var d Doc
	err := json.Unmarshal([]byte(`{"title":"Demo","cells":[
		{"cell_type":"markdown","source":"# Demo\n\n`+"```sql\\nSELECT 'prose'\\n```"+`"},
		{"cell_type":"markdown","source":"<!-- cachebook: {\"notebook\": {\"title\": \"not this\"}} -->"},
		{"cell_type":"code","kind":"sql","source":"SELECT 1 AS one","outputs":[
			{"type":"stream","name":"stderr","text":"note\n"},
			{"type":"result","data":{"`+kernel.MIMEResult+`": `+bundle+`}},
			{"type":"display","data":{"`+kernel.MIMECounters+`": {"total": {"events": []}}}}]},
		{"cell_type":"code","kind":"latency","source":"max=2M","outputs":[
			{"type":"result","text":"L1 1 ns","data":{"`+kernel.MIMEMeasurement+`": {"kind": "latency", "points": [{"bytes": 4096, "ns": 1.2}]}}}]},
		{"cell_type":"code","kind":"sql","source":"SELECT nope","outputs":[{"type":"error","name":"SQLError","text":"line 1:8: column nope does not exist"}]}]}`), &d)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := ToNotebook(&d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nd.Save("demo.md", nb); err != nil {
		t.Fatal(err)
	}
	back, err := nd.Open("demo.md")
	if err != nil {
		t.Fatal(err)
	}
	got := FromNotebook("demo.md", back)
	if len(got.Cells) != len(d.Cells) {
		t.Fatalf("%d cells came back, want %d", len(got.Cells), len(d.Cells))
	}
	for i, c := range got.Cells {
		if c.CellType != d.Cells[i].CellType || strings.TrimSpace(c.Source) != strings.TrimSpace(d.Cells[i].Source) {
			t.Errorf("cell %d: %s %q, want %s %q", i, c.CellType, c.Source, d.Cells[i].CellType, d.Cells[i].Source)
		}
	}
	if got.Title != "Demo" {
		t.Errorf("title %q", got.Title)
	}
	res := got.Cells[2].Outputs[1]
	var bv any
	_ = json.Unmarshal([]byte(bundle), &bv)
	if !strings.Contains(res.Text, "one") || asJSON(res.Data[kernel.MIMEResult]) != asJSON(bv) {
		t.Errorf("result output %+v", res)
	}
	want := nb.Cells[3].Outputs
	if asJSON(got.Cells[3].Outputs) != asJSON(want) || got.Cells[4].Outputs[0].Name != "SQLError" {
		t.Errorf("outputs %+v", got.Cells[3:])
	}
	// Garbage is refused, not saved.
	for _, bad := range []notebook.Output{
		{Type: "weird"},
		{Type: notebook.OutputResult, Data: map[string]any{"application/octet-stream": "x"}},
	} {
		if _, err := ToNotebook(&Doc{Cells: []DocCell{{CellType: "code", Kind: "sql", Outputs: []notebook.Output{bad}}}}); err == nil {
			t.Errorf("output %+v accepted", bad)
		}
	}
}

// asJSON is v as JSON, to compare values decoded with and without
// json.Number.
func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestWelcomeCarriesInstance checks the welcome's server_instance: the
// same on every connection to one server, different on another.
func TestWelcomeCarriesInstance(t *testing.T) {
	instance := func(ts *testServer) string {
		var w struct {
			ServerInstance string `json:"server_instance"`
		}
		m := ts.dialRaw(t)
		_ = m.DecodeContent(&w)
		return w.ServerInstance
	}
	a, b := newTestServer(t, Config{}), newTestServer(t, Config{})
	ia, ia2, ib := instance(a), instance(a), instance(b)
	if ia == "" || ia != ia2 || ia == ib || ia != a.Instance() {
		t.Fatalf("instances %q %q %q", ia, ia2, ib)
	}
}

// TestToNotebookRefusesUnwritableNames refuses an experiment name or an
// attribute name that would not read back from the info string.
func TestToNotebookRefusesUnwritableNames(t *testing.T) {
	for _, dc := range []DocCell{
		{CellType: "code", Kind: "experiment", Source: "zeroing {size=1G}\n"},
		{CellType: "code", Kind: "sql", Source: "SELECT 1", Attrs: map[string]string{"a b": "1"}},
		{CellType: "code", Kind: "sql", Source: "SELECT 1", Attrs: map[string]string{"x}": "1"}},
	} {
		if _, err := ToNotebook(&Doc{Cells: []DocCell{dc}}); err == nil {
			t.Errorf("%+v accepted", dc)
		}
	}
	nb, err := ToNotebook(&Doc{Cells: []DocCell{{CellType: "code", Kind: "experiment", Source: "false-sharing\nthreads=2", Attrs: map[string]string{"counters": "on"}}}})
	if err != nil {
		t.Fatal(err)
	}
	back, err := notebook.Parse(nb.Markdown())
	if err != nil || back.Cells[0].Name != "false-sharing" || back.Cells[0].Attrs["counters"] != "on" {
		t.Fatalf("round trip %+v, %v", back.Cells[0], err)
	}
}

// TestExportKeepsOutputs exports a notebook with outputs as .ipynb and as
// Markdown: both carry them.
func TestExportKeepsOutputs(t *testing.T) {
	ts := newTestServer(t, Config{})
	doc := `{"title":"E","cells":[{"cell_type":"code","kind":"sql","source":"SELECT 1 AS one","outputs":[
		{"type":"result","data":{"` + kernel.MIMEResult + `":{"statements":[{"statement":"SELECT 1 AS one","columns":[{"name":"one","type":"INTEGER"}],"rows":[["1"]],"row_count":1}]}}},
		{"type":"error","name":"SQLError","text":"boom"}]}]}`
	for _, tc := range []struct{ format, want1, want2 string }{
		{"ipynb", `"execute_result"`, `"ename": "SQLError"`},
		{"md", "mime=" + kernel.MIMEResult, "type=error"},
	} {
		req, _ := http.NewRequest("POST", ts.ts.URL+"/api/export?format="+tc.format, strings.NewReader(doc))
		req.Header.Set("Authorization", "token secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), tc.want1) || !strings.Contains(string(body), tc.want2) {
			t.Errorf("%s export (%d) lacks the outputs:\n%s", tc.format, resp.StatusCode, body)
		}
	}
}
