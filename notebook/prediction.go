package notebook

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"cachebook/notebook/predict"
)

// This file reads and writes a code cell's prediction (package
// notebook/predict): the "predict" and "guess" members of its metadata.

// Prediction returns the cell's prediction spec and the learner's guess,
// both nil when the cell has none. A spec or guess that does not decode or
// validate is an error naming the cell.
func (c *Cell) Prediction() (*predict.Spec, *predict.Guess, error) {
	raw, ok := c.Meta["predict"]
	if !ok {
		return nil, nil, nil
	}
	if !c.Kind.IsCode() {
		return nil, nil, fmt.Errorf("cell %s: a %s cell cannot have a prediction", c.ID, c.Kind)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("cell %s: predict: %w", c.ID, err)
	}
	s, err := predict.Decode(b)
	if err != nil {
		return nil, nil, fmt.Errorf("cell %s: %w", c.ID, err)
	}
	m, _ := predict.Parse(s.Measure) // Decode validated it
	switch {
	case c.Kind == KindSQL && m.UsesData():
		return nil, nil, fmt.Errorf("cell %s: measure %q reads measurement members; an sql cell's measure uses elapsed(N), rows(N) or value(N, column)", c.ID, s.Measure)
	case c.Kind != KindSQL && m.UsesSQL():
		return nil, nil, fmt.Errorf("cell %s: measure %q uses elapsed, rows or value, which read SQL results; a %s cell's measure reads its measurement's members", c.ID, s.Measure, c.Kind)
	}
	var g *predict.Guess
	if rg, ok := c.Meta["guess"]; ok && rg != nil {
		b, err := json.Marshal(rg)
		if err != nil {
			return nil, nil, fmt.Errorf("cell %s: guess: %w", c.ID, err)
		}
		if g, err = predict.DecodeGuess(b); err != nil {
			return nil, nil, fmt.Errorf("cell %s: %w", c.ID, err)
		}
		if err := s.CheckGuess(g); err != nil {
			return nil, nil, fmt.Errorf("cell %s: %w", c.ID, err)
		}
	}
	return s, g, nil
}

// SetGuess records the learner's guess in the cell's metadata (nil removes
// it); the notebook keeps it when written.
func (c *Cell) SetGuess(g *predict.Guess) {
	if g == nil {
		delete(c.Meta, "guess")
		return
	}
	if c.Meta == nil {
		c.Meta = map[string]any{}
	}
	m := map[string]any{}
	if g.Value != nil {
		m["value"] = *g.Value
	}
	if g.Choice != "" {
		m["choice"] = g.Choice
	}
	if g.At != "" {
		m["at"] = g.At
	}
	c.Meta["guess"] = m
}

// CheckPredictions validates every cell's prediction and returns the
// problems joined (nil: none).
func (n *Notebook) CheckPredictions() error {
	var errs []error
	for _, c := range n.Cells {
		if _, _, err := c.Prediction(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ReferencePrefix starts the label that heads a lesson's reference
// outputs (package lessons writes it): the outputs below it come from a
// reference run, not from the learner's machine.
const ReferencePrefix = "reference run on "

// IsReference reports whether the cell's outputs are a reference run.
func (c *Cell) IsReference() bool {
	return len(c.Outputs) > 0 && c.Outputs[0].Type == OutputStream && strings.HasPrefix(c.Outputs[0].Text, ReferencePrefix)
}

// HidesAnswer reports whether the cell's outputs would answer its
// prediction before the learner has guessed: a reference run under a
// prediction without a guess. Front ends keep such outputs hidden (or, in
// an .ipynb, collapsed) until the learner commits a guess or skips it.
func (c *Cell) HidesAnswer() bool {
	if _, ok := c.Meta["predict"]; !ok || !c.IsReference() {
		return false
	}
	g, ok := c.Meta["guess"]
	return !ok || g == nil
}
