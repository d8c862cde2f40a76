// Package notebook is cachebook's notebook model: a notebook is a Markdown
// file in the spirit of Livebook's .livemd, made of prose and fenced code
// blocks whose info string names a cell kind.
//
// # File format
//
// A code cell is a top-level fenced code block whose info string starts with
// a cell kind: sql, latency, bandwidth, sweep or experiment. An experiment
// cell names its experiment in the second word. Optional attributes follow,
// either wrapped in braces or as bare words:
//
//	```sql {group_by=radix threads=2}
//	SELECT UserID, count(*) FROM hits GROUP BY UserID
//	```
//
//	```experiment false-sharing threads=2
//	```
//
// An attribute is key=value (value may be a Go-quoted string, "a b") or a
// bare key, which means key=true. Attributes are separated by spaces or
// commas.
//
// Metadata lives in HTML comments whose text is "cachebook:" and a JSON
// object. A comment directly before a code cell (only blank lines between)
// is that cell's metadata; its "id" member, if a valid cell id, fixes the
// cell's ID. A comment whose object has the single member "notebook" holds
// the notebook's metadata (title, goal, ...):
//
//	<!-- cachebook: {"notebook": {"title": "The latency hierarchy"}} -->
//	<!-- cachebook: {"id": "latency-curve"} -->
//
// A code cell's metadata may hold a prediction and the learner's guess
// (package notebook/predict documents the spec and its measure grammar):
//
//	<!-- cachebook: {"id": "naive-vs-radix", "predict": {"question": "How many times as long as radix will naive take?",
//	  "unit": "×", "measure": "elapsed(2) / elapsed(3)", "article": {"value": 1.33, "source": "Pivot"},
//	  "check": "Expect 1.1–2× when the table is several times the L3."},
//	  "guess": {"value": 1.5, "at": "2026-12-02T01:00:00Z"}} -->
//
// Cell.Prediction decodes and validates both (the measure must suit the
// cell's kind: elapsed, rows and value for sql cells, measurement members
// for the others); Cell.SetGuess records a guess. They are ordinary
// metadata, so they survive writing and, under metadata.cachebook.meta, an
// .ipynb export and import.
//
// Saved outputs are fenced blocks with the info string "output" directly
// after their cell (blank lines allowed between). Their attributes are
// type (result, display, stream or error; default result), name (stream
// name or error name) and mime: text/plain (the default), text/html, a
// JSON type — application/json or any type ending in +json, such as the
// result tables (application/vnd.cachebook.result+json), the measurement
// a chart is drawn from (application/vnd.cachebook.measurement+json) or a
// Vega-Lite chart — other text, image/svg+xml, a base64 image/png, or
// "traceback" (an error's lines, as JSON).
// A block of another form than text/plain joins the output just before it
// when that has the same type and name and lacks that form:
//
//	```output
//	UserID  c
//	1       10
//	```
//
//	```output {mime=application/vnd.cachebook.result+json}
//	{"statements":[...]}
//	```
//
// Everything else — other fenced blocks such as ```go, headings, lists,
// comments — is prose and forms markdown cells. Two comments keep prose
// prose: <!-- cachebook: {"cell":"markdown"} --> starts a new markdown
// cell (so that two prose cells in a row stay two, and an empty one
// stays), and <!-- cachebook: {"prose":true} --> makes the block right
// after it prose even if it looks like a cell, an output or a metadata
// comment. Writing a notebook adds them where needed; Parse leaves the
// escapes out of a cell's Source. Prose written by the writer that ends
// inside a block that never closes (a fence, an HTML comment, <pre>) gets
// the closing line, so that it cannot swallow the cells after it.
//
// The file is split with goldmark's AST: the byte ranges of top-level block
// nodes decide where cells begin and end, and prose keeps its exact text.
// Parsing and then writing an unmodified notebook gives back the same bytes.
package notebook

