package notebook

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Doc is a notebook as the page holds it and the protocol carries it
// (docs/protocol.md §3.9): the server's store and the browser's kernel
// (a static site has no server) convert it the same way.
type Doc struct {
	Path     string         `json:"path,omitempty"`
	Title    string         `json:"title"`
	Metadata map[string]any `json:"metadata"`
	Cells    []DocCell      `json:"cells"`
}

// DocCell is one cell of a Doc.
type DocCell struct {
	ID       string `json:"id,omitempty"`
	CellType string `json:"cell_type"` // markdown or code
	// Kind is the code cell kind (sql, latency, bandwidth, sweep,
	// experiment).
	Kind string `json:"kind,omitempty"`
	// Source is the cell's text. For an experiment cell it starts with the
	// experiment's name on its own line (the code the kernel runs).
	Source string            `json:"source"`
	Attrs  map[string]string `json:"attrs,omitempty"`
	Meta   map[string]any    `json:"meta,omitempty"`
	// HTML is the rendered prose of a markdown cell, present even when
	// empty (a lone footnote definition renders to nothing), so that the
	// page shows this rendering rather than its own.
	HTML    *string  `json:"html,omitempty"`
	Outputs []Output `json:"outputs,omitempty"`
}

// ErrBadDoc is wrapped by the errors of Doc.Notebook: the document, not
// the machine, is at fault.
var ErrBadDoc = errors.New("bad notebook")

// maxDocOutputs bounds the outputs of one cell of a Doc.
const maxDocOutputs = 1000

// DocOf converts a parsed notebook at path p to a Doc, rendering prose to
// HTML.
func DocOf(p string, nb *Notebook) *Doc {
	d := &Doc{Path: p, Title: nb.Title(), Metadata: nb.Meta, Cells: make([]DocCell, 0, len(nb.Cells))}
	if d.Metadata == nil {
		d.Metadata = map[string]any{}
	}
	for _, c := range nb.Cells {
		dc := DocCell{ID: c.ID, Source: c.Source, Attrs: c.Attrs, Meta: c.Meta, Outputs: c.Outputs}
		if c.Kind == KindMarkdown {
			dc.CellType = "markdown"
			if h, err := RenderHTML(c.Source); err == nil {
				dc.HTML = &h
			}
		} else {
			dc.CellType, dc.Kind, dc.Source = "code", string(c.Kind), c.ExecSource()
		}
		d.Cells = append(d.Cells, dc)
	}
	return d
}

// Notebook converts d to a notebook for saving. It refuses, with an error
// wrapping ErrBadDoc, a cell of unknown type or kind, an experiment or
// attribute name that would not read back from an info string, more than
// 1000 outputs in a cell, an output of unknown type and an output form a
// saved notebook cannot keep.
func (d *Doc) Notebook() (*Notebook, error) {
	nb := &Notebook{Meta: map[string]any{}}
	for k, v := range d.Metadata {
		nb.Meta[k] = v
	}
	if d.Title != "" {
		nb.Meta["title"] = d.Title
	}
	if len(nb.Meta) == 0 {
		nb.Meta = nil
	}
	for i, dc := range d.Cells {
		c, err := dc.cell(i)
		if err != nil {
			return nil, err
		}
		nb.Cells = append(nb.Cells, c)
	}
	nb.AssignIDs()
	return nb, nil
}

// cell converts cell i of a Doc.
func (dc *DocCell) cell(i int) (*Cell, error) {
	var c *Cell
	switch dc.CellType {
	case "markdown":
		c = NewCell(KindMarkdown, dc.Source)
	case "code", "":
		kind := CellKind(dc.Kind)
		if kind == "" {
			kind = KindSQL
		}
		if !kind.IsCode() {
			return nil, fmt.Errorf("%w: cell %d has unknown kind %q", ErrBadDoc, i, dc.Kind)
		}
		c = NewCell(kind, dc.Source)
		if kind == KindExperiment {
			name, body, _ := strings.Cut(dc.Source, "\n")
			c.Name, c.Source = strings.TrimSpace(name), body
			if c.Name != "" && !wordRE.MatchString(c.Name) {
				return nil, fmt.Errorf("%w: cell %d: experiment name %q is not a word", ErrBadDoc, i, c.Name)
			}
		}
		for k := range dc.Attrs {
			if !wordRE.MatchString(k) {
				return nil, fmt.Errorf("%w: cell %d: attribute name %q is not a word", ErrBadDoc, i, k)
			}
		}
	default:
		return nil, fmt.Errorf("%w: cell %d has unknown cell_type %q", ErrBadDoc, i, dc.CellType)
	}
	if dc.ID != "" && ValidID(dc.ID) {
		c.ID = dc.ID
	}
	if len(dc.Outputs) > maxDocOutputs {
		return nil, fmt.Errorf("%w: cell %d has %d outputs, more than %d", ErrBadDoc, i, len(dc.Outputs), maxDocOutputs)
	}
	for j, o := range dc.Outputs {
		switch o.Type {
		case OutputResult, OutputDisplay, OutputStream, OutputError:
		default:
			return nil, fmt.Errorf("%w: cell %d output %d has unknown type %q", ErrBadDoc, i, j, o.Type)
		}
		for mime := range o.Data {
			if !SavableForm(mime) {
				return nil, fmt.Errorf("%w: cell %d output %d: a notebook cannot keep a %q form", ErrBadDoc, i, j, mime)
			}
		}
	}
	c.Attrs, c.Meta, c.Outputs = dc.Attrs, dc.Meta, dc.Outputs
	return c, nil
}

// wordRE is what experiment and attribute names may be, so that they
// read back from an info string as they were written.
var wordRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
