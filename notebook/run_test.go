package notebook

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type namedErr struct{}

func (namedErr) Error() string     { return "no such table" }
func (namedErr) ErrorName() string { return "CatalogError" }

func TestRunAll(t *testing.T) {
	nb, err := Parse([]byte("# t\n\n```sql\nSELECT 1\n```\n\n```sql\nBAD\n```\n\n```experiment zeroing {size=1M}\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	r := RunnerFunc(func(ctx context.Context, c *Cell) ([]Output, error) {
		seen = append(seen, string(c.Kind)+":"+c.ExecSource()+":"+c.Attrs["size"])
		if c.Source == "BAD" {
			return []Output{{Type: OutputStream, Name: "stderr", Text: "partial"}}, namedErr{}
		}
		return []Output{{Type: OutputResult, Text: "ok"}}, nil
	})
	var each int
	err = nb.RunAll(context.Background(), r, func(*Cell) { each++ })
	var code []*Cell
	for _, c := range nb.Cells {
		if c.Kind.IsCode() {
			code = append(code, c)
		}
	}
	var ce *CellError
	if !errors.As(err, &ce) || ce.ID != code[1].ID {
		t.Fatalf("err = %v, want a CellError for the second sql cell", err)
	}
	if want := "sql:SELECT 1:,sql:BAD:,experiment:zeroing:1M"; strings.Join(seen, ",") != want {
		t.Errorf("ran %v, want %s", seen, want)
	}
	if each != 3 {
		t.Errorf("each called %d times", each)
	}
	bad := code[1]
	if len(bad.Outputs) != 2 || bad.Outputs[1].Type != OutputError || bad.Outputs[1].Name != "CatalogError" || bad.Outputs[1].Text != "no such table" {
		t.Errorf("outputs = %+v", bad.Outputs)
	}
	ex, _ := code[0].Meta["execution"].(map[string]any)
	if ex["iopub.execute_input"] == nil || ex["shell.execute_reply"] == nil {
		t.Errorf("no timings: %v", code[0].Meta)
	}
	// The outputs are saved and read back.
	back, err := Parse(nb.Markdown())
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Cell(code[0].ID).Outputs; len(got) != 1 || got[0].Text != "ok" {
		t.Errorf("saved outputs = %+v", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := nb.RunAll(ctx, r, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
}
