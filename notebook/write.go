package notebook

import (
	"bytes"
	"encoding/json"
	"strings"
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
