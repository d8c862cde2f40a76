package notebook_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"cachebook/lessons"
	"cachebook/notebook"
)

func nbformatSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("testdata/nbformat.v4.5.schema.json")
	if err != nil {
		t.Fatalf("compile nbformat schema: %v", err)
	}
	return sch
}

func validate(t *testing.T, sch *jsonschema.Schema, data []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("exported ipynb is not JSON: %v", err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("exported ipynb fails the nbformat 4.5 schema: %v\n%s", err, data)
	}
}

const withOutputs = "<!-- cachebook: {\"notebook\": {\"title\": \"Outputs\"}} -->\n" +
	"# Outputs\n\nProse.\n\n" +
	"<!-- cachebook: {\"id\": \"q\", \"execution\": {\"iopub.execute_input\": \"2026-11-29T20:00:00Z\", \"shell.execute_reply\": \"2026-11-29T20:00:01Z\"}, \"note\": 1} -->\n" +
	"```sql {group_by=radix}\nSELECT 1\n```\n\n" +
	"```output\none\n```\n" +
	"```output {mime=text/html}\n<b>one</b>\n```\n" +
	"```output {type=display}\ncounters: unavailable\n```\n" +
	"```output {type=stream name=stderr}\nwarning\n```\n" +
	"```output {type=error name=ParseError}\nline 1: bad\nline 2\n```\n\n" +
	"```experiment zeroing {threads=2}\n```\n\n" +
	"```latency\n```\n\nEnd.\n"

func TestIpynbValidatesAgainstSchema(t *testing.T) {
	sch := nbformatSchema(t)
	srcs := map[string][]byte{"outputs": []byte(withOutputs), "empty": nil}
	list, err := lessons.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		src, err := lessons.Source(l.Name)
		if err != nil {
			t.Fatal(err)
		}
		srcs[l.Name] = src
	}
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			nb, err := notebook.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			data, err := nb.Ipynb()
			if err != nil {
				t.Fatal(err)
			}
			validate(t, sch, data)
		})
	}
}

// TestSchemaRejects makes sure the validation can fail.
func TestSchemaRejects(t *testing.T) {
	sch := nbformatSchema(t)
	bad := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "metadata": {}, "source": "x", "outputs": []}]}`
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if sch.Validate(inst) == nil {
		t.Fatal("a code cell without id and execution_count passed the schema")
	}
}

func TestIpynbExportShape(t *testing.T) {
	nb, err := notebook.Parse([]byte(withOutputs))
	if err != nil {
		t.Fatal(err)
	}
	data, err := nb.Ipynb()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Metadata map[string]any `json:"metadata"`
		Cells    []struct {
			ID             string         `json:"id"`
			CellType       string         `json:"cell_type"`
			Metadata       map[string]any `json:"metadata"`
			ExecutionCount *int           `json:"execution_count"`
			Outputs        []map[string]any
		} `json:"cells"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Metadata["title"] != "Outputs" {
		t.Errorf("title = %v", doc.Metadata["title"])
	}
	q := doc.Cells[1]
	if q.ID != "q" || q.CellType != "code" || q.ExecutionCount == nil || *q.ExecutionCount != 1 {
		t.Fatalf("sql cell = %+v", q)
	}
	cb := q.Metadata["cachebook"].(map[string]any)
	if cb["kind"] != "sql" || cb["language"] != "sql" {
		t.Errorf("cachebook metadata = %v", cb)
	}
	ex := q.Metadata["execution"].(map[string]any)
	if ex["shell.execute_reply"] != "2026-11-29T20:00:01Z" {
		t.Errorf("execution = %v", ex)
	}
	var types []string
	for _, o := range q.Outputs {
		types = append(types, o["output_type"].(string))
	}
	if want := []string{"execute_result", "display_data", "stream", "error"}; !reflect.DeepEqual(types, want) {
		t.Errorf("output types = %v, want %v", types, want)
	}
	if html := q.Outputs[0]["data"].(map[string]any)["text/html"]; html == nil {
		t.Error("execute_result lacks text/html")
	}
}

// TestImportExportRoundTrip exports a notebook, imports it, writes it as
// Markdown, parses that, and checks that the code cells, their outputs and
// the prose survived.
func TestImportExportRoundTrip(t *testing.T) {
	nb, err := notebook.Parse([]byte(withOutputs))
	if err != nil {
		t.Fatal(err)
	}
	first, err := nb.Ipynb()
	if err != nil {
		t.Fatal(err)
	}
	imp, err := notebook.ImportIpynb(first)
	if err != nil {
		t.Fatal(err)
	}
	md := imp.Markdown()
	back, err := notebook.Parse(md)
	if err != nil {
		t.Fatal(err)
	}
	second, err := back.Ipynb()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("ipynb → md → ipynb changed the notebook:\nfirst:\n%s\nsecond:\n%s\nmarkdown:\n%s", first, second, md)
	}
	// And again from Markdown: a second import gives the same Markdown.
	imp2, err := notebook.ImportIpynb(second)
	if err != nil {
		t.Fatal(err)
	}
	if md2 := imp2.Markdown(); !bytes.Equal(md, md2) {
		t.Errorf("Markdown differs between imports:\n%s\n---\n%s", md, md2)
	}
	sch := nbformatSchema(t)
	validate(t, sch, second)
}

