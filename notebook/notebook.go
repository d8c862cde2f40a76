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
// Saved outputs are fenced blocks with the info string "output" directly
// after their cell (blank lines allowed between). Their attributes are
// type (result, display, stream or error; default result), name (stream
// name or error name) and mime (text/plain, the default, or text/html; an
// HTML block joins the output just before it). Everything else — other
// fenced blocks such as ```go, headings, lists, comments — is prose and
// forms markdown cells.
//
// The file is split with goldmark's AST: the byte ranges of top-level block
// nodes decide where cells begin and end, and prose keeps its exact text.
// Parsing and then writing an unmodified notebook gives back the same bytes.
package notebook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// MaxSize is the largest notebook Parse accepts, in bytes.
const MaxSize = 16 << 20

// CellKind names what a cell is and which executor runs it.
type CellKind string

// The cell kinds.
const (
	KindMarkdown   CellKind = "markdown"   // prose, rendered to HTML
	KindSQL        CellKind = "sql"        // SQL statements run on the engine
	KindLatency    CellKind = "latency"    // the memory latency curve of this machine
	KindBandwidth  CellKind = "bandwidth"  // memory bandwidth, one core vs all
	KindSweep      CellKind = "sweep"      // GROUP BY cost as the number of groups grows
	KindExperiment CellKind = "experiment" // a named experiment (false-sharing, zeroing, ...)
	KindCachesim   CellKind = "cachesim"   // a named access pattern through the cache model
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
	// as application/vnd.vegalite.v5+json, cachebook's own result and
	// measurement JSON); for an error output, "traceback" holds its lines.
	Data map[string]any `json:"data,omitempty"`
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

	raw    string // the cell's original bytes, "" for a cell not parsed
	parsed bool   // whether the cell came from Parse
	fp     string // fingerprint of the parsed fields, to detect edits
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

// idPattern is the nbformat 4.5 cell id pattern; cachebook ids obey it too.
var idPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidID reports whether id may be used as a cell id.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// markdown is the goldmark configuration used both to split notebooks and to
// render prose, so that both agree on the block structure.
func markdown() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(extension.GFM, extension.Footnote),
		goldmark.WithParserOptions(parser.WithAutoHeadingID()),
	)
}

// block is a top-level block with its byte range [start, end).
type block struct {
	node       ast.Node
	start, end int
}

