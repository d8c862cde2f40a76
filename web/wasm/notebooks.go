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

// openNotebook parses a .md or .ipynb file named name into the page's
// form, prose rendered to HTML as the server renders it (the page
// sanitises it like any other HTML).
func openNotebook(name string, data []byte) (*notebook.Doc, error) {
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
	d := notebook.DocOf("", nb)
	return d, nil
}

// exportNotebook writes the page's notebook as format "md" or "ipynb".
// Forms a saved notebook cannot keep (live progress and the like) are
// left out rather than refused: a download takes what can be written.
func exportNotebook(d *notebook.Doc, format string) ([]byte, error) {
	for _, dc := range d.Cells {
		for _, o := range dc.Outputs {
			for mime := range o.Data {
				if !notebook.SavableForm(mime) {
					delete(o.Data, mime)
				}
			}
		}
	}
	nb, err := d.Notebook()
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
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
	var d notebook.Doc
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		return "", fmt.Errorf("export: notebook JSON: %w", err)
	}
	b, err := exportNotebook(&d, op)
	return string(b), err
}
