package predict

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// This file parses and evaluates measures (see the package documentation
// for the grammar).

// maxMeasure bounds the length of a measure, and maxDepth its nesting.
const (
	maxMeasure = 1024
	maxDepth   = 32
)

// Error is a measure that does not parse: the position (a 1-based column,
// counted in bytes) and the cause.
type Error struct {
	Measure string
	Col     int
	Msg     string
}

func (e *Error) Error() string {
	return fmt.Sprintf("predict: measure %q, column %d: %s", e.Measure, e.Col, e.Msg)
}

// Measure is a parsed measure.
type Measure struct {
	src  string
	root node
}

// String returns the measure's source.
func (m *Measure) String() string { return m.src }

// UsesSQL reports whether the measure reads an SQL result (elapsed, rows,
// scanned, failed, value), and UsesData whether it reads a measurement; a valid measure
// does not do both.
func (m *Measure) UsesSQL() bool { return m.root.uses(true) }

// UsesData reports whether the measure reads a measurement's members.
func (m *Measure) UsesData() bool { return m.root.uses(false) }

// Queries returns the highest query number the measure refers to (0: none).
func (m *Measure) Queries() int { return m.root.maxQuery() }

// ReadsFailure reports whether the measure asks whether a query failed
// (failed(N)): it is then evaluated on a cell that failed too.
func (m *Measure) ReadsFailure() bool { return m.root.readsFailure() }

type node interface {
	eval(r Result) (float64, error)
	uses(sql bool) bool
	maxQuery() int
	readsFailure() bool
}

type numNode float64

func (n numNode) eval(Result) (float64, error) { return float64(n), nil }
func (numNode) uses(bool) bool                 { return false }
func (numNode) maxQuery() int                  { return 0 }
func (numNode) readsFailure() bool             { return false }

type binNode struct {
	op   byte
	l, r node
}

func (b binNode) eval(r Result) (float64, error) {
	l, err := b.l.eval(r)
	if err != nil {
		return 0, err
	}
	rv, err := b.r.eval(r)
	if err != nil {
		return 0, err
	}
	var v float64
	switch b.op {
	case '+':
		v = l + rv
	case '-':
		v = l - rv
	case '*':
		v = l * rv
	case '/':
		if rv == 0 {
			return 0, errors.New("division by zero")
		}
		v = l / rv
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errors.New("the value is not a finite number")
	}
	return v, nil
}
func (b binNode) uses(sql bool) bool { return b.l.uses(sql) || b.r.uses(sql) }
func (b binNode) maxQuery() int      { return max(b.l.maxQuery(), b.r.maxQuery()) }
func (b binNode) readsFailure() bool { return b.l.readsFailure() || b.r.readsFailure() }

type negNode struct{ x node }

func (n negNode) eval(r Result) (float64, error) {
	v, err := n.x.eval(r)
	return -v, err
}
func (n negNode) uses(sql bool) bool { return n.x.uses(sql) }
func (n negNode) maxQuery() int      { return n.x.maxQuery() }
func (n negNode) readsFailure() bool { return n.x.readsFailure() }

// queryNode is elapsed(N), rows(N), scanned(N), failed(N) or
// value(N, column).
type queryNode struct {
	fn     string
	n      int
	column string
}

func (q queryNode) uses(sql bool) bool { return sql }
func (q queryNode) maxQuery() int      { return q.n }
func (q queryNode) readsFailure() bool { return q.fn == "failed" }

