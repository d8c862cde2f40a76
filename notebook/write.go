package notebook

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// This file writes a notebook back as Markdown.

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
		afterProse := i > 0 && n.Cells[i-1].Kind == KindMarkdown
		switch {
		case c.Kind == KindMarkdown && c.parsed && c.fingerprint() == c.fp && c.after == prevKind(n.Cells, i):
			// Unchanged prose after the same kind of cell as when it
			// was parsed: its bytes mean the same again.
			buf.WriteString(c.raw)
		case c.Kind == KindMarkdown:
			// A new or edited prose cell: leading and trailing blank
			// lines carry no meaning and are normalised, so that
			// rebuilding a notebook from its parsed cells is stable. A
			// marker comment keeps it apart from prose before it (and
			// keeps an empty cell), and escapes keep what looks like a
			// cell, an output or metadata inside it prose.
			body := trimBlankLines(c.Source)
			separate(&buf, true)
			if afterProse || body == "" {
				buf.WriteString(markerLine)
			}
			if body != "" {
				buf.WriteString(escapeProse(closeOpenBlock(body + "\n")))
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

// prevKind is the kind of the cell before cells[i] ("" for the first).
func prevKind(cells []*Cell, i int) CellKind {
	if i == 0 {
		return ""
	}
	if k := cells[i-1].Kind; k == KindMarkdown {
		return k
	}
	return KindSQL // any code cell: outputs after it would join it
}

// markerLine starts a markdown cell; escapeLine makes the block after it
// prose (see the package documentation).
const (
	markerLine = `<!-- cachebook: {"cell":"markdown"} -->` + "\n"
	escapeLine = `<!-- cachebook: {"prose":true} -->` + "\n"
)

// escapeProse returns prose with an escape comment before every top-level
// block that Parse would otherwise take for something other than prose: a
// fenced block naming a cell kind or "output", and any cachebook comment
// (metadata, a marker, an escape). Blocks already escaped are left alone,
// so escapeProse(escapeProse(s)) == escapeProse(s).
func escapeProse(prose string) string {
	src := []byte(prose)
	doc := markdown().Parser().Parse(text.NewReader(src))
	var blocks []block
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if b, ok := blockRange(src, n); ok && (len(blocks) == 0 || b.start >= blocks[len(blocks)-1].end) {
			blocks = append(blocks, b)
		}
	}
	var b strings.Builder
	at := 0
	for i := 0; i < len(blocks); i++ {
		blk := blocks[i]
		_, isCode := codeFence(src, blk)
		_, isOut := outputFence(src, blk)
		m, isMeta := metaComment(src, blk)
		if isMeta && isEscape(m) && i+1 < len(blocks) && onlyBlank(src[blk.end:blocks[i+1].start]) {
			i++ // already escaped: Parse keeps the next block prose
			continue
		}
		if isCode || isOut || isMeta {
			b.Write(src[at:blk.start])
			b.WriteString(escapeLine)
			at = blk.start
		}
	}
	b.Write(src[at:])
	return b.String()
}

// closeOpenBlock returns prose (which ends in a line end) with the closing
// line added that its last block lacks, when that block is a fenced block
// or an HTML block (a comment, <pre>, <script>...) that runs to the end of
// the input: left open, it would swallow the cells written after it. Prose
// whose last block closes is returned as it is.
func closeOpenBlock(prose string) string {
	if closed(prose) {
		return prose
	}
	src := []byte(prose)
	doc := markdown().Parser().Parse(text.NewReader(src))
	var end string
	switch n := doc.LastChild().(type) {
	case *ast.FencedCodeBlock:
		line := strings.TrimLeft(string(src[lineStart(src, n.Pos()):lineEnd(src, n.Pos())]), " ")
		fence := line[:len(line)-len(strings.TrimLeft(line, line[:1]))]
		end = fence
	case *ast.HTMLBlock:
		switch n.HTMLBlockType {
		case ast.HTMLBlockType1:
			first := strings.ToLower(strings.TrimLeft(string(src[lineStart(src, n.Pos()):lineEnd(src, n.Pos())]), " "))
			for _, tag := range []string{"script", "pre", "style", "textarea"} {
				if strings.HasPrefix(first, "<"+tag) {
					end = "</" + tag + ">"
				}
			}
		case ast.HTMLBlockType2:
			end = "-->"
		case ast.HTMLBlockType3:
			end = "?>"
		case ast.HTMLBlockType4:
			end = ">"
		case ast.HTMLBlockType5:
			end = "]]>"
		}
	}
	if end == "" {
		return prose
	}
	if out := prose + end + "\n"; closed(out) {
		return out
	}
	return prose
}

// closed reports whether a code cell written after prose (escaped as the
// writer escapes it) stays a cell.
func closed(prose string) bool {
	nb, err := Parse([]byte(escapeProse(prose) + "\n```sql\nprobe\n```\n"))
	if err != nil || len(nb.Cells) == 0 {
		return false
	}
	last := nb.Cells[len(nb.Cells)-1]
	return last.Kind == KindSQL && last.Source == "probe"
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
	for i, o := range c.Outputs {
		attrs := map[string]string{}
		if o.Type != OutputResult && o.Type != "" {
			attrs["type"] = string(o.Type)
		}
		if o.Name != "" {
			attrs["name"] = o.Name
		}
		// The text block comes first; without one, a block of another
		// form would join the previous output of the same type and name.
		sameAsPrev := i > 0 && c.Outputs[i-1].Type == o.Type && c.Outputs[i-1].Name == o.Name
		first := true
		block := func(mime, body string) {
			if !first {
				buf.WriteByte('\n')
			}
			first = false
			a := maps.Clone(attrs)
			if mime != "" {
				a["mime"] = mime
			}
			writeFence(buf, formatInfo("output", "", a), body)
		}
		buf.WriteByte('\n')
		if o.Text != "" || (o.HTML == "" && len(o.Data) == 0) || sameAsPrev {
			block("", o.Text)
		}
		if o.HTML != "" {
			block("text/html", o.HTML)
		}
		for _, mime := range slices.Sorted(maps.Keys(o.Data)) {
			if body, ok := dataBlock(mime, o.Data[mime]); ok {
				block(mime, body)
			}
		}
	}
}

// dataBlock returns the body of an output block holding v as its mime
// form: compact JSON for a JSON type, the string itself for text and
// images. Forms that the format cannot hold are left out.
func dataBlock(mime string, v any) (string, bool) {
	switch {
	case isJSONMIME(mime):
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return "", false
		}
		return strings.TrimSuffix(buf.String(), "\n"), true
	case isStringMIME(mime):
		s, ok := v.(string)
		return s, ok && s != ""
	}
	return "", false
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
