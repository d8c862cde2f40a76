package notebook

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Runner executes one code cell and returns its outputs. A failed cell
// returns an error; RunAll records it as an error output. Implementations
// must honour ctx.
type Runner interface {
	RunCell(ctx context.Context, c *Cell) ([]Output, error)
}

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, c *Cell) ([]Output, error)

// RunCell calls f.
func (f RunnerFunc) RunCell(ctx context.Context, c *Cell) ([]Output, error) { return f(ctx, c) }

// CellError is the failure of one cell in RunAll.
type CellError struct {
	ID  string
	Err error
}

func (e *CellError) Error() string { return fmt.Sprintf("cell %s: %v", e.ID, e.Err) }

// Unwrap returns the cell's error.
func (e *CellError) Unwrap() error { return e.Err }

// RunAll runs every code cell in order, replacing its outputs and recording
// Jupyter-style timings in Meta["execution"] ("iopub.execute_input" when
// the cell starts, "shell.execute_reply" when it ends, RFC 3339 UTC).
// A failed cell gets an error output and the run goes on; the returned error
// joins one *CellError per failed cell. If ctx ends, RunAll stops and
// returns ctx's error joined with the failures so far. each, if not nil,
// is called after every code cell.
func (n *Notebook) RunAll(ctx context.Context, r Runner, each func(c *Cell)) error {
	var errs []error
	for _, c := range n.Cells {
		if !c.Kind.IsCode() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		if err := RunCell(ctx, r, c); err != nil {
			errs = append(errs, &CellError{ID: c.ID, Err: err})
		}
		if each != nil {
			each(c)
		}
	}
	return errors.Join(errs...)
}

// RunCell runs one code cell with r, replacing its outputs (an error becomes
// an error output, named by the error's ErrorName method if it has one, else
// "Error") and recording its timings; it returns the cell's error.
func RunCell(ctx context.Context, r Runner, c *Cell) error {
	if !c.Kind.IsCode() {
		return fmt.Errorf("cell %s is a %s cell, not a code cell", c.ID, c.Kind)
	}
	start := time.Now()
	outs, err := r.RunCell(ctx, c)
	end := time.Now()
	if err != nil {
		name := "Error"
		var named interface{ ErrorName() string }
		if errors.As(err, &named) && named.ErrorName() != "" {
			name = named.ErrorName()
		}
		outs = append(outs, Output{Type: OutputError, Name: name, Text: err.Error()})
	}
	c.Outputs = outs
	if c.Meta == nil {
		c.Meta = map[string]any{}
	}
	c.Meta["execution"] = map[string]any{
		"iopub.execute_input": start.UTC().Format(time.RFC3339Nano),
		"shell.execute_reply": end.UTC().Format(time.RFC3339Nano),
	}
	return err
}
