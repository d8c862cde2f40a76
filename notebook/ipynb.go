package notebook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
)

// This file converts notebooks to and from Jupyter's nbformat 4.5 (.ipynb).
//
// Export: markdown cells become markdown cells; code cells become code cells
// of the cachebook kernel (package jupyter). A cell that is not plain SQL
// starts with its cell magic ("%%latency max=256M", "%%experiment
// false-sharing threads=2", "%%sql counters=on"; see magic.go), so the
// exported notebook runs unchanged in Jupyter. metadata.cachebook keeps
// {kind, language, name, attrs, meta}, and metadata.execution (Jupyter's
// per-cell timings) comes from Meta["execution"]. Outputs map to
// execute_result (result), display_data (display), stream (stream) and
// error (error); their data bundle holds text/plain, text/html when
// present, and every form in Output.Data (charts as
// application/vnd.vegalite.v5+json and image/svg+xml, cachebook's result,
// measurement and counters JSON), JSON types as JSON values.
//
// Import reverses this. A code cell's magic line, when it names a cell
// kind, decides the kind, name and attributes (it wins over
// metadata.cachebook, which may be stale after an edit in Jupyter); a cell
// without one takes metadata.cachebook's kind, or becomes a sql cell when
// the notebook's language is SQL (language_info.name or
// kernelspec.language "sql"), and otherwise a fenced code block inside a
// markdown cell (its outputs are dropped), as does a cell whose magic names
// no cachebook kind. Raw cells become fenced blocks with the info string
// "text" inside markdown cells. Attachments are dropped. Consecutive
// markdown cells stay separate cells in memory but merge into one once
// written as Markdown.

// multiline is an nbformat multi-line string: a string or an array of
// strings to be concatenated.
type multiline string

func (m *multiline) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*m = multiline(s)
		return nil
	}
	var parts []string
	if err := json.Unmarshal(b, &parts); err != nil {
		return errors.New("expected a string or an array of strings")
	}
	*m = multiline(strings.Join(parts, ""))
	return nil
}

// lines splits s the way Jupyter writes multi-line strings: every line
// keeps its "\n", the last one may lack it.
func lines(s string) []string {
	out := []string{}
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// trimBlankLines removes leading and trailing lines that hold only white
// space; the result has no final newline.
func trimBlankLines(s string) string {
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 || strings.TrimSpace(s[:i]) != "" {
			break
		}
		s = s[i+1:]
	}
	s = strings.TrimRight(s, " \t\r\n")
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s
}

// Ipynb returns the notebook as nbformat 4.5 JSON. It first gives cells
// without a valid ID one (see AssignIDs).
func (n *Notebook) Ipynb() ([]byte, error) {
	n.AssignIDs()
	meta := map[string]any{
		"kernelspec":    map[string]any{"name": "cachebook", "display_name": "cachebook", "language": "sql"},
		"language_info": map[string]any{"name": "sql", "file_extension": ".sql", "mimetype": "application/sql"},
	}
	if len(n.Meta) > 0 {
		meta["cachebook"] = n.Meta
	}
	if t := n.Title(); t != "" {
		meta["title"] = t
	}
	cells := []any{}
	count := 0
	for _, c := range n.Cells {
		if c.Kind == KindMarkdown {
			src := trimBlankLines(c.Source)
			if src == "" {
				continue
			}
			cells = append(cells, map[string]any{
				"id": c.ID, "cell_type": "markdown", "metadata": map[string]any{}, "source": lines(src),
			})
			continue
		}
		cb := map[string]any{"kind": string(c.Kind), "language": string(c.Kind)}
		if c.Name != "" {
			cb["name"] = c.Name
		}
		if len(c.Attrs) > 0 {
			cb["attrs"] = c.Attrs
		}
		rest := maps.Clone(c.Meta)
		delete(rest, "id")
		delete(rest, "execution")
		if len(rest) > 0 {
			cb["meta"] = rest
		}
		cm := map[string]any{"cachebook": cb}
		if ex := execution(c.Meta); len(ex) > 0 {
			cm["execution"] = ex
		}
		if c.HidesAnswer() {
			// Jupyter collapses these outputs until the learner opens
			// them: a reference run would answer the prediction first.
			cm["jupyter"] = map[string]any{"outputs_hidden": true}
			cm["collapsed"] = true
		}
		var execCount any // null until run
		if len(c.Outputs) > 0 || cm["execution"] != nil {
			count++
			execCount = count
		}
		outs := []any{}
		for _, o := range c.Outputs {
			outs = append(outs, ipynbOutput(o, execCount))
		}
		cells = append(cells, map[string]any{
			"id": c.ID, "cell_type": "code", "metadata": cm, "source": lines(c.JupyterSource()),
			"execution_count": execCount, "outputs": outs,
		})
	}
	doc := map[string]any{"nbformat": 4, "nbformat_minor": 5, "metadata": meta, "cells": cells}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return nil, fmt.Errorf("notebook: encode ipynb: %w", err)
	}
	return append(b, '\n'), nil
}