// Parse splits src into cells. Any input up to MaxSize bytes parses (text
// that is not a cell is prose); larger input is an error.
func Parse(src []byte) (*Notebook, error) {
	if len(src) > MaxSize {
		return nil, fmt.Errorf("notebook: %d bytes is larger than the %d byte limit", len(src), MaxSize)
	}
	doc := markdown().Parser().Parse(text.NewReader(src))

	var blocks []block
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		b, ok := blockRange(src, n)
		if !ok {
			continue
		}
		if len(blocks) > 0 && b.start < blocks[len(blocks)-1].end {
			continue // overlapping ranges: leave this block to the prose
		}
		blocks = append(blocks, b)
	}

	nb := &Notebook{metaAt: -1}
	prose := 0        // start of the pending prose
	var owner *string // raw text of the code cell or metadata comment just read
	flushProse := func(end int) {
		// Blank lines after a cell or the metadata comment belong to
		// it, so that they do not make empty prose cells.
		if seg := src[prose:end]; owner != nil && onlyBlank(seg) {
			*owner += string(seg)
		} else if end > prose {
			nb.Cells = append(nb.Cells, &Cell{Kind: KindMarkdown, Source: string(seg), parsed: true})
		}
		prose, owner = end, nil
	}
	for i := 0; i < len(blocks); i++ {
		b := blocks[i]
		// Notebook metadata comment.
		if nb.metaAt < 0 {
			if meta, ok := notebookMeta(src, b); ok {
				flushProse(b.start)
				nb.Meta, nb.metaRaw, nb.metaAt = meta, string(src[b.start:b.end]), len(nb.Cells)
				nb.metaFP = fingerprint(meta)
				prose, owner = b.end, &nb.metaRaw
				continue
			}
		}
		// A code cell, optionally preceded by its metadata comment.
		start, fence, meta := b.start, i, map[string]any(nil)
		if m, ok := cellMeta(src, b); ok && i+1 < len(blocks) && onlyBlank(src[b.end:blocks[i+1].start]) {
			if _, ok := codeFence(src, blocks[i+1]); ok {
				fence, meta = i+1, m
			}
		}
		c, ok := codeFence(src, blocks[fence])
		if !ok {
			continue
		}
		if len(meta) > 0 {
			c.Meta = meta
		}
		end := blocks[fence].end
		last := fence
		for j := fence + 1; j < len(blocks) && onlyBlank(src[end:blocks[j].start]); j++ {
			out, ok := outputFence(src, blocks[j])
			if !ok {
				break
			}
			if out.Text == "" && out.HTML != "" && len(c.Outputs) > 0 {
				prev := &c.Outputs[len(c.Outputs)-1]
				if prev.HTML == "" && prev.Type == out.Type && prev.Name == out.Name {
					prev.HTML = out.HTML
					end, last = blocks[j].end, j
					continue
				}
			}
			c.Outputs = append(c.Outputs, out)
			end, last = blocks[j].end, j
		}
		flushProse(start)
		c.raw, c.parsed = string(src[start:end]), true
		c.fp = c.fingerprint()
		nb.Cells = append(nb.Cells, c)
		prose, owner = end, &c.raw
		i = last
	}
	flushProse(len(src))
	for _, c := range nb.Cells {
		if c.Kind == KindMarkdown {
			c.raw = c.Source
			c.fp = c.fingerprint()
		}
	}
	nb.AssignIDs()
	return nb, nil
}

// blockRange returns the byte range of a top-level block that may start a
// cell or hold metadata: fenced code blocks and HTML blocks. The range runs
// from the start of the block's first line to the end of its last line,
// line terminator included.
func blockRange(src []byte, n ast.Node) (block, bool) {
	pos := n.Pos()
	if pos < 0 || pos > len(src) {
		return block{}, false
	}
	start := lineStart(src, pos)
	switch n := n.(type) {
	case *ast.FencedCodeBlock:
		if n.Info == nil {
			return block{}, false
		}
		// After the content (or the opening line), the next line is the
		// closing fence; without one the block runs to the end of input.
		after := lineEnd(src, pos)
		if l := n.Lines(); l.Len() > 0 {
			after = l.At(l.Len() - 1).Stop
		}
		if after < start || after > len(src) {
			return block{}, false
		}
		return block{node: n, start: start, end: lineEnd(src, after)}, true
	case *ast.HTMLBlock:
		end := -1
		if n.HasClosure() {
			end = n.ClosureLine.Stop
		} else if l := n.Lines(); l.Len() > 0 {
			end = l.At(l.Len() - 1).Stop
		}
		if end < start || end > len(src) {
			return block{}, false
		}
		return block{node: n, start: start, end: lineEnd(src, max(end-1, start))}, true
	}
	return block{}, false
}

// lineStart returns the offset of the start of the line holding offset i.
func lineStart(src []byte, i int) int {
	return bytes.LastIndexByte(src[:i], '\n') + 1
}

