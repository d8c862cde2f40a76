package notebook

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Jupyter holds a notebook's code cells as plain code cells of one kernel,
// so a cell that is not SQL says what it is with a cell magic on its first
// line, named like the cell kind and followed by the cell's attributes,
// separated by white space (a value with spaces is Go-quoted; the info
// string form in braces is read too):
//
//	%%latency max=256M
//	%%experiment false-sharing threads=2
//	%%sql group_by=radix counters=on
//	%%bandwidth threads=1,2
//
// The cachebook kernel (package jupyter) and ImportIpynb read it with
// ParseMagic; Ipynb writes it with Cell.JupyterSource.

// Magic returns the cell magic line a Jupyter code cell needs to run c as
// its kind ("%%latency max=256M"), or "" for a sql cell without attributes.
func (c *Cell) Magic() string {
	if c.Kind == KindSQL && len(c.Attrs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("%%" + string(c.Kind))
	if c.Kind == KindExperiment && c.Name != "" {
		b.WriteString(" " + c.Name)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Attrs)) {
		b.WriteString(" " + k + "=" + formatMagicValue(c.Attrs[k]))
	}
	return b.String()
}

// JupyterSource returns the cell's code as a Jupyter code cell holds it:
// the magic line (if any), then the source.
func (c *Cell) JupyterSource() string {
	m := c.Magic()
	switch {
	case m == "":
		return c.Source
	case c.Source == "":
		return m
	}
	return m + "\n" + c.Source
}

// formatMagicValue quotes a value only where the magic line needs it
// (white space, quotes, braces); commas stay bare.
func formatMagicValue(v string) string {
	odd := func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }
	if v == "" || strings.ContainsAny(v, "\"`\\{}") || strings.IndexFunc(v, odd) >= 0 {
		return strconv.Quote(v)
	}
	return v
}

// ParseMagic reads the cell magic of a Jupyter code cell's source. If the
// first non-blank line is "%%word ...", ok is true and it returns the word
// as the kind (callers check CellKind.IsCode), the experiment name, the
// attributes and the rest of the source as body. Otherwise ok is false and
// body is src unchanged (a sql cell).
func ParseMagic(src string) (kind CellKind, name string, attrs map[string]string, body string, ok bool) {
	rest := src
	for {
		line, after, found := strings.Cut(rest, "\n")
		if strings.TrimSpace(line) != "" {
			break
		}
		if !found {
			return "", "", nil, src, false
		}
		rest = after
	}
	line, after, _ := strings.Cut(rest, "\n")
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "%%") {
		return "", "", nil, src, false
	}
	k, name, attrs, ok := parseMagicLine(line[2:])
	if !ok {
		return "", "", nil, src, false
	}
	return CellKind(k), name, attrs, after, true
}

// parseMagicLine reads "kind [name] args". Arguments in braces follow the
// info string syntax (parseInfo); otherwise they are separated by white
// space only, as in IPython's magics, so that a comma belongs to its value
// (threads=1,2).
func parseMagicLine(line string) (kind, name string, attrs map[string]string, ok bool) {
	kind, name, attrs, ok = parseInfo(line)
	if !ok {
		return
	}
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), kind))
	if name != "" {
		rest = strings.TrimSpace(strings.TrimPrefix(rest, name))
	}
	if rest == "" || rest[0] == '{' {
		return
	}
	attrs = nil
	for rest != "" {
		j := strings.IndexAny(rest, " \t=")
		if j < 0 {
			j = len(rest)
		}
		key, val := rest[:j], "true"
		rest = rest[j:]
		if strings.HasPrefix(rest, "=") {
			rest = rest[1:]
			if strings.HasPrefix(rest, `"`) {
				val, rest = cutValue(rest)
			} else {
				k := strings.IndexAny(rest, " \t")
				if k < 0 {
					k = len(rest)
				}
				val, rest = rest[:k], rest[k:]
			}
		}
		rest = strings.TrimLeft(rest, " \t")
		if key == "" {
			continue
		}
		if attrs == nil {
			attrs = map[string]string{}
		}
		attrs[key] = val
	}
	return
}
