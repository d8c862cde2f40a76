package main

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"cachebook/kernel"
	"cachebook/notebook"
)

// fakeExperiment checks what the kernel receives for an experiment cell
// and produces each kind of output.
type fakeExperiment struct{ got *kernel.Cell }

func (fakeExperiment) Class(kernel.Cell) kernel.Class { return kernel.Heavy }

func (f fakeExperiment) Run(ctx context.Context, c kernel.Cell, env *kernel.Env) (*kernel.Outcome, error) {
	*f.got = c
	env.Progress(1, 2)
	env.Stream("stdout", "line 1\n")
	env.Stream("stdout", "line 2\n")
	id := env.DisplayID("counters")
	env.Display(id, map[string]any{kernel.MIMEText: "first"})
	env.Display(id, map[string]any{kernel.MIMEText: "last"})
	if c.Attrs["fail"] == "true" {
		return nil, &kernel.CellError{Ename: "MemoryLimit", Err: errors.New("over budget")}
	}
	return &kernel.Outcome{Data: map[string]any{kernel.MIMEText: "result\n", "text/html": "<b>result</b>"}}, nil
}

func TestKernelRunner(t *testing.T) {
	var got kernel.Cell
	reg := kernel.NewRegistry()
	reg.Register(kernel.KindExperiment, fakeExperiment{&got})
	x, err := kernel.NewExecutor(kernel.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	nb, err := notebook.Parse([]byte("```experiment zeroing {size=1MiB}\nextra\n```\n\n```experiment zeroing {fail}\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	ok, bad := nb.Cells[0], nb.Cells[1]
	if err := notebook.RunCell(context.Background(), KernelRunner{X: x}, ok); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "experiment" || got.Source != "zeroing\nextra" || got.Attrs["size"] != "1MiB" || got.ID != ok.ID {
		t.Errorf("kernel got %+v", got)
	}
	want := []notebook.Output{
		{Type: notebook.OutputStream, Name: "stdout", Text: "line 1\nline 2\n"},
		{Type: notebook.OutputDisplay, Text: "last"},
		{Type: notebook.OutputResult, Text: "result", HTML: "<b>result</b>"},
	}
	if !reflect.DeepEqual(ok.Outputs, want) {
		t.Errorf("outputs = %+v\nwant %+v", ok.Outputs, want)
	}

	err = notebook.RunCell(context.Background(), KernelRunner{X: x}, bad)
	if err == nil {
		t.Fatal("failing cell returned no error")
	}
	last := bad.Outputs[len(bad.Outputs)-1]
	if last.Type != notebook.OutputError || last.Name != "MemoryLimit" || last.Text != "over budget" {
		t.Errorf("error output = %+v", last)
	}
}