// execution returns the string members of meta["execution"].
func execution(meta map[string]any) map[string]any {
	ex, _ := meta["execution"].(map[string]any)
	out := map[string]any{}
	for k, v := range ex {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func ipynbOutput(o Output, execCount any) map[string]any {
	data := map[string]any{"text/plain": lines(o.Text)}
	if o.HTML != "" {
		data["text/html"] = lines(o.HTML)
	}
	for mime, v := range o.Data {
		if mime == "traceback" || mime == "text/plain" || mime == "text/html" {
			continue
		}
		if s, ok := v.(string); ok && textMIME(mime) {
			data[mime] = lines(s)
		} else {
			data[mime] = v
		}
	}
	switch o.Type {
	case OutputError:
		name := o.Name
		if name == "" {
			name = "Error"
		}
		tb := []string{}
		if t, ok := o.Data["traceback"].([]any); ok {
			for _, l := range t {
				tb = append(tb, fmt.Sprint(l))
			}
		} else {
			tb = strings.Split(o.Text, "\n")
		}
		return map[string]any{"output_type": "error", "ename": name, "evalue": o.Text, "traceback": tb}
	case OutputStream:
		name := o.Name
		if name == "" {
			name = "stdout"
		}
		return map[string]any{"output_type": "stream", "name": name, "text": lines(o.Text)}
	case OutputDisplay:
		return map[string]any{"output_type": "display_data", "data": data, "metadata": map[string]any{}}
	default:
		return map[string]any{"output_type": "execute_result", "execution_count": execCount,
			"data": data, "metadata": map[string]any{}}
	}
}

// textMIME reports whether values of mime are text that nbformat may split
// into lines (text/*, image/svg+xml); others, such as base64 image/png, are
// kept as one string.
func textMIME(mime string) bool {
	return strings.HasPrefix(mime, "text/") || mime == "image/svg+xml"
}

type ipynbDoc struct {
	NBFormat      int            `json:"nbformat"`
	NBFormatMinor int            `json:"nbformat_minor"`
	Metadata      map[string]any `json:"metadata"`
	Cells         []ipynbCell    `json:"cells"`
}

type ipynbCell struct {
	ID       string         `json:"id"`
	CellType string         `json:"cell_type"`
	Metadata map[string]any `json:"metadata"`
	Source   multiline      `json:"source"`
	Outputs  []ipynbOut     `json:"outputs"`
}

type ipynbOut struct {
	OutputType string                     `json:"output_type"`
	Name       string                     `json:"name"`
	Text       multiline                  `json:"text"`
	RawData    map[string]json.RawMessage `json:"data"`
	EName      string                     `json:"ename"`
	EValue     string                     `json:"evalue"`
	Traceback  []string                   `json:"traceback"`
}

// ImportIpynb converts an nbformat 4 notebook (any minor version) into a
// notebook; see the file comment for how cells map.
func ImportIpynb(data []byte) (*Notebook, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("notebook: ipynb of %d bytes is larger than the %d byte limit", len(data), MaxSize)
	}
	var doc ipynbDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("notebook: decode ipynb: %w", err)
	}
	if doc.NBFormat != 4 {
		return nil, fmt.Errorf("notebook: nbformat %d is not supported (want 4)", doc.NBFormat)
	}
	sqlLang := false
	if li, ok := doc.Metadata["language_info"].(map[string]any); ok {
		sqlLang = strings.EqualFold(fmt.Sprint(li["name"]), "sql")
	}
	if ks, ok := doc.Metadata["kernelspec"].(map[string]any); ok {
		sqlLang = sqlLang || strings.EqualFold(fmt.Sprint(ks["language"]), "sql")
	}
	lang := "text"
	if li, ok := doc.Metadata["language_info"].(map[string]any); ok {
		if s, ok := li["name"].(string); ok && s != "" && !strings.ContainsAny(s, " \t`{") {
			lang = s
		}
	}
	nb := &Notebook{metaAt: -1}
	if m, ok := doc.Metadata["cachebook"].(map[string]any); ok {
		nb.Meta = m
	}
	for i, ic := range doc.Cells {
		src := string(ic.Source)
		c := &Cell{}
		if ValidID(ic.ID) {
			c.ID = ic.ID
		}
		switch ic.CellType {
		case "markdown":
			c.Kind, c.Source = KindMarkdown, trimBlankLines(src)+"\n"
		case "raw":
			c.Kind, c.Source = KindMarkdown, fenced("text", src)
		case "code":
			cb, _ := ic.Metadata["cachebook"].(map[string]any)
			kind, _ := cb["kind"].(string)
			mkind, mname, mattrs, body, magic := ParseMagic(src)
			if m, ok := cb["meta"].(map[string]any); ok && (magic && mkind.IsCode() || !magic && CellKind(kind).IsCode()) {
				c.Meta = maps.Clone(m)
			}
			switch {
			case magic && mkind.IsCode():
				c.Kind, c.Name, c.Attrs, src = mkind, mname, mattrs, body
			case magic:
				c.Kind, c.Source = KindMarkdown, fenced("text", src)
				nb.Cells = append(nb.Cells, c)
				continue
			case CellKind(kind).IsCode():
				c.Kind = CellKind(kind)
				c.Name, _ = cb["name"].(string)
				if a, ok := cb["attrs"].(map[string]any); ok {
					c.Attrs = map[string]string{}
					for k, v := range a {
						c.Attrs[k] = fmt.Sprint(v)
					}
				}
			case sqlLang:
				c.Kind = KindSQL
			default:
				c.Kind, c.Source = KindMarkdown, fenced(lang, src)
				nb.Cells = append(nb.Cells, c)
				continue
			}
			c.Source = strings.TrimSuffix(src, "\n")
			if ex, ok := ic.Metadata["execution"].(map[string]any); ok && len(ex) > 0 {
				if c.Meta == nil {
					c.Meta = map[string]any{}
				}
				c.Meta["execution"] = ex
			}
			if c.ID != "" && c.ID != c.derivedID() {
				if c.Meta == nil {
					c.Meta = map[string]any{}
				}
				c.Meta["id"] = c.ID
			}
			for _, o := range ic.Outputs {
				if out, ok := importOutput(o); ok {
					c.Outputs = append(c.Outputs, out)
				}
			}
		default:
			return nil, fmt.Errorf("notebook: ipynb cell %d: unknown cell_type %q", i, ic.CellType)
		}
		nb.Cells = append(nb.Cells, c)
	}
	nb.AssignIDs()
	return nb, nil
}

