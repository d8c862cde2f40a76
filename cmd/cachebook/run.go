package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"cachebook/engine"
	"cachebook/jupyter"
	"cachebook/kernel"
	"cachebook/lessons"
	"cachebook/notebook"
)

const runUsage = `usage: cachebook run NOTEBOOK [--data DIR] [--out FILE.md|FILE.ipynb] [--timeout D] [--reference FILE.json]

Runs every code cell of NOTEBOOK (a lesson name or a .md path) in order on
one kernel session, as the server would, and prints each cell's outputs.
--out saves the notebook with its outputs (as .ipynb, with the charts as
Vega-Lite and SVG, when FILE ends in .ipynb). The command fails if any cell
failed; the other cells still run. --reference saves the outputs as the
lesson's reference outputs (lessons/reference/NAME.json, labelled with
this machine; make reference writes every lesson's).`

// cmdRun runs every cell of a notebook and prints the outputs.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, runUsage); fs.PrintDefaults() }
	data := fs.String("data", "", "data directory holding hits.parquet (default $CACHEBOOK_DATA, else data)")
	out := fs.String("out", "", "save the notebook with its outputs to this .md or .ipynb file")
	timeout := fs.Duration("timeout", 0, "time limit per cell (0: the kernel's default)")
	reference := fs.String("reference", "", "save the outputs as reference outputs to this .json file (lessons/reference/NAME.json)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("want one NOTEBOOK argument, got %d\n%s", len(pos), runUsage)
	}
	nb, err := loadNotebook(pos[0])
	if err != nil {
		return err
	}
	dir := dataDir(*data)
	// Experiments that read the table themselves (sum-rewrite) find it
	// through $CACHEBOOK_DATA, so point it at the same directory.
	if old, had := os.LookupEnv("CACHEBOOK_DATA"); !had || old != dir {
		if err := os.Setenv("CACHEBOOK_DATA", dir); err == nil {
			defer func() {
				if had {
					os.Setenv("CACHEBOOK_DATA", old)
				} else {
					os.Unsetenv("CACHEBOOK_DATA")
				}
			}()
		}
	}
	cfg := kernel.Config{DataPath: dir, Limits: kernel.Limits{CellTimeout: *timeout}}
	if db, err := openEngine(engine.Options{DataDir: dir}); err != nil {
		// Without data the measurement cells can still run; sql cells
		// then fail with this reason.
		fmt.Fprintf(stderr, "cachebook run: open data dir %s: %v; sql cells will fail\n", dir, err)
		cfg.EngineUnavailable = err
	} else {
		cfg.DB = db
	}
	x, err := kernel.NewExecutor(cfg)
	if err != nil {
		return err
	}
	total, n := 0, 0
	for _, c := range nb.Cells {
		if c.Kind.IsCode() {
			total++
		}
	}
	refs := referenceOutputs(pos[0], nb)
	runErr := nb.RunAll(ctx, KernelRunner{X: x}, func(c *notebook.Cell) {
		n++
		printCell(stdout, n, total, c, refs[c])
	})
	if *reference != "" {
		if err := writeReference(*reference, nb, dir); err != nil {
			return errors.Join(runErr, err)
		}
	}
	if *out != "" {
		doc := nb.Markdown()
		if strings.HasSuffix(*out, ".ipynb") {
			if doc, err = nb.Ipynb(); err != nil {
				return errors.Join(runErr, err)
			}
		}
		if err := writeOutput(*out, doc, stdout); err != nil {
			return errors.Join(runErr, err)
		}
	}
	if runErr != nil {
		failed := 0
		for _, c := range nb.Cells {
			for _, o := range c.Outputs {
				if o.Type == notebook.OutputError {
					failed++
					break
				}
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("stopped after %d of %d cells: %w", n, total, ctx.Err())
		}
		return fmt.Errorf("%d of %d cells failed", failed, total)
	}
	return nil
}

// printCell writes one executed cell: a header, the source, the outputs,
// and after them ref, the lesson's reference outputs for the cell (the
// first, its label, included), if any.
func printCell(w io.Writer, n, total int, c *notebook.Cell, ref []notebook.Output) {
	head := string(c.Kind)
	if c.Name != "" {
		head += " " + c.Name
	}
	took := ""
	if ex, ok := c.Meta["execution"].(map[string]any); ok {
		a, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(ex["iopub.execute_input"]))
		b, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(ex["shell.execute_reply"]))
		if !a.IsZero() && !b.IsZero() {
			took = ", " + b.Sub(a).Round(time.Millisecond).String()
		}
	}
	fmt.Fprintf(w, "── [%d/%d] %s (%s%s) ──\n", n, total, head, c.ID, took)
	if s := strings.TrimSpace(c.Source); s != "" {
		for _, line := range strings.Split(s, "\n") {
			fmt.Fprintf(w, "  │ %s\n", line)
		}
	}
	printOutputs(w, c.Outputs, "")
	if len(ref) > 0 {
		// The reference comes after the cell's own result, so that it
		// cannot answer a prediction before the learner's run has.
		fmt.Fprintln(w, "  ┄ for comparison, the lesson's reference run:")
		printOutputs(w, ref, "  ┆ ")
	}
	fmt.Fprintln(w)
}

