package main

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"cachebook/notebook"
)

// A page with no server behind it (cachebook site) opens and downloads
// notebooks through the kernel's WebAssembly build, so that a .md or
// .ipynb is read by the same parser as the server's and written by the
// same writer: cachebook.convert(op, name, text).

// maxNotebookBytes bounds a notebook opened in the page.
const maxNotebookBytes = 32 << 20

// doc is a notebook as the page holds it: web.Doc (docs/protocol.md §3.9),
// which this command cannot import (package web is the server).
type doc struct {
	Path     string         `json:"path,omitempty"`
	Title    string         `json:"title"`
	Metadata map[string]any `json:"metadata"`
	Cells    []docCell      `json:"cells"`
}

type docCell struct {
	ID       string            `json:"id,omitempty"`
	CellType string            `json:"cell_type"`
	Kind     string            `json:"kind,omitempty"`
	Source   string            `json:"source"`
	Attrs    map[string]string `json:"attrs,omitempty"`
	Meta     map[string]any    `json:"meta,omitempty"`
	HTML     *string           `json:"html,omitempty"`
	Outputs  []notebook.Output `json:"outputs,omitempty"`
}

// openNotebook parses a .md or .ipynb file named name into the page's
// form, prose rendered to HTML as the server renders it (the page
// sanitises it like any other HTML).
func openNotebook(name string, data []byte) (*doc, error) {
	if len(data) > maxNotebookBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d MiB a notebook may have", name, len(data), maxNotebookBytes>>20)
	}
	var nb *notebook.Notebook
	var err error
	switch strings.ToLower(path.Ext(name)) {
	case ".ipynb":
		nb, err = notebook.ImportIpynb(data)
	case ".md", ".markdown":
		nb, err = notebook.Parse(data)
	default:
		return nil, fmt.Errorf("%s: open a .md or .ipynb notebook", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d := &doc{Title: nb.Title(), Metadata: nb.Meta, Cells: make([]docCell, 0, len(nb.Cells))}
	if d.Metadata == nil {
		d.Metadata = map[string]any{}
	}
	for _, c := range nb.Cells {
		dc := docCell{ID: c.ID, Source: c.Source, Attrs: c.Attrs, Meta: c.Meta, Outputs: c.Outputs}
		if c.Kind == notebook.KindMarkdown {
			dc.CellType = "markdown"
			if h, err := notebook.RenderHTML(c.Source); err == nil {
				dc.HTML = &h
			}
		} else {
			dc.CellType, dc.Kind, dc.Source = "code", string(c.Kind), c.ExecSource()
		}
		d.Cells = append(d.Cells, dc)
	}
	return d, nil
}

// exportNotebook writes the page's notebook as format "md" or "ipynb".
func exportNotebook(d *doc, format string) ([]byte, error) {
	nb := &notebook.Notebook{Meta: map[string]any{}}
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
		var c *notebook.Cell
		switch dc.CellType {
		case "markdown":
			c = notebook.NewCell(notebook.KindMarkdown, dc.Source)
		case "code", "":
			kind := notebook.CellKind(dc.Kind)
			if kind == "" {
				kind = notebook.KindSQL
			}
			if !kind.IsCode() {
				return nil, fmt.Errorf("cell %d has unknown kind %q", i, dc.Kind)
			}
			c = notebook.NewCell(kind, dc.Source)
			if kind == notebook.KindExperiment {
				name, body, _ := strings.Cut(dc.Source, "\n")
				c.Name, c.Source = strings.TrimSpace(name), body
			}
		default:
			return nil, fmt.Errorf("cell %d has unknown cell_type %q", i, dc.CellType)
		}
		if dc.ID != "" && notebook.ValidID(dc.ID) {
			c.ID = dc.ID
		}
		for _, o := range dc.Outputs {
			for mime := range o.Data {
				if !notebook.SavableForm(mime) {
					delete(o.Data, mime)
				}
			}
		}
		c.Attrs, c.Meta, c.Outputs = dc.Attrs, dc.Meta, dc.Outputs
		nb.Cells = append(nb.Cells, c)
	}
	nb.AssignIDs()
	switch format {
	case "md":
		return nb.Markdown(), nil
	case "ipynb":
		return nb.Ipynb()
	}
	return nil, fmt.Errorf("export: format must be md or ipynb, got %q", format)
}

// convert is cachebook.convert: op "open" parses text (a file named
// name) and answers the notebook's JSON; op "md" or "ipynb" reads text as
// the page's notebook JSON and answers the file.
func convert(op, name, text string) (string, error) {
	if op == "open" {
		d, err := openNotebook(name, []byte(text))
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(d)
		return string(b), err
	}
	var d doc
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		return "", fmt.Errorf("export: notebook JSON: %w", err)
	}
	b, err := exportNotebook(&d, op)
	return string(b), err
}