func (q queryNode) eval(r Result) (float64, error) {
	if q.n > len(r.Queries) {
		return 0, fmt.Errorf("%s(%d): the cell ran %d quer%s (statements that return a table)", q.fn, q.n, len(r.Queries), plural(len(r.Queries), "y", "ies"))
	}
	st := r.Queries[q.n-1]
	if q.fn == "failed" {
		if st.Error != "" {
			return 1, nil
		}
		return 0, nil
	}
	if st.Error != "" {
		return 0, fmt.Errorf("%s(%d): the query failed (%s)", q.fn, q.n, st.Error)
	}
	switch q.fn {
	case "elapsed":
		return float64(st.ElapsedNs), nil
	case "rows":
		return float64(st.RowCount), nil
	case "scanned":
		if st.Scanned <= 0 {
			return 0, fmt.Errorf("scanned(%d): the query read no table rows (or its plan does not say)", q.n)
		}
		return float64(st.Scanned), nil
	}
	for i, c := range st.Columns {
		if c != q.column {
			continue
		}
		if len(st.First) <= i || st.First[i] == nil {
			return 0, fmt.Errorf("value(%d, %s): the query returned no value in its first row", q.n, q.column)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(*st.First[i]), 64)
		if err != nil {
			return 0, fmt.Errorf("value(%d, %s): %q is not a number", q.n, q.column, *st.First[i])
		}
		return v, nil
	}
	return 0, fmt.Errorf("value(%d, %s): the query has no column %s (it has %s)", q.n, q.column, q.column, strings.Join(st.Columns, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// cond is one key=value of a selector.
type cond struct{ key, value string }

// pathNode is field or array[sel].field.
type pathNode struct {
	array string // "" for a top-level field
	first bool
	last  bool
	conds []cond
	field string
}

func (p pathNode) uses(sql bool) bool { return !sql }
func (pathNode) maxQuery() int        { return 0 }
func (pathNode) readsFailure() bool   { return false }

func (p pathNode) eval(r Result) (float64, error) {
	obj, ok := r.Data.(map[string]any)
	if !ok {
		return 0, fmt.Errorf("%s: the cell produced no measurement to read it from", p)
	}
	if p.array != "" {
		arr, ok := obj[p.array].([]any)
		if !ok {
			return 0, fmt.Errorf("%s: the measurement has no list %q (it has %s)", p, p.array, members(obj))
		}
		var el map[string]any
		switch {
		case len(arr) == 0:
			return 0, fmt.Errorf("%s: the list %q is empty", p, p.array)
		case p.first:
			el, _ = arr[0].(map[string]any)
		case p.last:
			el, _ = arr[len(arr)-1].(map[string]any)
		default:
			for _, e := range arr {
				m, ok := e.(map[string]any)
				if ok && matches(m, p.conds) {
					el = m
					break
				}
			}
			if el == nil {
				return 0, fmt.Errorf("%s: no element of %q matches", p, p.array)
			}
		}
		if el == nil {
			return 0, fmt.Errorf("%s: the element is not an object", p)
		}
		obj = el
	}
	v, ok := obj[p.field]
	if !ok {
		return 0, fmt.Errorf("%s: no member %q (there are %s)", p, p.field, members(obj))
	}
	f, ok := number(v)
	if !ok {
		return 0, fmt.Errorf("%s: member %q is not a number", p, p.field)
	}
	return f, nil
}

func (p pathNode) String() string {
	if p.array == "" {
		return p.field
	}
	sel := "first"
	switch {
	case p.last:
		sel = "last"
	case !p.first:
		parts := make([]string, len(p.conds))
		for i, c := range p.conds {
			parts[i] = c.key + "=" + c.value
		}
		sel = strings.Join(parts, ",")
	}
	return p.array + "[" + sel + "]." + p.field
}

// members lists an object's member names, sorted, for error messages.
func members(m map[string]any) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func matches(m map[string]any, conds []cond) bool {
	for _, c := range conds {
		v, ok := m[c.key]
		if !ok || text(v) != c.value {
			return false
		}
	}
	return true
}

// text renders a JSON value as a selector compares it.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	if f, ok := number(v); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// number converts a decoded JSON number (float64, json.Number or a Go
// number) to a float64.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case interface{ Float64() (float64, error) }:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// Result is what a measure reads: the queries of an SQL cell, or the
// measurement of any other cell as decoded JSON (objects as
// map[string]any, lists as []any).
type Result struct {
	Queries []Query
	Data    any
}

// Query is one statement of an SQL cell that returned a table, or the
// query the cell failed in (Error set; nothing else is known of it).
type Query struct {
	// Error is the name of the error the query failed with ("": none),
	// e.g. "MemoryLimit".
	Error     string
	ElapsedNs int64
	RowCount  int
	// Scanned is the number of rows the query read from its tables (0:
	// none, or not known).
	Scanned int64
	Columns []string
	// First is the first row's values as text (nil: NULL or no row).
	First []*string
}

// Eval computes the measure on r.
func (m *Measure) Eval(r Result) (float64, error) {
	v, err := m.root.eval(r)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errors.New("the value is not a finite number")
	}
	return v, nil
}

// Parse parses a measure.
func Parse(src string) (*Measure, error) {
	if strings.TrimSpace(src) == "" {
		return nil, &Error{Measure: src, Col: 1, Msg: "the measure is empty"}
	}
	if len(src) > maxMeasure {
		return nil, &Error{Measure: src[:40] + "…", Col: maxMeasure, Msg: fmt.Sprintf("longer than %d bytes", maxMeasure)}
	}
	p := &parser{src: src}
	p.next()
	root, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.errorf("unexpected %s after the end of the measure", p.tok)
	}
	m := &Measure{src: src, root: root}
	if m.UsesSQL() && m.UsesData() {
		return nil, &Error{Measure: src, Col: 1, Msg: "mixes SQL references (elapsed, rows, scanned, failed, value) with measurement members; a cell has one or the other"}
	}
	return m, nil
}

type tokKind int

const (
	tEOF tokKind = iota
	tNum
	tIdent
	tString
	tPunct
	tBad
)

type token struct {
	kind tokKind
	text string
	num  float64
	pos  int // byte offset
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of measure"
	case tString:
		return strconv.Quote(t.text)
	}
	return "'" + t.text + "'"
}

