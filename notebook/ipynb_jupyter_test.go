package notebook_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"cachebook/lessons"
	"cachebook/notebook"
)

// TestIpynbMagics checks that every lesson's code cells are exported as
// cells the cachebook kernel runs (a magic line for non-SQL kinds) and
// come back with the same kind, name, attributes and code.
func TestIpynbMagics(t *testing.T) {
	list, err := lessons.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		nb, err := lessons.Notebook(l.Name)
		if err != nil {
			t.Fatal(err)
		}
		data, err := nb.Ipynb()
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Cells []struct {
				CellType string   `json:"cell_type"`
				Source   []string `json:"source"`
			} `json:"cells"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		var sources []string
		for _, c := range doc.Cells {
			if c.CellType == "code" {
				sources = append(sources, strings.Join(c.Source, ""))
			}
		}
		back, err := notebook.ImportIpynb(data)
		if err != nil {
			t.Fatal(err)
		}
		var orig, got []*notebook.Cell
		for _, c := range nb.Cells {
			if c.Kind.IsCode() {
				orig = append(orig, c)
			}
		}
		for _, c := range back.Cells {
			if c.Kind.IsCode() {
				got = append(got, c)
			}
		}
		if len(got) != len(orig) || len(sources) != len(orig) {
			t.Fatalf("%s: %d code cells, exported %d, imported %d", l.Name, len(orig), len(sources), len(got))
		}
		for i, c := range orig {
			src := sources[i]
			if c.Kind != notebook.KindSQL && !strings.HasPrefix(src, "%%"+string(c.Kind)) {
				t.Errorf("%s: %s cell exported without its magic: %q", l.Name, c.Kind, src)
			}
			if c.Kind == notebook.KindExperiment && !strings.HasPrefix(src, "%%experiment "+c.Name) {
				t.Errorf("%s: experiment cell exported as %q, want the name %s", l.Name, src, c.Name)
			}
			g := got[i]
			if g.Kind != c.Kind || g.Name != c.Name || g.Source != c.Source || !maps.Equal(g.Attrs, c.Attrs) {
				t.Errorf("%s: cell %d came back as %s %q %v %q, want %s %q %v %q", l.Name, i, g.Kind, g.Name, g.Attrs, g.Source,
					c.Kind, c.Name, c.Attrs, c.Source)
			}
		}
	}
}

// TestImportMagicWins checks that an edited magic line decides the cell,
// not the (stale) metadata, and that a magic naming no cachebook kind
// does not become a runnable cell.
func TestImportMagicWins(t *testing.T) {
	src := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "cachebook", "display_name": "cachebook", "language": "sql"}},
	 "cells": [
	  {"id": "a", "cell_type": "code", "metadata": {"cachebook": {"kind": "latency", "attrs": {"max": "256M"}}}, "execution_count": null,
	   "source": ["%%latency max=1G\n"], "outputs": []},
	  {"id": "b", "cell_type": "code", "metadata": {"cachebook": {"kind": "sweep"}}, "execution_count": null,
	   "source": "%%experiment zeroing threads=2\nsize=1MiB", "outputs": []},
	  {"id": "c", "cell_type": "code", "metadata": {"cachebook": {"kind": "bandwidth", "attrs": {"bytes": "8M"}}}, "execution_count": null,
	   "source": "", "outputs": []},
	  {"id": "d", "cell_type": "code", "metadata": {}, "execution_count": null, "source": "%%time\nSELECT 1", "outputs": []},
	  {"id": "e", "cell_type": "code", "metadata": {}, "execution_count": null, "source": "%%sql counters=on\nSELECT 1", "outputs": []}
	 ]}`
	nb, err := notebook.ImportIpynb([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind   notebook.CellKind
		name   string
		attrs  map[string]string
		source string
	}{
		{notebook.KindLatency, "", map[string]string{"max": "1G"}, ""},
		{notebook.KindExperiment, "zeroing", map[string]string{"threads": "2"}, "size=1MiB"},
		{notebook.KindBandwidth, "", map[string]string{"bytes": "8M"}, ""}, // no magic: the metadata says
		{notebook.KindMarkdown, "", nil, "```text\n%%time\nSELECT 1\n```\n"},
		{notebook.KindSQL, "", map[string]string{"counters": "on"}, "SELECT 1"},
	}
	if len(nb.Cells) != len(want) {
		t.Fatalf("%d cells, want %d", len(nb.Cells), len(want))
	}
	for i, w := range want {
		c := nb.Cells[i]
		if c.Kind != w.kind || c.Name != w.name || c.Source != w.source || !maps.Equal(c.Attrs, w.attrs) {
			t.Errorf("cell %d = %s %q %v %q, want %s %q %v %q", i, c.Kind, c.Name, c.Attrs, c.Source, w.kind, w.name, w.attrs, w.source)
		}
	}
}

// TestIpynbOutputData checks that rich outputs (charts as Vega-Lite and
// SVG, cachebook's JSON, error tracebacks) survive export and import
// exactly, and that progress displays are dropped on import.
func TestIpynbOutputData(t *testing.T) {
	nb := &notebook.Notebook{}
	c := notebook.NewCell(notebook.KindLatency, "")
	c.Attrs = map[string]string{"max": "1M"}
	chart := map[string]any{"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "mark": map[string]any{"type": "line"},
		"data": map[string]any{"values": []any{map[string]any{"x": 4096.0, "y": 1.5}}}}
	c.Outputs = []notebook.Output{
		{Type: notebook.OutputStream, Name: "stdout", Text: "running"},
		{Type: notebook.OutputResult, Text: "4096 1.5", Data: map[string]any{
			"application/vnd.vegalite.v5+json":           chart,
			"image/svg+xml":                              "<svg xmlns=\"http://www.w3.org/2000/svg\">\n<rect/>\n</svg>",
			"application/vnd.cachebook.measurement+json": map[string]any{"kind": "latency", "latency": map[string]any{"points": []any{}}},
			"image/png": "iVBORw0KGgo=",
		}},
	}
	q := notebook.NewCell(notebook.KindSQL, "SELECT nosuch FROM hits")
	q.Outputs = []notebook.Output{{Type: notebook.OutputError, Name: "SQLError", Text: "1:8: column \"nosuch\" not found",
		Data: map[string]any{"traceback": []any{"SELECT nosuch FROM hits", "       ^", "\x1b[0;31mSQLError\x1b[0m: 1:8: column \"nosuch\" not found"}}}}
	nb.Cells = []*notebook.Cell{c, q}
	first, err := nb.Ipynb()
	if err != nil {
		t.Fatal(err)
	}
	validate(t, nbformatSchema(t), first)
	var doc struct {
		Cells []struct {
			Outputs []map[string]json.RawMessage `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(first, &doc); err != nil {
		t.Fatal(err)
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(doc.Cells[0].Outputs[1]["data"], &data); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(data["application/vnd.vegalite.v5+json"]), []byte("{")) {
		t.Errorf("the chart must be a JSON object in the ipynb, got %s", data["application/vnd.vegalite.v5+json"])
	}
	if !bytes.HasPrefix(bytes.TrimSpace(data["image/svg+xml"]), []byte("[")) || !bytes.HasPrefix(bytes.TrimSpace(data["image/png"]), []byte(`"`)) {
		t.Errorf("svg must be lines, png one string: %s / %s", data["image/svg+xml"], data["image/png"])
	}
	if !bytes.Contains(doc.Cells[1].Outputs[0]["traceback"], []byte(`"       ^"`)) {
		t.Errorf("error traceback = %s", doc.Cells[1].Outputs[0]["traceback"])
	}
	back, err := notebook.ImportIpynb(first)
	if err != nil {
		t.Fatal(err)
	}
	second, err := back.Ipynb()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("ipynb → import → ipynb changed the outputs:\n%s\n---\n%s", first, second)
	}

	// Through the Markdown format too: the charts and JSON come back.
	md := back.Markdown()
	parsed, err := notebook.Parse(md)
	if err != nil {
		t.Fatal(err)
	}
	third, err := parsed.Ipynb()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, third) {
		t.Errorf("ipynb → md → ipynb changed the outputs:\n%s\n---\n%s\nmarkdown:\n%s", first, third, md)
	}

	// A progress display written by the kernel is not imported.
	withProgress := bytes.Replace(first, []byte(`"outputs": [`), []byte(`"outputs": [{"output_type": "display_data", "metadata": {},
	 "data": {"text/plain": "3 of 10", "application/vnd.cachebook.progress+json": {"done": 3, "total": 10}}},`), 1)
	p, err := notebook.ImportIpynb(withProgress)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Cells[0].Outputs); n != 2 {
		t.Errorf("imported %d outputs, want 2 (the progress display dropped)", n)
	}
}
