package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cachebook/engine/gen"
)

// The test binary doubles as duckbench: with DUCKBENCH_CHILD=1 it runs main
// instead of the tests, so the tests can speak the protocol over real pipes
// to a real process without building a second binary.
func TestMain(m *testing.M) {
	if os.Getenv("DUCKBENCH_CHILD") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is a running duckbench process.
type child struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "DUCKBENCH_CHILD=1")
	cmd.Stderr = os.Stderr
	dieWithParent(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, cmd: cmd, in: in, out: bufio.NewScanner(out)}
	c.out.Buffer(nil, 16<<20)
	t.Cleanup(func() {
		in.Close()
		if cmd.ProcessState == nil {
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		}
	})
	return c
}

// recv reads one reply line.
func (c *child) recv() Reply {
	c.t.Helper()
	if !c.out.Scan() {
		c.t.Fatalf("no reply: %v", c.out.Err())
	}
	var r Reply
	if err := json.Unmarshal(c.out.Bytes(), &r); err != nil {
		c.t.Fatalf("reply %q: %v", c.out.Text(), err)
	}
	return r
}

// call sends one request line and reads the reply.
func (c *child) call(line string) Reply {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
	return c.recv()
}

func TestProcess(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hits.parquet")
	if err := gen.WriteFile(context.Background(), path, gen.Options{Rows: 20_000, Order: "clustered", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "-threads", "1", "-memory-limit", "1GB")
	hello := c.recv()
	if !hello.OK || hello.Op != "hello" || hello.Protocol != ProtocolVersion || !strings.HasPrefix(hello.DuckDB, "v") ||
		hello.Threads != 1 {
		t.Fatalf("hello = %+v", hello)
	}

	req := func(v map[string]any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	r := c.call(req(map[string]any{"op": "load", "parquet": path, "table": "hits", "id": 7}))
	if !r.OK || r.Rows == nil || *r.Rows != 20_000 || r.NS <= 0 || string(r.ID) != "7" || r.Op != "load" {
		t.Fatalf("load = %+v (%s)", r, r.Error)
	}

	r = c.call(req(map[string]any{"op": "load", "parquet": path, "table": "narrow", "columns": []string{"UserID", "EventDate"}}))
	if !r.OK || r.Rows == nil || *r.Rows != 20_000 {
		t.Fatalf("load with columns = %+v (%s)", r, r.Error)
	}
	r = c.call(req(map[string]any{"op": "query", "return_rows": 2,
		"sql": "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'narrow' ORDER BY ordinal_position"}))
	var cols []string
	for _, row := range r.Result {
		for _, v := range row {
			if v != nil {
				cols = append(cols, *v)
			}
		}
	}
	if got := strings.Join(cols, " "); !r.OK || got != "UserID BIGINT EventDate DATE" {
		t.Fatalf("narrow table columns: %s (%s)", got, r.Error)
	}
	r = c.call(req(map[string]any{"op": "load", "parquet": path, "table": "bad", "columns": []string{"NoSuchColumn"}}))
	if r.OK || !strings.Contains(r.Error, "NoSuchColumn") {
		t.Fatalf("load with an unknown column = %+v", r)
	}

	tests := []struct {
		name    string
		req     map[string]any
		ok      bool
		rows    int64
		want    [][]string // expected result (nil entries as "NULL"); nil: not checked
		errLike string
	}{
		{name: "count", req: map[string]any{"op": "query", "sql": "SELECT COUNT(*) FROM hits", "threads": 2, "return_rows": 5},
			ok: true, rows: 1, want: [][]string{{"20000"}}},
		{name: "dates are DATEs", req: map[string]any{"op": "query", "threads": 1, "return_rows": 1,
			"sql": "SELECT MIN(EventDate) >= DATE '2013-07-01', typeof(MIN(EventDate)) FROM hits"},
			ok: true, rows: 1, want: [][]string{{"true", "DATE"}}},
		{name: "macro and null", req: map[string]any{"op": "query", "return_rows": 2,
			"sql": "SELECT toDateTime(0), NULL::INTEGER, DATE '2013-07-15', 1.5::DOUBLE, 170141183460469231731687303715884105727::HUGEINT"},
			ok: true, rows: 1, want: [][]string{{"1970-01-01 00:00:00", "NULL", "2013-07-15", "1.5",
				"170141183460469231731687303715884105727"}}},
		{name: "rows counted beyond return_rows", req: map[string]any{"op": "query", "return_rows": 2,
			"sql": "SELECT UserID, COUNT(*) FROM hits GROUP BY UserID"}, ok: true, rows: -1},
		{name: "clickbench Q15", req: map[string]any{"op": "query", "threads": 1,
			"sql": "SELECT UserID, COUNT(*) FROM hits GROUP BY UserID ORDER BY COUNT(*) DESC LIMIT 10;"}, ok: true, rows: 10},
		{name: "exec", req: map[string]any{"op": "exec", "sql": "CREATE TABLE t AS SELECT 1 AS x"}, ok: true},
		{name: "syntax error", req: map[string]any{"op": "query", "sql": "SELEC 1"}, errLike: "syntax"},
		{name: "missing table", req: map[string]any{"op": "query", "sql": "SELECT * FROM nope"}, errLike: "nope"},
		{name: "unknown op", req: map[string]any{"op": "frobnicate"}, errLike: "unknown op"},
		{name: "missing op", req: map[string]any{}, errLike: "missing op"},
		{name: "empty sql", req: map[string]any{"op": "query"}, errLike: "empty sql"},
		{name: "negative threads", req: map[string]any{"op": "query", "sql": "SELECT 1", "threads": -1}, errLike: "negative"},
		{name: "load missing file", req: map[string]any{"op": "load", "parquet": filepath.Join(dir, "none.parquet"), "table": "x"},
			errLike: "none.parquet"},
		// The deadline passes while DuckDB executes. With a 1 ms deadline
		// and a 10^12-row join, the request after this one hung in about
		// 1 of 30 runs: the deadline could pass before execution began,
		// and the join apparently ran on behind the error reply. This join
		// would end within seconds even uninterrupted, so a lost interrupt
		// fails the test instead of hanging it.
		{name: "timeout", req: map[string]any{"op": "query", "timeout_ms": 200,
			"sql": "SELECT COUNT(*) FROM range(1000000000) a, range(4) b WHERE a.range + b.range = 7"}, errLike: "interrupt"},
		{name: "still alive after errors", req: map[string]any{"op": "query", "sql": "SELECT x FROM t", "return_rows": 1},
			ok: true, rows: 1, want: [][]string{{"1"}}},
	}
	for _, tt := range tests {
		r := c.call(req(tt.req))
		if r.OK != tt.ok {
			t.Errorf("%s: ok = %v, error %q", tt.name, r.OK, r.Error)
			continue
		}
		if !tt.ok {
			if !strings.Contains(strings.ToLower(r.Error), tt.errLike) {
				t.Errorf("%s: error %q does not mention %q", tt.name, r.Error, tt.errLike)
			}
			continue
		}
		if tt.req["op"] != "query" {
			continue
		}
		if r.Rows == nil || (tt.rows >= 0 && *r.Rows != tt.rows) || r.NS <= 0 {
			t.Errorf("%s: reply %+v, want %d rows", tt.name, r, tt.rows)
			continue
		}
		if rr, _ := tt.req["return_rows"].(int); len(r.Result) != int(min(int64(rr), *r.Rows)) {
			t.Errorf("%s: %d result rows returned, want %d", tt.name, len(r.Result), min(int64(rr), *r.Rows))
		}
		if tt.want != nil {
			got := make([][]string, len(r.Result))
			for i, row := range r.Result {
				for _, v := range row {
					if v == nil {
						got[i] = append(got[i], "NULL")
					} else {
						got[i] = append(got[i], *v)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("%s: result %q, want %q", tt.name, got, tt.want)
			}
		}
	}
	if r := c.call("{not json"); r.OK || !strings.Contains(r.Error, "bad request") {
		t.Errorf("bad json: %+v", r)
	}
	if r := c.call(`{"op":"quit","id":"bye"}`); !r.OK || string(r.ID) != `"bye"` {
		t.Errorf("quit: %+v", r)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Errorf("exit: %v", err)
	}
}

// FuzzServe feeds arbitrary request lines to a server whose DuckDB may not
// touch files: every line must get exactly one well-formed reply, and the
// server must not fail.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		`{"op":"query","sql":"SELECT 1","return_rows":1}`,
		`{"op":"query","sql":"SELECT range FROM range(3)","threads":1,"id":[1]}`,
		`{"op":"exec","sql":"CREATE TABLE t(x INT)"}`,
		`{"op":"load","parquet":"/nonexistent.parquet","table":"t"}`,
		`{"op":"quit"}`,
		`{"op":`,
		`[]`,
	} {
		f.Add(s)
	}
	ctx := context.Background()
	s, err := newServer(ctx, 1, "256MB")
	if err != nil {
		f.Fatal(err)
	}
	defer s.close()
	if _, err := s.conn.ExecContext(ctx, "SET enable_external_access = false"); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var lines []string
		for _, l := range strings.Split(in, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		var out bytes.Buffer
		if err := s.serve(ctx, strings.NewReader(in), &out); err != nil {
			if strings.Contains(err.Error(), "token too long") {
				return
			}
			t.Fatalf("serve: %v", err)
		}
		replies := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(replies) < 1 || len(replies) > len(lines)+1 {
			t.Fatalf("%d replies to %d lines", len(replies), len(lines))
		}
		for _, r := range replies {
			var rep Reply
			if err := json.Unmarshal([]byte(r), &rep); err != nil {
				t.Fatalf("reply %q: %v", r, err)
			}
			if !rep.OK && rep.Error == "" {
				t.Fatalf("failed reply without error: %q", r)
			}
		}
	})
}

// TestOneShot checks -query mode: one reply line for the query over a
// view of the file, an error reply (and an error) for a failing query.
func TestOneShot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hits.parquet")
	if err := gen.WriteFile(context.Background(), path, gen.Options{Rows: 5_000, Order: "shuffled", Seed: 2}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, parquet, sql string
		ok                 bool
		rows               int64
		first              string // the first row, values joined by spaces
		errLike            string
	}{
		{"count", path, "SELECT COUNT(*), typeof(MIN(EventDate)) FROM hits", true, 1, "5000 DATE", ""},
		{"group by", path, "SELECT UserID, COUNT(*) FROM hits GROUP BY UserID", true, -1, "", ""},
		{"bad column", path, "SELECT nope FROM hits", false, 0, "", "nope"},
		{"no file", "", "SELECT 1", false, 0, "", "-parquet"},
		{"missing file", filepath.Join(dir, "none.parquet"), "SELECT 1", false, 0, "", "none.parquet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := runOne(context.Background(), &out, 1, "256MB", filepath.Join(dir, "tmp"), tt.parquet, tt.sql)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok %v", err, tt.ok)
			}
			if n := strings.Count(out.String(), "\n"); n != 1 {
				t.Fatalf("%d lines written, want 1: %q", n, out.String())
			}
			var r Reply
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatalf("reply %q: %v", out.String(), err)
			}
			if r.OK != tt.ok || r.Op != "query" {
				t.Fatalf("reply %+v", r)
			}
			if !tt.ok {
				if !strings.Contains(r.Error, tt.errLike) {
					t.Errorf("error %q does not mention %q", r.Error, tt.errLike)
				}
				return
			}
			if r.Rows == nil || (tt.rows >= 0 && *r.Rows != tt.rows) || *r.Rows < 1 || r.NS <= 0 || !strings.HasPrefix(r.DuckDB, "v") {
				t.Fatalf("reply %+v, want %d rows", r, tt.rows)
			}
			if tt.first != "" {
				var vals []string
				for _, v := range r.Result[0] {
					vals = append(vals, *v)
				}
				if got := strings.Join(vals, " "); got != tt.first {
					t.Errorf("first row %q, want %q", got, tt.first)
				}
			}
		})
	}
}