// lineEnd returns the offset just after the line terminator of the line
// holding offset i (len(src) on the last line without one).
func lineEnd(src []byte, i int) int {
	if i >= len(src) {
		return len(src)
	}
	if j := bytes.IndexByte(src[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(src)
}

func onlyBlank(b []byte) bool {
	return len(bytes.TrimLeft(b, " \t\r\n")) == 0
}

// metaComment returns the JSON object of a "<!-- cachebook: {...} -->"
// comment that makes up all of block b.
func metaComment(src []byte, b block) (map[string]any, bool) {
	if _, ok := b.node.(*ast.HTMLBlock); !ok {
		return nil, false
	}
	s := bytes.TrimSpace(src[b.start:b.end])
	body, ok := bytes.CutPrefix(s, []byte("<!--"))
	if !ok {
		return nil, false
	}
	body, ok = bytes.CutSuffix(body, []byte("-->"))
	if !ok || bytes.Contains(body, []byte("-->")) {
		return nil, false
	}
	body, ok = bytes.CutPrefix(bytes.TrimSpace(body), []byte("cachebook:"))
	if !ok {
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// notebookMeta returns the notebook metadata of a {"notebook": {...}}
// comment.
func notebookMeta(src []byte, b block) (map[string]any, bool) {
	m, ok := metaComment(src, b)
	if !ok || len(m) != 1 {
		return nil, false
	}
	meta, ok := m["notebook"].(map[string]any)
	return meta, ok
}

// cellMeta returns the metadata of a cell metadata comment.
func cellMeta(src []byte, b block) (map[string]any, bool) {
	m, ok := metaComment(src, b)
	if !ok {
		return nil, false
	}
	if _, isNB := m["notebook"]; isNB && len(m) == 1 {
		return nil, false
	}
	return m, true
}

// fenceContent returns the info string and the content of a fenced block,
// without the content's final line terminator.
func fenceContent(src []byte, b block) (info, content string, ok bool) {
	f, ok := b.node.(*ast.FencedCodeBlock)
	if !ok || f.Info == nil {
		return "", "", false
	}
	info = string(f.Info.Segment.Value(src))
	var buf bytes.Buffer
	lines := f.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		buf.Write(seg.Value(src))
	}
	content = buf.String()
	if c, ok := strings.CutSuffix(content, "\r\n"); ok {
		content = c
	} else {
		content = strings.TrimSuffix(content, "\n")
	}
	return info, content, true
}

// codeFence returns the cell of a fenced block whose info string names a
// code kind.
func codeFence(src []byte, b block) (*Cell, bool) {
	info, content, ok := fenceContent(src, b)
	if !ok {
		return nil, false
	}
	kind, name, attrs, ok := parseInfo(info)
	if !ok || !CellKind(kind).IsCode() {
		return nil, false
	}
	return &Cell{Kind: CellKind(kind), Name: name, Source: content, Attrs: attrs}, true
}

// outputFence returns the output of an ```output block.
func outputFence(src []byte, b block) (Output, bool) {
	info, content, ok := fenceContent(src, b)
	if !ok {
		return Output{}, false
	}
	kind, name, attrs, ok := parseInfo(info)
	if !ok || kind != "output" || name != "" {
		return Output{}, false
	}
	out := Output{Type: OutputType(attrs["type"]), Name: attrs["name"]}
	if out.Type == "" {
		out.Type = OutputResult
	}
	if !out.Type.valid() {
		return Output{}, false
	}
	for k := range attrs {
		if k != "type" && k != "name" && k != "mime" {
			return Output{}, false
		}
	}
	switch attrs["mime"] {
	case "", "text/plain":
		out.Text = content
	case "text/html":
		if content == "" {
			return Output{}, false
		}
		out.HTML = content
	default:
		return Output{}, false
	}
	return out, true
}

// parseInfo splits an info string into its first word (the kind), an
// experiment name and attributes. It is lenient: any text yields some
// attributes; ok is false only for an empty info string.
func parseInfo(info string) (kind, name string, attrs map[string]string, ok bool) {
	info = strings.TrimSpace(info)
	i := strings.IndexAny(info, " \t{")
	if i < 0 {
		i = len(info)
	}
	kind, rest := info[:i], strings.TrimSpace(info[i:])
	if kind == "" {
		return "", "", nil, false
	}
	if kind == string(KindExperiment) && rest != "" && rest[0] != '{' {
		j := strings.IndexAny(rest, " \t,{")
		if j < 0 {
			j = len(rest)
		}
		if w := rest[:j]; !strings.Contains(w, "=") {
			name, rest = w, strings.TrimSpace(rest[j:])
		}
	}
	if strings.HasPrefix(rest, "{") {
		rest = strings.TrimSuffix(rest[1:], "}")
	}
	for rest != "" {
		rest = strings.TrimLeft(rest, " \t,")
		if rest == "" {
			break
		}
		j := strings.IndexAny(rest, " \t,=")
		if j < 0 {
			j = len(rest)
		}
		key := rest[:j]
		rest = rest[j:]
		val := "true"
		if strings.HasPrefix(rest, "=") {
			rest = rest[1:]
			val, rest = cutValue(rest)
		}
		if key == "" {
			continue
		}
		if attrs == nil {
			attrs = map[string]string{}
		}
		attrs[key] = val
	}
	return kind, name, attrs, true
}

// cutValue reads one attribute value: a Go-quoted string or a run of
// characters up to a space or comma.
func cutValue(s string) (val, rest string) {
	if strings.HasPrefix(s, `"`) {
		if q, err := strconv.QuotedPrefix(s); err == nil {
			if v, err := strconv.Unquote(q); err == nil {
				return v, s[len(q):]
			}
		}
	}
	j := strings.IndexAny(s, " \t,")
	if j < 0 {
		j = len(s)
	}
	return s[:j], s[j:]
}

// formatInfo writes an info string that parseInfo reads back as the same
// kind, name and attributes.
func formatInfo(kind, name string, attrs map[string]string) string {
	var b strings.Builder
	b.WriteString(kind)
	if name != "" {
		b.WriteString(" " + name)
	}
	if len(attrs) > 0 {
		b.WriteString(" {")
		for i, k := range slices.Sorted(maps.Keys(attrs)) {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(k + "=" + formatValue(attrs[k]))
		}
		b.WriteString("}")
	}
	return b.String()
}

func formatValue(v string) string {
	if v == "" || strings.ContainsAny(v, " \t,{}\"`\\\n\r") || v[0] == '"' {
		return strconv.Quote(v)
	}
	return v
}

// fingerprint is a canonical encoding used to tell whether parsed content
// was changed.
func fingerprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "\x00unencodable"
	}
	return string(b)
}

func (c *Cell) fingerprint() string {
	return fingerprint(struct {
		Kind    CellKind
		Name    string
		Source  string
		Attrs   map[string]string
		Meta    map[string]any
		Outputs []Output
	}{c.Kind, c.Name, c.Source, c.Attrs, c.Meta, c.Outputs})
}

// AssignIDs gives every cell an ID: the "id" of its metadata if that is a
// valid id, else its current ID if valid, else one derived from its kind
// and a hash of its content. Duplicates get a numeric suffix. Parse calls
// it; call it again after adding cells.
func (n *Notebook) AssignIDs() {
	seen := map[string]bool{}
	for _, c := range n.Cells {
		id, _ := c.Meta["id"].(string)
		if !ValidID(id) {
			id = c.ID
		}
		if !ValidID(id) {
			id = c.derivedID()
		}
		base := id
		if len(base) > 56 {
			base = base[:56]
		}
		for k := 2; seen[id]; k++ {
			id = base + "-" + strconv.Itoa(k)
		}
		seen[id] = true
		c.ID = id
	}
}

// derivedID is the id of a cell without an explicit one: its kind and a
// hash of its content (for prose, without leading and trailing blank
// lines, which do not change what it says).
func (c *Cell) derivedID() string {
	src := c.Source
	if c.Kind == KindMarkdown {
		src = trimBlankLines(src)
	}
	h := sha256.Sum256([]byte(string(c.Kind) + "\x00" + c.Name + "\x00" + src))
	return string(c.Kind) + "-" + hex.EncodeToString(h[:4])
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

// Markdown writes the notebook back as Markdown. Unchanged parts are written
// with their original bytes, so Markdown(Parse(x)) == x; new or edited code
// cells and metadata are written in the canonical form described in the
// package documentation.
func (n *Notebook) Markdown() []byte {
	var buf bytes.Buffer
	metaAt := n.metaAt
	if metaAt < 0 || metaAt > len(n.Cells) {
		metaAt = 0
		if n.metaAt > len(n.Cells) {
			metaAt = len(n.Cells)
		}
	}
	for i := 0; i <= len(n.Cells); i++ {
		if i == metaAt {
			n.writeMeta(&buf)
		}
		if i == len(n.Cells) {
			break
		}
		c := n.Cells[i]
		switch {
		case c.Kind == KindMarkdown && c.parsed:
			buf.WriteString(c.Source)
		case c.Kind == KindMarkdown:
			// A new prose cell: leading and trailing blank lines carry
			// no meaning and are normalised, so that rebuilding a
			// notebook from its parsed cells is stable.
			if body := trimBlankLines(c.Source); body != "" {
				separate(&buf, true)
				buf.WriteString(body + "\n")
			}
		case c.raw != "" && c.fingerprint() == c.fp:
			separate(&buf, false)
			buf.WriteString(c.raw)
		default:
			separate(&buf, true)
			c.writeCanonical(&buf)
		}
	}
	return buf.Bytes()
}

// separate makes sure what follows starts on a new line, after a blank line
// if blank is set.
func separate(buf *bytes.Buffer, blank bool) {
	b := buf.Bytes()
	if len(b) == 0 {
		return
	}
	if b[len(b)-1] != '\n' {
		buf.WriteByte('\n')
	}
	if blank && !bytes.HasSuffix(buf.Bytes(), []byte("\n\n")) {
		buf.WriteByte('\n')
	}
}

func (n *Notebook) writeMeta(buf *bytes.Buffer) {
	if n.metaRaw != "" && fingerprint(n.Meta) == n.metaFP {
		buf.WriteString(n.metaRaw)
		return
	}
	if len(n.Meta) == 0 {
		return
	}
	separate(buf, true)
	buf.WriteString(commentLine(map[string]any{"notebook": n.Meta}))
	buf.WriteString("\n")
}

func commentLine(m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil {
		b = []byte("{}")
	}
	// "--" may not appear inside an HTML comment; JSON can escape it.
	s := strings.ReplaceAll(string(b), "--", `-\u002d`)
	return "<!-- cachebook: " + s + " -->\n"
}

// writeCanonical writes the cell in canonical form.
func (c *Cell) writeCanonical(buf *bytes.Buffer) {
	if len(c.Meta) > 0 {
		buf.WriteString(commentLine(c.Meta))
	}
	kind := string(c.Kind)
	if !c.Kind.IsCode() {
		kind = string(KindSQL)
	}
	writeFence(buf, formatInfo(kind, c.Name, c.Attrs), c.Source)
	for _, o := range c.Outputs {
		attrs := map[string]string{}
		if o.Type != OutputResult && o.Type != "" {
			attrs["type"] = string(o.Type)
		}
		if o.Name != "" {
			attrs["name"] = o.Name
		}
		buf.WriteByte('\n')
		if o.Text != "" || o.HTML == "" {
			writeFence(buf, formatInfo("output", "", attrs), o.Text)
		}
		if o.HTML != "" {
			attrs["mime"] = "text/html"
			if o.Text != "" {
				buf.WriteByte('\n')
			}
			writeFence(buf, formatInfo("output", "", attrs), o.HTML)
		}
	}
}

// writeFence writes a fenced block long enough not to be closed by any line
// of body.
func writeFence(buf *bytes.Buffer, info, body string) {
	ch := byte('`')
	if strings.Contains(info, "`") {
		ch = '~'
	}
	longest := 0
	run := 0
	for i := 0; i < len(body); i++ {
		if body[i] == ch {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat(string(ch), max(3, longest+1))
	buf.WriteString(fence + info + "\n")
	if body != "" {
		// Parsing drops one final line end; a body ending in "\r" needs
		// "\r\n" so that the "\r" survives.
		buf.WriteString(body)
		if strings.HasSuffix(body, "\r") {
			buf.WriteString("\r\n")
		} else {
			buf.WriteByte('\n')
		}
	}
	buf.WriteString(fence + "\n")
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
