package kernel

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"cachebook/engine"
	"cachebook/engine/gen/gentest"
	"cachebook/kernel/perf"
)

func TestMain(m *testing.M) {
	code := m.Run()
	gentest.Cleanup()
	os.Exit(code)
}

// hitsDB opens an engine on the shared generated hits table, as
// cmd/cachebook opens one for its kernels.
func hitsDB(t testing.TB) *engine.DB {
	t.Helper()
	db, err := engine.Open(engine.Options{DataDir: gentest.HitsDir(t)})
	if err != nil {
		t.Fatalf("engine.Open: %v", err)
	}
	return db
}

func newEngineExecutor(t *testing.T) *Executor {
	t.Helper()
	x, err := NewExecutor(Config{DB: hitsDB(t), Logger: quietLogger()})
	if err != nil {
		t.Fatalf("NewExecutor: %v", err)
	}
	return x
}

func TestSQLCellRealEngine(t *testing.T) {
	x := newEngineExecutor(t)
	var rec recorder
	reply, err := x.Execute(context.Background(), Cell{Kind: KindSQL,
		Source: "SET group_by = 'radix'; SELECT UserID, count(*) AS c FROM hits GROUP BY UserID ORDER BY c DESC LIMIT 5"}, rec.emit)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	b := reply.Outcome.Data[MIMEResult].(*ResultBundle)
	if len(b.Statements) != 2 || len(b.Statements[1].Rows) != 5 || b.Statements[1].RowCount != 5 {
		t.Fatalf("bundle %+v", b)
	}
	st := b.Statements[1]
	if st.Columns[0].Name != "UserID" || st.Columns[0].Type != "BIGINT" || st.Plan == nil || st.ElapsedNs <= 0 || b.Timings == nil {
		t.Fatalf("statement %+v", st)
	}
	if !strings.Contains(reply.Outcome.Data[MIMEText].(string), "(5 rows)") {
		t.Fatalf("text %q", reply.Outcome.Data[MIMEText])
	}
	// SET persists in the session until a restart.
	if g := x.eng.Settings().GroupBy; g != "radix" {
		t.Fatalf("group_by after SET = %q", g)
	}
	if _, err := x.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g := x.eng.Settings().GroupBy; g == "radix" {
		t.Fatalf("group_by survived a restart")
	}
	// A big result is capped; the count stays.
	x.limits.MaxRows = 10
	reply, err = x.Execute(context.Background(), Cell{Source: "SELECT UserID, count(*) FROM hits GROUP BY UserID"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st = reply.Outcome.Data[MIMEResult].(*ResultBundle).Statements[0]
	if len(st.Rows) != 10 || st.RowCount <= 10 || !st.Truncated {
		t.Fatalf("capped result: %d rows of %d", len(st.Rows), st.RowCount)
	}
}

func TestSQLErrorRealEngine(t *testing.T) {
	x := newEngineExecutor(t)
	src := "SELECT 1;\nSELECT UserId, count(* FROM hits"
	reply, err := x.Execute(context.Background(), Cell{Source: src}, nil)
	var f *Failure
	if !errors.As(err, &f) || reply.Ename != ErrSQL {
		t.Fatalf("err %v reply %+v", err, reply.ExecuteReply)
	}
	ec := reply.Error
	if ec.Position == nil || ec.Position.Line != 2 || ec.Position.Offset <= len("SELECT 1;\n") || len(ec.Traceback) != 3 ||
		!strings.HasSuffix(ec.Traceback[1], "^") {
		t.Fatalf("error %+v", ec)
	}
	t.Logf("SQL error: %s\n%s", ec.Evalue, strings.Join(ec.Traceback, "\n"))
	// A binding error: the position points at the unknown name.
	reply, _ = x.Execute(context.Background(), Cell{Source: "SELECT nosuchcolumn FROM hits"}, nil)
	if reply.Ename != ErrSQL || reply.Error.Position == nil || reply.Error.Position.Col != 8 {
		t.Fatalf("binding error %+v %+v", reply.ExecuteReply, reply.Error)
	}
	// A statement that fails while running, after one that ran: its
	// result comes first and statement_index says which one failed.
	reply, _ = x.Execute(context.Background(), Cell{Source: "SELECT 1; SELECT count(*) FROM no_such_table"}, nil)
	t.Logf("missing table: %s %q position=%v index=%v", reply.Ename, reply.Evalue, reply.Error.Position, reply.Error.StatementIndex)
}

func TestInterruptRealQuery(t *testing.T) {
	x := newEngineExecutor(t)
	// Many real GROUP BY statements: the engine checks ctx between batches
	// and between statements.
	src := strings.Repeat("SELECT UserID, SearchPhrase, count(*) FROM hits GROUP BY UserID, SearchPhrase ORDER BY 3 DESC LIMIT 3;\n", 2000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan time.Time, 1)
	var reply *Reply
	go func() {
		reply, _ = x.Execute(ctx, Cell{Source: src}, nil)
		done <- time.Now()
	}()
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	cancel()
	end := <-done
	if reply.Ename != ErrInterrupted {
		t.Fatalf("reply %+v", reply.ExecuteReply)
	}
	if d := end.Sub(t0); d > interruptBound {
		t.Fatalf("real query stopped %v after the interrupt", d)
	} else {
		t.Logf("real query interrupt latency: %v", d)
	}
	// The engine session is usable right after.
	if err := x.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Execute(context.Background(), Cell{Source: "SELECT count(*) FROM hits"}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestSQLCountersRealEngine(t *testing.T) {
	x := newEngineExecutor(t)
	cell := Cell{Source: "SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC LIMIT 3", Attrs: map[string]string{"counters": "on"}}
	if x.Class(cell) != Exclusive {
		t.Fatal("a counted sql cell must run alone")
	}
	reply, err := x.Execute(context.Background(), cell, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, ok := reply.Outcome.Data[MIMEResult].(*ResultBundle).Counters.(*perf.Report)
	if !ok || len(rep.Workers) == 0 {
		t.Fatalf("counters %#v", reply.Outcome.Data[MIMEResult].(*ResultBundle).Counters)
	}
}

func TestMemoryLimitRealEngine(t *testing.T) {
	x := newEngineExecutor(t)
	reply, _ := x.Execute(context.Background(), Cell{Source: "SET memory_limit = '16KB'; SELECT UserID, count(*) FROM hits GROUP BY UserID"}, nil)
	if reply.Ename != ErrMemoryLimit || !strings.Contains(reply.Evalue, "memory limit") {
		t.Fatalf("reply %+v", reply.ExecuteReply)
	}
	t.Logf("%s: %s", reply.Ename, reply.Evalue)
}

// TestSQLAttributes: an sql cell's attributes are engine settings for that
// cell only; anything else is refused before the cell runs.
func TestSQLAttributes(t *testing.T) {
	x := newEngineExecutor(t)
	strategy := func(reply *Reply) string {
		b := reply.Outcome.Data[MIMEResult].(*ResultBundle)
		var walk func(n *engine.PlanNode) string
		walk = func(n *engine.PlanNode) string {
			if n == nil {
				return ""
			}
			for _, d := range n.Detail {
				if strings.Contains(d, "radix") || strings.Contains(d, "naive") {
					return d
				}
			}
			for _, c := range n.Children {
				if s := walk(c); s != "" {
					return s
				}
			}
			return ""
		}
		return walk(b.Statements[len(b.Statements)-1].Plan)
	}
	q := "SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC LIMIT 3"
	reply, err := x.Execute(context.Background(), Cell{Source: q, Attrs: map[string]string{"group_by": "radix", "timeout": "1m"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := strategy(reply); !strings.Contains(s, "SET group_by = 'radix'") {
		t.Errorf("group_by=radix attribute: plan says %q", s)
	}
	reply, _ = x.Execute(context.Background(), Cell{Source: q, Attrs: map[string]string{"group_by": "naive"}}, nil)
	if s := strategy(reply); !strings.Contains(s, "SET group_by = 'naive'") {
		t.Errorf("group_by=naive attribute: plan says %q", s)
	}
	if got := x.eng.Settings().GroupBy; got == "radix" {
		t.Errorf("the attribute leaked into the session: group_by = %q", got)
	}
	for attrs, want := range map[string]string{"colour": "attribute colour=red", "group_by": "group_by must be"} {
		reply, _ := x.Execute(context.Background(), Cell{Source: q, Attrs: map[string]string{attrs: "red"}}, nil)
		if reply.Ename != ErrExecution || !strings.Contains(reply.Evalue, want) {
			t.Errorf("attribute %s=red: %s %q", attrs, reply.Ename, reply.Evalue)
		}
	}
}

// TestInterruptStopsTheWork: an interrupt must stop the engine's work, not
// only the reply — the next cell starts within the interrupt bound (it
// waited 0.5–1.4 s after a REGEXP_REPLACE scan when only the reply stopped).
func TestInterruptStopsTheWork(t *testing.T) {
	x := newEngineExecutor(t)
	for _, src := range []string{
		"SELECT count(*) FROM hits WHERE REGEXP_REPLACE(URL, '^(.*)$', '" + strings.Repeat(`\1`, 200) + "') LIKE '%x%'",
		strings.Repeat("SELECT SearchPhrase, count(*) FROM hits GROUP BY SearchPhrase ORDER BY 2 DESC LIMIT 3;\n", 5000),
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan *Reply, 1)
		go func() {
			r, _ := x.Execute(ctx, Cell{Source: src}, nil)
			done <- r
		}()
		time.Sleep(300 * time.Millisecond)
		t0 := time.Now()
		cancel()
		if r := <-done; r.Ename != ErrInterrupted {
			t.Fatalf("%.50s: reply %+v, want Interrupted (make the cell longer)", src, r.ExecuteReply)
		}
		if err := x.WaitIdle(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := x.Execute(context.Background(), Cell{Source: "SELECT 1"}, nil); err != nil {
			t.Fatal(err)
		}
		d := time.Since(t0)
		t.Logf("%.50s: next cell answered %v after the interrupt", src, d)
		if d > interruptBound {
			t.Errorf("%.50s: the next cell answered %v after the interrupt, want ≤ %v", src, d, interruptBound)
		}
	}
}
