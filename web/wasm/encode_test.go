package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cachebook/engine"
	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

func intVec(xs ...int64) *vec.Vector {
	v := vec.NewVector(vec.Int64, len(xs))
	for _, x := range xs {
		v.AppendInt(x)
	}
	return v
}

func TestEncodeResult(t *testing.T) {
	s := vec.NewVector(vec.String, 3)
	s.AppendStr([]byte("a"))
	s.AppendNull()
	s.AppendStr([]byte("ü"))
	r := &engine.Result{
		Statement: "SELECT k, s FROM t",
		Columns:   []vec.Column{{Name: "k", Type: vec.Int64}, {Name: "s", Type: vec.String}},
		Vecs:      []*vec.Vector{intVec(435090932899640449, -1, 0), s},
		Rows:      3,
		Elapsed:   time.Millisecond,
	}
	tests := []struct {
		limit     int
		wantRows  int
		truncated bool
	}{
		{limit: 10, wantRows: 3},
		{limit: 3, wantRows: 3},
		{limit: 2, wantRows: 2, truncated: true},
		{limit: 0, wantRows: 0, truncated: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			st := encodeResult(r, tt.limit)
			if len(st.Rows) != tt.wantRows || st.Truncated != tt.truncated || st.RowCount != 3 {
				t.Fatalf("rows %d truncated %v count %d, want %d %v 3", len(st.Rows), st.Truncated, st.RowCount, tt.wantRows, tt.truncated)
			}
			if st.Columns[0].Type != "BIGINT" || st.Columns[1].Type != "VARCHAR" {
				t.Errorf("column types %v", st.Columns)
			}
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantRows == 3 && !strings.Contains(string(b), `"rows":[["435090932899640449","a"],["-1",null],["0","ü"]]`) {
				t.Errorf("rows JSON: %s", b)
			}
		})
	}
}

func TestEncodeError(t *testing.T) {
	src := "SELECT\n  UserId FROM hits"
	tests := []struct {
		name      string
		err       error
		cancelled bool
		ename     string
		line, col int
	}{
		{"sql", fmt.Errorf("bind: %w", &sql.Error{Pos: sql.Pos{Offset: 9, Line: 2, Col: 3}, Msg: `unknown column "UserId"`}), false, "SQLError", 2, 3},
		{"cancel", context.Canceled, false, "Interrupted", 0, 0},
		{"cancelled flag", errors.New("stopped"), true, "Interrupted", 0, 0},
		{"other", errors.New("boom"), false, "ExecutionError", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := encodeError(tt.err, src, 1, tt.cancelled)
			if e.Ename != tt.ename {
				t.Fatalf("ename %q, want %q", e.Ename, tt.ename)
			}
			if tt.line == 0 {
				if e.Position != nil {
					t.Errorf("unexpected position %+v", e.Position)
				}
				return
			}
			if e.Position == nil || e.Position.Line != tt.line || e.Position.Col != tt.col {
				t.Fatalf("position %+v, want %d:%d", e.Position, tt.line, tt.col)
			}
			if len(e.Traceback) != 3 || e.Traceback[0] != "  UserId FROM hits" || e.Traceback[1] != "  ^" {
				t.Errorf("traceback %q", e.Traceback)
			}
		})
	}
}

func TestEncodeExec(t *testing.T) {
	r := &engine.Result{Statement: "SET group_by = 'radix'", Message: "SET"}
	rep := encodeExec([]*engine.Result{r, nil}, errors.New("boom"), "", false, time.Second)
	if len(rep.Statements) != 1 || rep.Statements[0].Message != "SET" || rep.Error == nil || rep.Error.StatementIndex != 1 {
		t.Fatalf("reply %+v", rep)
	}
	if rep.Timings.RunNS != int64(time.Second) {
		t.Errorf("run_ns %d", rep.Timings.RunNS)
	}
	b, _ := json.Marshal(encodeExec(nil, nil, "", false, 0))
	if !strings.Contains(string(b), `"statements":[]`) || strings.Contains(string(b), `"error"`) {
		t.Errorf("empty reply %s", b)
	}
}
