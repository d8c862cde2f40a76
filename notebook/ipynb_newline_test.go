package notebook_test

import (
	"encoding/json"
	"testing"

	"cachebook/notebook"
)

// TestImportKeepsTrailingNewline: text outputs keep their final line end
// through import, the Markdown form and export again, as Jupyter wrote
// them (a stream's "hello\n" is not "hello").
func TestImportKeepsTrailingNewline(t *testing.T) {
	for _, tc := range []struct {
		name, output string
		text         string // the imported Output.Text
	}{
		{"stream", `{"output_type": "stream", "name": "stdout", "text": ["one\n", "two\n"]}`, "one\ntwo\n"},
		{"stream without", `{"output_type": "stream", "name": "stdout", "text": "three"}`, "three"},
		{"stream two ends", `{"output_type": "stream", "name": "stdout", "text": "four\n\n"}`, "four\n\n"},
		{"result", `{"output_type": "execute_result", "execution_count": 1, "metadata": {}, "data": {"text/plain": ["x\n"]}}`, "x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"language_info": {"name": "sql"}}, "cells": [
			  {"id": "a", "cell_type": "code", "metadata": {}, "execution_count": 1, "source": "SELECT 1", "outputs": [` + tc.output + `]}]}`
			nb, err := notebook.ImportIpynb([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if len(nb.Cells) != 1 || len(nb.Cells[0].Outputs) != 1 {
				t.Fatalf("imported %+v", nb.Cells)
			}
			if got := nb.Cells[0].Outputs[0].Text; got != tc.text {
				t.Errorf("imported text %q, want %q", got, tc.text)
			}
			again, err := notebook.Parse(nb.Markdown())
			if err != nil {
				t.Fatal(err)
			}
			if got := again.Cells[0].Outputs[0].Text; got != tc.text {
				t.Errorf("through Markdown: text %q, want %q", got, tc.text)
			}
			data, err := again.Ipynb()
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Cells []struct {
					Outputs []map[string]any `json:"outputs"`
				} `json:"cells"`
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			o := doc.Cells[len(doc.Cells)-1].Outputs[0]
			text := o["text"]
			if d, ok := o["data"].(map[string]any); ok {
				text = d["text/plain"]
			}
			joined := ""
			switch v := text.(type) {
			case string:
				joined = v
			case []any:
				for _, l := range v {
					joined += l.(string)
				}
			}
			if joined != tc.text {
				t.Errorf("exported again: %q, want %q", joined, tc.text)
			}
		})
	}
}