// printOutputs writes outputs as text, each line after indent.
func printOutputs(w io.Writer, outs []notebook.Output, indent string) {
	for _, o := range outs {
		text := o.Text
		switch o.Type {
		case notebook.OutputError:
			text = o.Name + ": " + o.Text
		case notebook.OutputStream:
			text = "[" + o.Name + "] " + o.Text
		}
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			fmt.Fprintln(w, indent+line)
		}
	}
}

// referenceOutputs returns the reference outputs of the cells of nb, the
// lesson named by arg (none for a notebook file), labelled, before any of
// them runs: a cell's key is its source, which the run leaves alone.
func referenceOutputs(arg string, nb *notebook.Notebook) map[*notebook.Cell][]notebook.Output {
	if st, err := os.Stat(arg); err == nil && st.Mode().IsRegular() {
		return nil
	}
	ref, err := lessons.LoadReference(arg)
	if err != nil || ref == nil {
		return nil
	}
	label := notebook.Output{Type: notebook.OutputStream, Name: "stdout", Text: ref.Machine.Label()}
	out := map[*notebook.Cell][]notebook.Output{}
	for _, c := range nb.Cells {
		if outs := ref.Cells[lessons.CellKey(c)]; c.Kind.IsCode() && len(outs) > 0 {
			out[c] = append([]notebook.Output{label}, outs...)
		}
	}
	return out
}

// KernelRunner runs notebook cells on a kernel Executor (one engine
// session, so SET statements carry over from cell to cell) and turns the
// kernel's iopub messages into notebook outputs: stream text, the last
// value of each display (progress displays are dropped), the result's
// text/plain and text/html. A failed cell returns an error whose
// ErrorName is the kernel's error name.
type KernelRunner struct {
	X *kernel.Executor
}

// RunCell implements notebook.Runner.
func (r KernelRunner) RunCell(ctx context.Context, c *notebook.Cell) ([]notebook.Output, error) {
	var outs []notebook.Output
	display := map[string]int{} // display id → index in outs
	emit := func(m kernel.Message) {
		switch m.Header.MsgType {
		case kernel.MsgStream:
			var s kernel.Stream
			if decode(m, &s) != nil {
				return
			}
			if k := len(outs) - 1; k >= 0 && outs[k].Type == notebook.OutputStream && outs[k].Name == s.Name {
				outs[k].Text += s.Text
				return
			}
			outs = append(outs, notebook.Output{Type: notebook.OutputStream, Name: s.Name, Text: s.Text})
		case kernel.MsgDisplayData, kernel.MsgUpdateDisplayData:
			var d kernel.DisplayData
			if decode(m, &d) != nil {
				return
			}
			id := ""
			if d.Transient != nil {
				id = d.Transient.DisplayID
			}
			if strings.HasPrefix(id, "progress-") {
				return
			}
			o := richOutput(notebook.OutputDisplay, d.Data)
			if k, ok := display[id]; ok && id != "" {
				outs[k] = o
				return
			}
			if id != "" {
				display[id] = len(outs)
			}
			outs = append(outs, o)
		case kernel.MsgExecuteResult:
			var res kernel.ExecuteResult
			if decode(m, &res) != nil {
				return
			}
			o := richOutput(notebook.OutputResult, res.Data)
			o.Text = strings.TrimRight(o.Text, "\n")
			outs = append(outs, o)
		}
	}
	cell := kernel.Cell{Kind: string(c.Kind), Source: c.ExecSource(), Attrs: c.Attrs, ID: c.ID}
	if spec, guess, perr := c.Prediction(); perr != nil {
		outs = append(outs, notebook.Output{Type: notebook.OutputStream, Name: "stderr", Text: "prediction ignored: " + perr.Error() + "\n"})
	} else {
		cell.Predict, cell.Guess = spec, guess
	}
	_, err := r.X.Execute(ctx, cell, emit)
	if err != nil {
		var f *kernel.Failure
		if errors.As(err, &f) {
			return outs, &kernelError{name: f.Ename, value: f.Evalue}
		}
		return outs, err
	}
	return outs, nil
}

// richOutput is the output of a kernel MIME bundle: its text, the HTML a
// Jupyter front end shows (tables, counters), and the charts and
// cachebook's JSON as data, which .ipynb export keeps (package jupyter).
func richOutput(typ notebook.OutputType, data map[string]any) notebook.Output {
	b := jupyter.Bundle(data)
	o := notebook.Output{Type: typ, Text: mimeText(b, kernel.MIMEText), HTML: mimeText(b, "text/html")}
	for k, v := range b {
		if k == kernel.MIMEText || k == "text/html" {
			continue
		}
		if o.Data == nil {
			o.Data = map[string]any{}
		}
		o.Data[k] = v
	}
	return o
}

// decode reads a message's content into v, whether it holds the typed
// value (messages straight from the executor) or JSON.
func decode[T any](m kernel.Message, v *T) error {
	switch c := m.Content.(type) {
	case T:
		*v = c
		return nil
	case *T:
		if c == nil {
			return errors.New("nil content")
		}
		*v = *c
		return nil
	}
	return m.DecodeContent(v)
}

// mimeText returns a bundle's value for mime if it is a string.
func mimeText(data map[string]any, mime string) string {
	switch v := data[mime].(type) {
	case string:
		return v
	case []string:
		return strings.Join(v, "")
	}
	return ""
}

// kernelError is a failed cell as the kernel named it.
type kernelError struct{ name, value string }

func (e *kernelError) Error() string     { return e.value }
func (e *kernelError) ErrorName() string { return e.name }
