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
	lines := strings.Split(src, "\n")
	if e.Pos.Line < 1 || e.Pos.Line > len(lines) {
		return ""
	}
	line := lines[e.Pos.Line-1]
	pad := make([]byte, 0, e.Pos.Col)
	col := 1
	for _, r := range line {
		if col >= e.Pos.Col {
			break
		}
		if r == '\t' {
			pad = append(pad, '\t')
		} else {
			pad = append(pad, ' ')
		}
		col++
	}
	return line + "\n" + string(pad) + "^"
}
