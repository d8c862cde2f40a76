package difftest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Shape is what the comparison needs to know about a SELECT statement's
// text: its ORDER BY keys and its LIMIT and OFFSET. It is found by a small
// token scanner, not a full parser: only top-level (outside parentheses)
// clauses of a single SELECT are recognised.
type Shape struct {
	// Text is the statement without a trailing semicolon.
	Text string
	// Body is Text without its trailing LIMIT/OFFSET clause.
	Body string
	// OrderBy holds the ORDER BY key expressions as written, without
	// ASC/DESC and NULLS FIRST/LAST. Empty when there is no ORDER BY.
	OrderBy []string
	// Limit is the LIMIT count, or -1 when there is none.
	Limit int64
	// Offset is the OFFSET count (0 when absent).
	Offset int64

	selectItems []string // the select list, split at top-level commas
	fromPos     int      // byte offset of the top-level FROM in Body, or -1
	orderPos    int      // byte offset of the top-level ORDER in Body, or -1
}

type token struct {
	text       string
	start, end int
	depth      int
}

// tokenize splits SQL text into identifiers/keywords, numbers, quoted
// strings and identifiers, and single punctuation characters, recording the
// parenthesis depth of each. Comments and whitespace are skipped.
func tokenize(s string) ([]token, error) {
	var toks []token
	depth := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				return nil, fmt.Errorf("offset %d: unterminated comment", i)
			}
			i += j + 4
		case c == '\'' || c == '"':
			j := i + 1
			for {
				if j >= len(s) {
					return nil, fmt.Errorf("offset %d: unterminated quote", i)
				}
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			toks = append(toks, token{s[i : j+1], i, j + 1, depth})
			i = j + 1
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			toks = append(toks, token{s[i:j], i, j, depth})
			i = j
		default:
			if c == ')' {
				depth--
				if depth < 0 {
					return nil, fmt.Errorf("offset %d: unbalanced ')'", i)
				}
			}
			toks = append(toks, token{s[i : i+1], i, i + 1, depth})
			if c == '(' {
				depth++
			}
			i++
		}
	}
	if depth != 0 {
		return nil, errors.New("unbalanced '('")
	}
	return toks, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' ||
		c >= 'A' && c <= 'Z' || c >= 0x80
}

func (t token) is(word string) bool { return t.depth == 0 && strings.EqualFold(t.text, word) }

// ParseShape finds the ORDER BY, LIMIT and OFFSET clauses of a SELECT.
func ParseShape(q string) (*Shape, error) {
	text := strings.TrimSpace(q)
	text = strings.TrimSpace(strings.TrimSuffix(text, ";"))
	toks, err := tokenize(text)
	if err != nil {
		return nil, fmt.Errorf("difftest: %w", err)
	}
	if len(toks) == 0 || !toks[0].is("SELECT") {
		return nil, errors.New("difftest: not a SELECT statement")
	}
	s := &Shape{Text: text, Body: text, Limit: -1, fromPos: -1, orderPos: -1}

	// Trailing LIMIT n [OFFSET m] or OFFSET m [LIMIT n].
	end := len(toks)
	for end >= 2 && toks[end-2].depth == 0 && isNumber(toks[end-1].text) {
		kw := toks[end-2]
		n, err := strconv.ParseInt(toks[end-1].text, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("difftest: %s %q: %w", kw.text, toks[end-1].text, err)
		}
		switch {
		case kw.is("LIMIT") && s.Limit < 0:
			s.Limit = n
		case kw.is("OFFSET") && s.Offset == 0:
			s.Offset = n
		default:
			goto done
		}
		end -= 2
	}
done:
	if end < len(toks) {
		s.Body = strings.TrimSpace(text[:toks[end].start])
	}
	toks = toks[:end]

	selStart := 1
	if len(toks) > 1 && toks[1].is("DISTINCT") {
		selStart = 2
	}
	itemStart := selStart
	for i := selStart; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.is("FROM") && s.fromPos < 0 && s.orderPos < 0:
			s.fromPos = t.start
		case t.is("ORDER") && i+1 < len(toks) && toks[i+1].is("BY"):
			if s.orderPos >= 0 {
				return nil, errors.New("difftest: two ORDER BY clauses")
			}
			s.orderPos = t.start
			s.OrderBy, err = orderItems(text, toks[i+2:])
			if err != nil {
				return nil, err
			}
		}
		if s.fromPos < 0 && s.orderPos < 0 && t.depth == 0 && t.text == "," {
			s.selectItems = append(s.selectItems, strings.TrimSpace(text[toks[itemStart].start:t.start]))
			itemStart = i + 1
		}
		if (s.fromPos >= 0 || s.orderPos >= 0) && itemStart >= 0 {
			if itemStart < i {
				s.selectItems = append(s.selectItems, strings.TrimSpace(text[toks[itemStart].start:t.start]))
			}
			itemStart = -1
		}
	}
	if itemStart >= 0 && itemStart < len(toks) {
		s.selectItems = append(s.selectItems, strings.TrimSpace(text[toks[itemStart].start:]))
	}
	return s, nil
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// orderItems splits the tokens after ORDER BY into key expressions.
func orderItems(text string, toks []token) ([]string, error) {
	var items []string
	start := 0
	flush := func(end int) error {
		t := toks[start:end]
		// Drop trailing ASC/DESC and NULLS FIRST/LAST.
		for len(t) > 0 {
			n := len(t)
			switch {
			case t[n-1].is("ASC") || t[n-1].is("DESC"):
				t = t[:n-1]
			case n >= 2 && t[n-2].is("NULLS") && (t[n-1].is("FIRST") || t[n-1].is("LAST")):
				t = t[:n-2]
			default:
				goto out
			}
		}
	out:
		if len(t) == 0 {
			return errors.New("difftest: empty ORDER BY item")
		}
		items = append(items, text[t[0].start:t[len(t)-1].end])
		return nil
	}
	for i, t := range toks {
		if t.depth == 0 && t.text == "," {
			if err := flush(i); err != nil {
				return nil, err
			}
			start = i + 1
		}
	}
	if err := flush(len(toks)); err != nil {
		return nil, err
	}
	return items, nil
}