func TestImportForeign(t *testing.T) {
	py := `{"nbformat": 4, "nbformat_minor": 4, "metadata": {"language_info": {"name": "python"}},
	 "cells": [
	  {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "text"]},
	  {"cell_type": "code", "metadata": {}, "execution_count": 3, "source": "print(1)\n",
	   "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}]},
	  {"cell_type": "raw", "metadata": {}, "source": "raw text"}
	 ]}`
	nb, err := notebook.ImportIpynb([]byte(py))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range nb.Cells {
		if c.Kind != notebook.KindMarkdown {
			t.Errorf("python notebook produced a %s cell", c.Kind)
		}
	}
	md := string(nb.Markdown())
	for _, want := range []string{"# Title\ntext\n", "```python\nprint(1)\n```\n", "```text\nraw text\n```\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}

	sqlNB := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "x", "display_name": "x", "language": "sql"}},
	 "cells": [{"id": "abc", "cell_type": "code", "metadata": {}, "execution_count": null, "source": ["SELECT 1\n", "FROM t"], "outputs": []}]}`
	nb, err = notebook.ImportIpynb([]byte(sqlNB))
	if err != nil {
		t.Fatal(err)
	}
	if len(nb.Cells) != 1 || nb.Cells[0].Kind != notebook.KindSQL || nb.Cells[0].Source != "SELECT 1\nFROM t" || nb.Cells[0].ID != "abc" {
		t.Errorf("sql import = %+v", nb.Cells[0])
	}

	for _, bad := range []string{`{`, `{"nbformat": 3, "cells": []}`, `{"nbformat": 4, "cells": [{"cell_type": "weird"}]}`,
		`{"nbformat": 4, "cells": [{"cell_type": "code", "source": 5}]}`} {
		if _, err := notebook.ImportIpynb([]byte(bad)); err == nil {
			t.Errorf("ImportIpynb(%s) succeeded", bad)
		}
	}
}

func FuzzImportIpynb(f *testing.F) {
	nb, _ := notebook.Parse([]byte(withOutputs))
	data, _ := nb.Ipynb()
	f.Add(data)
	f.Add([]byte(`{"nbformat":4,"cells":[{"cell_type":"code","source":"x","metadata":{"cachebook":{"kind":"experiment","name":"a b"}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		nb, err := notebook.ImportIpynb(data)
		if err != nil {
			return
		}
		md := nb.Markdown()
		back, err := notebook.Parse(md)
		if err != nil {
			return
		}
		if !bytes.Equal(back.Markdown(), md) {
			t.Fatalf("imported markdown does not round-trip")
		}
		if _, err := nb.Ipynb(); err != nil {
			t.Fatalf("export of an imported notebook failed: %v", err)
		}
	})
}

// TestIpynbHidesReferenceAnswers: a lesson exported with its reference
// outputs collapses them under every prediction the learner has not
// answered (Jupyter's outputs_hidden), and leaves the others open.
func TestIpynbHidesReferenceAnswers(t *testing.T) {
	nb, err := lessons.Opened("07-access-patterns")
	if err != nil {
		t.Fatal(err)
	}
	var withGuess string
	for _, c := range nb.Cells {
		if _, ok := c.Meta["predict"]; ok && c.IsReference() && withGuess == "" {
			withGuess = c.ID
			c.Meta["guess"] = map[string]any{"value": 100}
		}
	}
	if withGuess == "" {
		t.Fatal("lesson 7 has no prediction cell with a reference output")
	}
	data, err := nb.Ipynb()
	if err != nil {
		t.Fatal(err)
	}
	validate(t, nbformatSchema(t), data)
	var doc struct {
		Cells []struct {
			ID       string         `json:"id"`
			Metadata map[string]any `json:"metadata"`
			Outputs  []any          `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	hidden, open := 0, 0
	for i, c := range doc.Cells {
		jm, _ := c.Metadata["jupyter"].(map[string]any)
		isHidden := jm["outputs_hidden"] == true && c.Metadata["collapsed"] == true
		want := nb.Cells[i].HidesAnswer()
		if c.ID == withGuess && want {
			t.Errorf("cell %s has a guess but HidesAnswer", c.ID)
		}
		switch {
		case isHidden != want:
			t.Errorf("cell %s: outputs hidden %v, want %v", c.ID, isHidden, want)
		case isHidden:
			hidden++
		case len(c.Outputs) > 0:
			open++
		}
	}
	if hidden == 0 || open == 0 {
		t.Errorf("%d cells hidden and %d open: want both kinds in lesson 7", hidden, open)
	}
}
