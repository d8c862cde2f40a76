package jupyter

import (
	"regexp"
	"slices"
	"strings"
)

// historySession is the number of the kernel's one history session, as
// IPython's history manager numbers the first session of a kernel without
// a history database.
const historySession = 1

// history is the input (and text output) of the executions stored in
// this kernel process's history, in order of execution count.
type history struct {
	entries []historyEntry
}

type historyEntry struct {
	line   int
	input  string
	output *string
}

// historyRequest is the content of a history_request.
type historyRequest struct {
	Output         bool   `json:"output"`
	HistAccessType string `json:"hist_access_type"`
	Session        int    `json:"session"`
	Start          int    `json:"start"`
	Stop           *int   `json:"stop"`
	N              *int   `json:"n"`
	Pattern        string `json:"pattern"`
	Unique         bool   `json:"unique"`
}

func (h *history) add(line int, input string) {
	h.entries = append(h.entries, historyEntry{line: line, input: input})
}

// output records the text of execution line's result.
func (h *history) output(line int, text string) {
	for i := len(h.entries) - 1; i >= 0; i-- {
		if h.entries[i].line == line {
			h.entries[i].output = &text
			return
		}
	}
}

// answer returns the history a history_request asks for, as ipykernel's
// HistoryManager returns it (checked against ipykernel 6.17):
// [session, line, input] triples, or [session,
// line, [input, output]] with output. "tail" is the last n entries,
// "range" the lines start ≤ line < stop of the current session (0 or
// 1: there is no earlier one), "search" the last n inputs matching a glob
// pattern (unique: each input once).
func (h *history) answer(req historyRequest) []any {
	var sel []historyEntry
	switch req.HistAccessType {
	case "tail":
		sel = h.entries
		if req.N != nil && *req.N >= 0 && *req.N < len(sel) {
			sel = sel[len(sel)-*req.N:]
		}
	case "range":
		if req.Session != 0 && req.Session != historySession {
			break
		}
		for _, e := range h.entries {
			if e.line >= req.Start && (req.Stop == nil || e.line < *req.Stop) {
				sel = append(sel, e)
			}
		}
	case "search":
		re := globRegexp(req.Pattern)
		seen := map[string]bool{}
		for i := len(h.entries) - 1; i >= 0; i-- {
			e := h.entries[i]
			if !re.MatchString(e.input) || req.Unique && seen[e.input] {
				continue
			}
			seen[e.input] = true
			sel = append(sel, e)
			if req.N != nil && *req.N >= 0 && len(sel) == *req.N {
				break
			}
		}
		slices.Reverse(sel)
	}
	// IPython names the current session 0 in a range of it (it reads
	// its cache), and by its number in a tail or search (its database).
	session := historySession
	if req.HistAccessType == "range" {
		session = 0
	}
	out := make([]any, 0, len(sel))
	for _, e := range sel {
		if req.Output {
			var o any
			if e.output != nil {
				o = *e.output
			}
			out = append(out, []any{session, e.line, []any{e.input, o}})
		} else {
			out = append(out, []any{session, e.line, e.input})
		}
	}
	return out
}

// globRegexp compiles a glob pattern as SQLite's GLOB reads it (IPython
// searches its history with it): * any text, ? one character, [...] a
// class; the whole input must match. An empty pattern matches all.
func globRegexp(p string) *regexp.Regexp {
	if p == "" {
		p = "*"
	}
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := strings.IndexByte(p[i+1:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString("[" + strings.ReplaceAll(p[i+1:i+1+j], `\`, `\\`) + "]")
			i += j + 1
		default:
			if c < 0x80 {
				b.WriteString(regexp.QuoteMeta(string(c)))
			} else {
				b.WriteByte(c) // a byte of a UTF-8 sequence
			}
		}
	}
	b.WriteString(`\z`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile(`\A` + regexp.QuoteMeta(p) + `\z`)
	}
	return re
}
