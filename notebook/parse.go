package notebook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// This file splits a Markdown file into cells (Parse), using goldmark's
// block structure.

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
	var skip [][2]int // escape comments in the pending prose, left out of Source
	var marker *Cell  // the markdown cell a marker comment started, not yet added
	flushProse := func(end int) {
		seg := src[prose:end]
		switch {
		case marker != nil:
			// A marked cell exists even when it is empty.
			marker.raw += string(seg)
			marker.Source = cutRanges(src, prose, end, skip)
			nb.Cells = append(nb.Cells, marker)
		case owner != nil && onlyBlank(seg):
			// Blank lines after a cell or the metadata comment belong
			// to it, so that they do not make empty prose cells.
			*owner += string(seg)
		case end > prose:
			nb.Cells = append(nb.Cells, &Cell{Kind: KindMarkdown, Source: cutRanges(src, prose, end, skip), raw: string(seg), parsed: true})
		}
		prose, owner, skip, marker = end, nil, nil, nil
	}
	for i := 0; i < len(blocks); i++ {
		b := blocks[i]
		if m, ok := metaComment(src, b); ok {
			switch {
			case isEscape(m):
				// This comment and the next block are prose.
				skip = append(skip, [2]int{b.start, b.end})
				if i+1 < len(blocks) && onlyBlank(src[b.end:blocks[i+1].start]) {
					i++
				}
				continue
			case isMarker(m):
				// A markdown cell starts here.
				flushProse(b.start)
				marker = &Cell{Kind: KindMarkdown, raw: string(src[b.start:b.end]), parsed: true}
				if id, ok := m["id"].(string); ok {
					marker.ID = id
				}
				prose = b.end
				continue
			}
		}
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
			if len(c.Outputs) > 0 && c.Outputs[len(c.Outputs)-1].join(out) {
				end, last = blocks[j].end, j
				continue
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
	for i, c := range nb.Cells {
		if c.Kind == KindMarkdown {
			c.fp = c.fingerprint()
			c.after = prevKind(nb.Cells, i)
		}
	}
	nb.AssignIDs()
	return nb, nil
}

// cutRanges returns src[start:end] without the byte ranges in skip (which
// lie inside it, in order).
func cutRanges(src []byte, start, end int, skip [][2]int) string {
	var b strings.Builder
	at := start
	for _, r := range skip {
		b.Write(src[at:r[0]])
		at = r[1]
	}
	b.Write(src[at:end])
	return b.String()
}

// isEscape reports whether a metadata comment is the prose escape
// {"prose": true}: the block after it is prose whatever it looks like.
func isEscape(m map[string]any) bool {
	return len(m) == 1 && m["prose"] == true
}

// isMarker reports whether a metadata comment starts a markdown cell:
// {"cell": "markdown"}, optionally with an "id".
func isMarker(m map[string]any) bool {
	if m["cell"] != string(KindMarkdown) {
		return false
	}
	for k := range m {
		if k != "cell" && k != "id" {
			return false
		}
	}
	return true
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
	switch mime := attrs["mime"]; {
	case mime == "" || mime == "text/plain":
		out.Text = content
	case mime == "text/html":
		if content == "" {
			return Output{}, false
		}
		out.HTML = content
	case isJSONMIME(mime):
		dec := json.NewDecoder(strings.NewReader(content))
		dec.UseNumber() // numbers keep their digits
		var v any
		if err := dec.Decode(&v); err != nil || dec.More() {
			return Output{}, false
		}
		out.Data = map[string]any{mime: v}
	case isStringMIME(mime):
		out.Data = map[string]any{mime: content}
	default:
		return Output{}, false
	}
	return out, true
}
