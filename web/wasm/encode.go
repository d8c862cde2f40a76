package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"cachebook/engine"
	"cachebook/engine/sql"
)

// maxRows is the number of result rows sent to the page; the total is
// always reported so the UI can say what was cut.
const maxRows = 1000

// column is one result column as the page sees it.
type column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// statement is one statement's result, the same shape as an entry of
// "statements" in the server's application/vnd.cachebook.result+json
// (docs/protocol.md §3.5): every value is the engine's text or null.
type statement struct {
	Statement string           `json:"statement"`
	Columns   []column         `json:"columns"`
	Rows      [][]*string      `json:"rows"`
	RowCount  int              `json:"row_count"`
	Truncated bool             `json:"truncated"`
	Message   string           `json:"message"`
	ElapsedNS int64            `json:"elapsed_ns"`
	Plan      *engine.PlanNode `json:"plan,omitempty"`
}

// position is a 1-based line and column (in runes) and a 0-based byte
// offset into the cell's code.
type position struct {
	Line   int `json:"line"`
	Col    int `json:"col"`
	Offset int `json:"offset"`
}

// errorInfo is a failed cell, shaped like the protocol's error message.
type errorInfo struct {
	Ename          string    `json:"ename"`
	Evalue         string    `json:"evalue"`
	Traceback      []string  `json:"traceback,omitempty"`
	Position       *position `json:"position,omitempty"`
	StatementIndex int       `json:"statement_index"`
}

// timings is the cell's run time (no admission queue in the browser).
type timings struct {
	RunNS   int64 `json:"run_ns"`
	TotalNS int64 `json:"total_ns"`
}

// execReply is the answer to one exec call: the result bundle of the
// statements that ran and, when one failed, the error.
type execReply struct {
	Statements []statement `json:"statements"`
	Timings    timings     `json:"timings"`
	Error      *errorInfo  `json:"error,omitempty"`
}

// encodeResult converts an engine result into the page's shape, keeping
// at most limit rows.
func encodeResult(r *engine.Result, limit int) statement {
	t := statement{
		Statement: r.Statement,
		Columns:   []column{},
		Rows:      [][]*string{},
		RowCount:  r.Rows,
		Message:   r.Message,
		ElapsedNS: int64(r.Elapsed),
		Plan:      r.Plan,
	}
	for _, c := range r.Columns {
		t.Columns = append(t.Columns, column{Name: c.Name, Type: c.Type.String()})
	}
	n := r.Rows
	if n > limit {
		n = limit
		t.Truncated = true
	}
	for i := 0; i < n; i++ {
		row := make([]*string, len(r.Vecs))
		for j, v := range r.Vecs {
			if !v.IsNull(i) {
				s := v.Format(i)
				row[j] = &s
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// encodeError describes err, with its SQL position when it has one. index
// is the failing statement's index in the cell.
func encodeError(err error, src string, index int, cancelled bool) *errorInfo {
	e := &errorInfo{Ename: "ExecutionError", Evalue: err.Error(), StatementIndex: index}
	var se *sql.Error
	switch {
	case errors.As(err, &se):
		e.Ename = "SQLError"
		e.Position = &position{Line: se.Pos.Line, Col: se.Pos.Col, Offset: se.Pos.Offset}
		if c := se.Caret(src); c != "" {
			e.Traceback = append(strings.Split(c, "\n"), se.Error())
		}
	case cancelled || errors.Is(err, context.Canceled):
		e.Ename, e.Evalue = "Interrupted", "interrupted"
	}
	return e
}

// encodeExec builds the reply to an exec call.
func encodeExec(results []*engine.Result, err error, src string, cancelled bool, elapsed time.Duration) execReply {
	rep := execReply{Statements: []statement{}, Timings: timings{RunNS: int64(elapsed), TotalNS: int64(elapsed)}}
	for _, r := range results {
		if r != nil {
			rep.Statements = append(rep.Statements, encodeResult(r, maxRows))
		}
	}
	if err != nil {
		rep.Error = encodeError(err, src, len(rep.Statements), cancelled)
	}
	return rep
}
