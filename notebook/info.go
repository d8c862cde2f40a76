package notebook

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// This file reads and writes info strings: the text after a fence that
// names a cell's kind, experiment and attributes.

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