import (
	"slices"
	"strings"

	"cachebook/notebook/kind"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// MaxSize is the largest notebook Parse accepts, in bytes.
const MaxSize = 16 << 20

// CellKind names what a cell is and which executor runs it.
type CellKind string

// The cell kinds.
const (
	KindMarkdown   CellKind = kind.Markdown   // prose, rendered to HTML
	KindSQL        CellKind = kind.SQL        // SQL statements run on the engine
	KindLatency    CellKind = kind.Latency    // the memory latency curve of this machine
	KindBandwidth  CellKind = kind.Bandwidth  // memory bandwidth, one core vs all
	KindSweep      CellKind = kind.Sweep      // GROUP BY cost as the number of groups grows
	KindExperiment CellKind = kind.Experiment // a named experiment (false-sharing, zeroing, ...)
	KindCachesim   CellKind = kind.Cachesim   // a named access pattern through the cache model
)

// codeKinds are the kinds that a fenced block's info string can name.
var codeKinds = []CellKind{KindSQL, KindLatency, KindBandwidth, KindSweep, KindExperiment, KindCachesim}

// IsCode reports whether k is a code (runnable) kind.
func (k CellKind) IsCode() bool { return slices.Contains(codeKinds, k) }

// Valid reports whether k is one of the known kinds.
func (k CellKind) Valid() bool { return k == KindMarkdown || k.IsCode() }

// OutputType is the kind of one saved output; the values follow Jupyter's
// output types.
type OutputType string

// The output types.
const (
	OutputResult  OutputType = "result"  // the cell's result (execute_result)
	OutputDisplay OutputType = "display" // a further display, e.g. counters (display_data)
	OutputStream  OutputType = "stream"  // text printed while running (stream)
	OutputError   OutputType = "error"   // the cell failed (error)
)

func (t OutputType) valid() bool {
	switch t {
	case OutputResult, OutputDisplay, OutputStream, OutputError:
		return true
	}
	return false
}

// Output is one saved output of a code cell.
type Output struct {
	Type OutputType `json:"type"`
	// Name is the stream name (stdout, stderr) of a stream output or the
	// error name of an error output.
	Name string `json:"name,omitempty"`
	// Text is the text/plain form (for an error: the message).
	Text string `json:"text,omitempty"`
	// HTML is an optional text/html form.
	HTML string `json:"html,omitempty"`
	// Data holds further forms by MIME type, as .ipynb keeps them (see
	// ipynb.go): a string for text and images (image/svg+xml,
	// base64 image/png), a JSON value for application/*json types (charts
	// as application/vnd.vegalite.v5+json, cachebook's own result,
	// measurement and counters JSON); for an error output, "traceback"
	// holds its lines. The Markdown format writes each as its own block.
	Data map[string]any `json:"data,omitempty"`
}

// isJSONMIME reports whether an output form of this MIME type is JSON:
// application/json, any type with the +json suffix, and the "traceback"
// of an error.
func isJSONMIME(mime string) bool {
	if mime == "application/json" || mime == tracebackKey {
		return true
	}
	typ, sub, ok := strings.Cut(mime, "/")
	return ok && typ != "" && strings.HasSuffix(sub, "+json") && len(sub) > len("+json") && plainMIME(mime)
}

// isStringMIME reports whether an output form of this MIME type is kept
// as a string: text (text/*, image/svg+xml) and base64 images.
func isStringMIME(mime string) bool {
	switch mime {
	case "text/plain", "text/html":
		return false // Output.Text and Output.HTML
	case "image/svg+xml", "image/png", "image/jpeg", "image/gif":
		return true
	}
	return strings.HasPrefix(mime, "text/") && len(mime) > len("text/") && plainMIME(mime)
}

// plainMIME reports whether mime can stand unquoted in an info string.
func plainMIME(mime string) bool {
	return !strings.ContainsAny(mime, " \t,{}\"`=\n\r")
}

// SavableForm reports whether the Markdown format keeps an Output.Data form
// of this MIME type (a JSON type, text other than text/plain and text/html,
// an SVG or base64 image, or an error's "traceback").
func SavableForm(mime string) bool { return isJSONMIME(mime) || isStringMIME(mime) }

// tracebackKey is the Data key of an error output's traceback lines.
const tracebackKey = "traceback"

// join adds o's single form to out when out has the same type and name and
// lacks that form (a Markdown file writes each form of an output as its own
// block), and reports whether it did.
func (out *Output) join(o Output) bool {
	if out.Type != o.Type || out.Name != o.Name || o.Text != "" {
		return false
	}
	switch {
	case o.HTML != "" && len(o.Data) == 0:
		if out.HTML != "" {
			return false
		}
		out.HTML = o.HTML
		return true
	case o.HTML == "" && len(o.Data) == 1:
		for k, v := range o.Data {
			if _, dup := out.Data[k]; dup {
				return false
			}
			if out.Data == nil {
				out.Data = map[string]any{}
			}
			out.Data[k] = v
		}
		return true
	}
	return false
}

// Cell is one cell of a notebook.
type Cell struct {
	// ID identifies the cell: the "id" of its metadata comment if present,
	// otherwise derived from its kind and content (see Notebook.AssignIDs).
	ID string `json:"id"`
	// Kind is the cell kind.
	Kind CellKind `json:"kind"`
	// Name is the experiment name of an experiment cell.
	Name string `json:"name,omitempty"`
	// Source is the cell's text: the code of a code cell (without the
	// fences and without the final newline), or the exact Markdown of a
	// markdown cell.
	Source string `json:"source"`
	// Attrs are the attributes of the info string.
	Attrs map[string]string `json:"attrs,omitempty"`
	// Meta is the JSON object of the cell's metadata comment. Runners put
	// Jupyter-style timings under "execution".
	Meta map[string]any `json:"meta,omitempty"`
	// Outputs are the saved outputs.
	Outputs []Output `json:"outputs,omitempty"`

	raw    string   // the cell's original bytes, "" for a cell not parsed
	parsed bool     // whether the cell came from Parse
	after  CellKind // for parsed prose: markdown, sql (any code) or "" (first) before it
	fp     string   // fingerprint of the parsed fields, to detect edits
}

// Notebook is a parsed notebook: its metadata and its cells in order.
type Notebook struct {
	// Meta is the notebook metadata (the "notebook" member of its
	// metadata comment), e.g. "title" and "goal".
	Meta  map[string]any `json:"meta,omitempty"`
	Cells []*Cell        `json:"cells"`

	metaRaw string // the original metadata comment, with its line end
	metaAt  int    // index of the cell the comment preceded
	metaFP  string // fingerprint of Meta as parsed
}

// Cell returns the cell with the given id, or nil.
func (n *Notebook) Cell(id string) *Cell {
	for _, c := range n.Cells {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// Title returns the notebook's title: Meta["title"] if set, else the text
// of the first level-1 heading of its prose, else "".
func (n *Notebook) Title() string {
	if t, ok := n.Meta["title"].(string); ok && t != "" {
		return t
	}
	for _, c := range n.Cells {
		if c.Kind != KindMarkdown {
			continue
		}
		src := []byte(c.Source)
		doc := markdown().Parser().Parse(text.NewReader(src))
		for b := doc.FirstChild(); b != nil; b = b.NextSibling() {
			if h, ok := b.(*ast.Heading); ok && h.Level == 1 {
				return strings.TrimSpace(plainText(h, src))
			}
		}
	}
	return ""
}

// plainText concatenates the text of n's inline descendants.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := n.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() || t.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// NewCell returns a new cell of the given kind; call Notebook.AssignIDs
// after adding it to give it an ID.
func NewCell(kind CellKind, source string) *Cell {
	return &Cell{Kind: kind, Source: source}
}

// ExecSource returns the code a kernel runs for a code cell: its Source,
// except that an experiment cell's code starts with a line holding the
// experiment's name, followed by the cell's body if it has one. (The
// kernel protocol's execute_request has code, kind and attrs but no name.)
func (c *Cell) ExecSource() string {
	if c.Kind != KindExperiment || c.Name == "" {
		return c.Source
	}
	if c.Source == "" {
		return c.Name
	}
	return c.Name + "\n" + c.Source
}