// KeyRef says where one ORDER BY key is found in a result: in output column
// Col, or else in hidden column Hidden appended after the output columns.
type KeyRef struct {
	Col    int // output column index, or -1
	Hidden int // index among the appended key columns, or -1
}

// OrderedQuery returns the statement DuckDB runs as the reference for a
// query with ORDER BY: the body without LIMIT/OFFSET, with every sort key
// that is not an output column appended to the select list, and where each
// key is found in its result. Without ORDER BY it returns Body and no keys.
func (s *Shape) OrderedQuery() (string, []KeyRef) {
	if len(s.OrderBy) == 0 {
		return s.Body, nil
	}
	var refs []KeyRef
	var extra []string
	for _, k := range s.OrderBy {
		if col := s.outputColumn(k); col >= 0 {
			refs = append(refs, KeyRef{Col: col, Hidden: -1})
			continue
		}
		refs = append(refs, KeyRef{Col: -1, Hidden: len(extra)})
		extra = append(extra, fmt.Sprintf("%s AS __difftest_key%d", k, len(extra)))
	}
	if len(extra) == 0 {
		return s.Body, refs
	}
	at := s.fromPos
	if at < 0 {
		at = s.orderPos
	}
	add := ", " + strings.Join(extra, ", ") + " "
	return strings.TrimRight(s.Body[:at], " \t\n") + add + s.Body[at:], refs
}

// outputColumn resolves an ORDER BY key to an output column: a positive
// ordinal, an alias, or an expression written exactly like a select item.
// It returns -1 when the key is not in the output (or the select list has
// a star and ordinals cannot be mapped without the result).
func (s *Shape) outputColumn(key string) int {
	for _, it := range s.selectItems {
		if it == "*" || strings.HasSuffix(it, ".*") || strings.Contains(strings.ToUpper(it), "* REPLACE") ||
			strings.Contains(strings.ToUpper(it), "* EXCLUDE") {
			return -1
		}
	}
	if isNumber(key) {
		n, err := strconv.Atoi(key)
		if err == nil && n >= 1 && n <= len(s.selectItems) {
			return n - 1
		}
		return -1
	}
	for i, it := range s.selectItems {
		if alias := itemAlias(it); alias != "" && strings.EqualFold(alias, unquoteIdent(key)) {
			return i
		}
	}
	for i, it := range s.selectItems {
		if itemAlias(it) == "" && strings.EqualFold(it, key) {
			return i
		}
	}
	return -1
}

// itemAlias returns the alias of a select item written "expr AS alias".
func itemAlias(item string) string {
	toks, err := tokenize(item)
	if err != nil || len(toks) < 3 {
		return ""
	}
	n := len(toks)
	if toks[n-2].is("AS") {
		return unquoteIdent(toks[n-1].text)
	}
	return ""
}

func unquoteIdent(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return s
}