type parser struct {
	src string
	at  int
	tok token
}

func (p *parser) errorf(format string, args ...any) error {
	return &Error{Measure: p.src, Col: p.tok.pos + 1, Msg: fmt.Sprintf(format, args...)}
}

func isLetter(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// next reads the next token.
func (p *parser) next() {
	for p.at < len(p.src) && (p.src[p.at] == ' ' || p.src[p.at] == '\t' || p.src[p.at] == '\n' || p.src[p.at] == '\r') {
		p.at++
	}
	start := p.at
	if p.at >= len(p.src) {
		p.tok = token{kind: tEOF, pos: start}
		return
	}
	c := p.src[p.at]
	switch {
	case isDigit(c) || c == '.' && p.at+1 < len(p.src) && isDigit(p.src[p.at+1]):
		for p.at < len(p.src) && (isDigit(p.src[p.at]) || p.src[p.at] == '.') {
			p.at++
		}
		if p.at < len(p.src) && (p.src[p.at] == 'e' || p.src[p.at] == 'E') {
			j := p.at + 1
			if j < len(p.src) && (p.src[j] == '+' || p.src[j] == '-') {
				j++
			}
			if j < len(p.src) && isDigit(p.src[j]) {
				for p.at = j; p.at < len(p.src) && isDigit(p.src[p.at]); p.at++ {
				}
			}
		}
		text := p.src[start:p.at]
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			p.tok = token{kind: tBad, text: text, pos: start}
			return
		}
		p.tok = token{kind: tNum, text: text, num: f, pos: start}
	case isLetter(c):
		for p.at < len(p.src) && (isLetter(p.src[p.at]) || isDigit(p.src[p.at])) {
			p.at++
		}
		p.tok = token{kind: tIdent, text: p.src[start:p.at], pos: start}
	case c == '"':
		// A Go-quoted string: find its end, then unquote.
		j := p.at + 1
		for j < len(p.src) && p.src[j] != '"' {
			if p.src[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(p.src) {
			p.at = len(p.src)
			p.tok = token{kind: tBad, text: p.src[start:], pos: start}
			return
		}
		p.at = j + 1
		s, err := strconv.Unquote(p.src[start:p.at])
		if err != nil {
			p.tok = token{kind: tBad, text: p.src[start:p.at], pos: start}
			return
		}
		p.tok = token{kind: tString, text: s, pos: start}
	case strings.IndexByte("+-*/()[],.=", c) >= 0:
		p.at++
		p.tok = token{kind: tPunct, text: string(c), pos: start}
	default:
		p.at++
		p.tok = token{kind: tBad, text: string(c), pos: start}
	}
}

func (p *parser) is(punct string) bool { return p.tok.kind == tPunct && p.tok.text == punct }

func (p *parser) expect(punct, what string) error {
	if !p.is(punct) {
		return p.errorf("expected '%s' %s, found %s", punct, what, p.tok)
	}
	p.next()
	return nil
}

// expr = term {("+"|"-") term}
func (p *parser) expr(depth int) (node, error) {
	if depth > maxDepth {
		return nil, p.errorf("nested more than %d deep", maxDepth)
	}
	l, err := p.term(depth)
	if err != nil {
		return nil, err
	}
	for p.is("+") || p.is("-") {
		op := p.tok.text[0]
		p.next()
		r, err := p.term(depth)
		if err != nil {
			return nil, err
		}
		l = binNode{op: op, l: l, r: r}
	}
	return l, nil
}

// term = factor {("*"|"/") factor}
func (p *parser) term(depth int) (node, error) {
	l, err := p.factor(depth)
	if err != nil {
		return nil, err
	}
	for p.is("*") || p.is("/") {
		op := p.tok.text[0]
		p.next()
		r, err := p.factor(depth)
		if err != nil {
			return nil, err
		}
		l = binNode{op: op, l: l, r: r}
	}
	return l, nil
}

// factor = number | "-" factor | "(" expr ")" | reference
func (p *parser) factor(depth int) (node, error) {
	switch {
	case p.tok.kind == tNum:
		n := numNode(p.tok.num)
		p.next()
		return n, nil
	case p.is("-"):
		p.next()
		if depth > maxDepth {
			return nil, p.errorf("nested more than %d deep", maxDepth)
		}
		x, err := p.factor(depth + 1)
		if err != nil {
			return nil, err
		}
		return negNode{x}, nil
	case p.is("("):
		p.next()
		x, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if err := p.expect(")", "to close '('"); err != nil {
			return nil, err
		}
		return x, nil
	case p.tok.kind == tIdent:
		return p.reference()
	case p.tok.kind == tBad:
		return nil, p.errorf("cannot read %s", p.tok)
	case p.tok.kind == tEOF:
		return nil, p.errorf("the measure ends where a number or a reference is expected")
	}
	return nil, p.errorf("expected a number, a reference or '(', found %s", p.tok)
}

// reference = ("elapsed"|"rows"|"scanned"|"failed") "(" N ")" | "value" "(" N "," column ")"
// | ident | ident "[" selector "]" "." ident
func (p *parser) reference() (node, error) {
	name := p.tok
	p.next()
	if p.is("(") {
		switch name.text {
		case "elapsed", "rows", "scanned", "failed", "value":
		default:
			p.tok = name
			return nil, p.errorf("unknown function %s: the functions are elapsed(N), rows(N), scanned(N), failed(N) and value(N, column)", name.text)
		}
		p.next()
		if p.tok.kind != tNum || p.tok.num != math.Trunc(p.tok.num) || p.tok.num < 1 || p.tok.num > 1000 || strings.ContainsAny(p.tok.text, ".eE") {
			return nil, p.errorf("%s: expected the query number (1 for the cell's first query), found %s", name.text, p.tok)
		}
		q := queryNode{fn: name.text, n: int(p.tok.num)}
		p.next()
		if name.text == "value" {
			if err := p.expect(",", "and a column name after the query number"); err != nil {
				return nil, err
			}
			if p.tok.kind != tIdent && p.tok.kind != tString {
				return nil, p.errorf("value: expected a column name, found %s", p.tok)
			}
			q.column = p.tok.text
			p.next()
		}
		if err := p.expect(")", "to close "+name.text+"("); err != nil {
			return nil, err
		}
		return q, nil
	}
	if !p.is("[") {
		return pathNode{field: name.text}, nil
	}
	path := pathNode{array: name.text}
	// The selector: first, last, or key=value{,key=value}; a value is a
	// Go-quoted string or the raw text up to the next ',' or ']'.
	p.next()
	switch {
	case p.tok.kind == tIdent && (p.tok.text == "first" || p.tok.text == "last") && p.peekPunct() == ']':
		path.first, path.last = p.tok.text == "first", p.tok.text == "last"
		p.next()
	default:
		for {
			if p.tok.kind != tIdent {
				return nil, p.errorf("%s[...]: expected first, last or key=value, found %s", name.text, p.tok)
			}
			key := p.tok.text
			p.next()
			if err := p.expect("=", "after the key "+key); err != nil {
				return nil, err
			}
			val, err := p.selectorValue(key)
			if err != nil {
				return nil, err
			}
			path.conds = append(path.conds, cond{key, val})
			if !p.is(",") {
				break
			}
			p.next()
		}
	}
	if err := p.expect("]", "to close the selector of "+name.text); err != nil {
		return nil, err
	}
	if err := p.expect(".", "and a member name after "+name.text+"[...]"); err != nil {
		return nil, err
	}
	if p.tok.kind != tIdent {
		return nil, p.errorf("expected a member name after '.', found %s", p.tok)
	}
	path.field = p.tok.text
	p.next()
	return path, nil
}

// peekPunct returns the next non-space byte after the current token.
func (p *parser) peekPunct() byte {
	for j := p.at; j < len(p.src); j++ {
		if c := p.src[j]; c != ' ' && c != '\t' {
			return c
		}
	}
	return 0
}

// selectorValue reads the value of key=value: a Go-quoted string, or the
// raw text from the current token up to the next ',' or ']' (spaces around
// it trimmed).
func (p *parser) selectorValue(key string) (string, error) {
	if p.tok.kind == tString {
		v := p.tok.text
		p.next()
		return v, nil
	}
	start := p.tok.pos
	end := start
	for end < len(p.src) && p.src[end] != ',' && p.src[end] != ']' {
		end++
	}
	v := strings.TrimSpace(p.src[start:end])
	if v == "" || strings.ContainsAny(v, "[\"") {
		return "", p.errorf("expected a value for %s (text up to ',' or ']', or a quoted string)", key)
	}
	p.at = end
	p.next()
	return v, nil
}