// fenced wraps text in a fenced code block with the given info string.
func fenced(info, text string) string {
	var b bytes.Buffer
	writeFence(&b, info, strings.TrimSuffix(text, "\n"))
	return b.String()
}

func importOutput(o ipynbOut) (Output, bool) {
	var out Output
	switch o.OutputType {
	case "execute_result":
		out.Type = OutputResult
	case "display_data":
		out.Type = OutputDisplay
	case "stream":
		return Output{Type: OutputStream, Name: o.Name, Text: string(o.Text)}, true
	case "error":
		out = Output{Type: OutputError, Name: o.EName, Text: o.EValue}
		if len(o.Traceback) > 0 {
			tb := make([]any, len(o.Traceback))
			for i, l := range o.Traceback {
				tb[i] = l
			}
			out.Data = map[string]any{"traceback": tb}
		}
		return out, true
	default:
		return Output{}, false
	}
	for mime, raw := range o.RawData {
		switch {
		case mime == "text/plain" || mime == "text/html":
			var m multiline
			if json.Unmarshal(raw, &m) != nil {
				continue
			}
			if mime == "text/plain" {
				out.Text = string(m)
			} else {
				out.HTML = string(m)
			}
		case textMIME(mime):
			var m multiline
			if json.Unmarshal(raw, &m) == nil {
				out.setData(mime, string(m))
			}
		default:
			var v any
			if json.Unmarshal(raw, &v) == nil {
				out.setData(mime, v)
			}
		}
	}
	if _, ok := out.Data[progressMIME]; ok && out.Type == OutputDisplay {
		return Output{}, false // a progress bar is not worth keeping
	}
	return out, true
}

// progressMIME marks the kernel's progress displays.
const progressMIME = "application/vnd.cachebook.progress+json"

func (o *Output) setData(mime string, v any) {
	if o.Data == nil {
		o.Data = map[string]any{}
	}
	o.Data[mime] = v
}
