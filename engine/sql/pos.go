// Package sql is cachebook's hand-written SQL front end: a lexer whose tokens
// carry positions, a recursive-descent statement parser and a Pratt
// expression parser producing the AST the planner binds.
package sql

import (
	"fmt"
	"strings"
)

// Pos is a position in the SQL text. Line and Col are 1-based; Col counts
// runes. Offset is the 0-based byte offset.
type Pos struct {
	Offset int
	Line   int
	Col    int
}

// String renders the position as line:col.
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Error is an error at a position of a statement: a syntax error, an unknown
// name, a type mismatch. Msg says what was expected and what was found.
type Error struct {
	Pos Pos
	Msg string
	// Err is the cause, when there is one that callers classify with
	// errors.Is or errors.As (Msg already describes it).
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Pos, e.Msg) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Caret renders the line of src that holds the error with a caret under the
// error's column, as compilers and DuckDB do:
//
//	SELECT UserId FROM hits
//	       ^
func (e *Error) Caret(src string) string {
	// Only the error's line is split off: a cell may be megabytes long.
	line, ok := nthLine(src, e.Pos.Line)
	if !ok {
		return ""
	}
	// A long line is cut to a window around the column, so that an error
	// in a huge cell does not copy the whole cell into every message.
	col := max(e.Pos.Col, 1)
	from, to := max(col-1-caretContext, 0), col-1+caretContext
	start, end, i := len(line), len(line), 0
	for off := range line { // rune by rune, stopping at the window's end
		if i == from {
			start = off
		}
		if i == to {
			end = off
			break
		}
		i++
	}
	lead, tail := "", ""
	if from > 0 {
		lead = "…"
	}
	if end < len(line) {
		tail = "…"
	}
	pad := []rune(lead)
	for j, r := range []rune(line[start:end]) {
		if from+j >= col-1 {
			break
		}
		if r == '\t' {
			pad = append(pad, '\t')
		} else {
			pad = append(pad, ' ')
		}
	}
	return lead + line[start:end] + tail + "\n" + string(pad) + "^"
}

// caretContext is how many characters Caret shows on each side of the
// error's column on a long line.
const caretContext = 80

// nthLine returns line n (1-based) of src without splitting the rest.
func nthLine(src string, n int) (string, bool) {
	if n < 1 {
		return "", false
	}
	for i := 1; i < n; i++ {
		j := strings.IndexByte(src, '\n')
		if j < 0 {
			return "", false
		}
		src = src[j+1:]
	}
	if j := strings.IndexByte(src, '\n'); j >= 0 {
		src = src[:j]
	}
	return src, true
}
