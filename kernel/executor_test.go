package kernel

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"cachebook/engine"
	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

func newTestExecutor(t *testing.T, lim Limits) *Executor {
	t.Helper()
	x, err := NewExecutor(Config{Registry: testRegistry(), Limits: lim, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestExecutorEcho(t *testing.T) {
	x := newTestExecutor(t, Limits{})
	for i := 1; i <= 2; i++ {
		var rec recorder
		reply, err := x.Execute(context.Background(), Cell{Kind: "echo", Source: "hi", ID: "c1"}, rec.emit)
		if err != nil {
			t.Fatal(err)
		}
		if reply.Status != StatusOK || reply.ExecutionCount != i || reply.CellID != "c1" {
			t.Fatalf("reply = %+v", reply.ExecuteReply)
		}
		if got, want := rec.types(), []string{MsgExecuteInput, MsgExecuteResult}; !reflect.DeepEqual(got, want) {
			t.Fatalf("messages = %v, want %v", got, want)
		}
		var res ExecuteResult
		_ = rec.msgs[1].DecodeContent(&res)
		if res.Data[MIMEText] != "hi" || res.ExecutionCount != i {
			t.Fatalf("result = %+v", res)
		}
	}
}

func TestExecutorErrors(t *testing.T) {
	tests := []struct {
		cell  Cell
		ename string
		want  string
	}{
		{Cell{Kind: "nope"}, ErrUnknownKind, `cannot run "nope"`},
		{Cell{Kind: "panic"}, ErrKernel, "boom"},
		{Cell{Kind: "fail"}, ErrExecution, "it failed"},
		{Cell{Kind: "slow", Attrs: map[string]string{"timeout": "30ms"}}, ErrTimeout, "time limit of 30ms"},
		{Cell{Kind: "echo", Attrs: map[string]string{"timeout": "soon"}}, ErrExecution, "invalid timeout"},
		{Cell{Kind: "sql", Source: "SELECT 1"}, ErrExecution, "engine is unavailable"},
	}
	x := newTestExecutor(t, Limits{})
	x.reg.Register(KindSQL, NewSQLRunner())
	for _, tt := range tests {
		t.Run(tt.cell.Kind, func(t *testing.T) {
			var rec recorder
			reply, err := x.Execute(context.Background(), tt.cell, rec.emit)
			var f *Failure
			if !errors.As(err, &f) {
				t.Fatalf("err = %v, want a Failure", err)
			}
			if reply.Status != StatusError || reply.Ename != tt.ename || !strings.Contains(reply.Evalue, tt.want) {
				t.Fatalf("reply = %+v, want %s containing %q", reply.ExecuteReply, tt.ename, tt.want)
			}
			types := rec.types()
			if types[len(types)-1] != MsgError {
				t.Fatalf("last message %v", types)
			}
		})
	}
	// The executor stays usable after all that.
	if _, err := x.Execute(context.Background(), Cell{Kind: "echo"}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestExecutorInterrupt(t *testing.T) {
	x := newTestExecutor(t, Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	var stopped time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := x.Execute(ctx, Cell{Kind: "slow"}, rec.emit)
		var f *Failure
		if !errors.As(err, &f) || f.Ename != ErrInterrupted {
			t.Errorf("err = %v, want Interrupted", err)
		}
	}()
	time.Sleep(50 * time.Millisecond)
	t0 := time.Now()
	cancel()
	<-done
	stopped = time.Since(t0)
	if stopped > 200*time.Millisecond {
		t.Fatalf("interrupt took %v", stopped)
	}
	t.Logf("interrupt latency (executor): %v", stopped)
}

func TestExecutorStuckRunnerGrace(t *testing.T) {
	x := newTestExecutor(t, Limits{InterruptGrace: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	t0 := time.Now()
	_, err := x.Execute(ctx, Cell{Kind: "stuck"}, rec.emit)
	if d := time.Since(t0); d > 150*time.Millisecond {
		t.Fatalf("stuck runner held Execute for %v", d)
	}
	var f *Failure
	if !errors.As(err, &f) || f.Ename != ErrInterrupted {
		t.Fatalf("err = %v", err)
	}
	// The next cell waits for the stuck runner; its late output is dropped.
	n := len(rec.types())
	if _, err := x.Execute(context.Background(), Cell{Kind: "echo"}, nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 300*time.Millisecond {
		t.Fatalf("next cell ran beside the stuck runner after %v", d)
	}
	if len(rec.types()) != n {
		t.Fatalf("late output leaked: %v", rec.types())
	}
}

func TestEnvDisplayRateLimit(t *testing.T) {
	x := newTestExecutor(t, Limits{UpdateInterval: 50 * time.Millisecond})
	var elapsed time.Duration
	x.reg.Register("burst", runnerFunc{run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		t0 := time.Now()
		for i := int64(1); i <= 1000; i++ {
			env.Progress(i, 1000)
		}
		elapsed = time.Since(t0)
		return nil, nil
	}})
	var rec recorder
	if _, err := x.Execute(context.Background(), Cell{Kind: "burst"}, rec.emit); err != nil {
		t.Fatal(err)
	}
	types := rec.types()
	// One display, then at most one update per 50 ms, plus the final one.
	maxMsgs := 2 + int(elapsed/(50*time.Millisecond)) + 1
	if len(types) > maxMsgs || types[1] != MsgDisplayData || types[len(types)-1] != MsgUpdateDisplayData {
		t.Fatalf("messages = %v in %v", types, elapsed)
	}
	var d DisplayData
	_ = rec.msgs[len(rec.msgs)-1].DecodeContent(&d)
	p := d.Data[MIMEProgress].(map[string]any)
	if p["done"].(float64) != 1000 || d.Transient == nil || !strings.HasPrefix(d.Transient.DisplayID, "progress-") {
		t.Fatalf("last update = %+v", d)
	}
}

func TestEnvStreamCap(t *testing.T) {
	x := newTestExecutor(t, Limits{MaxStreamBytes: 100})
	x.reg.Register("chatty", runnerFunc{run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		for i := 0; i < 100; i++ {
			env.Stream("stdout", "0123456789\n")
		}
		return nil, nil
	}})
	var rec recorder
	if _, err := x.Execute(context.Background(), Cell{Kind: "chatty"}, rec.emit); err != nil {
		t.Fatal(err)
	}
	total := 0
	var last Stream
	for _, m := range rec.msgs {
		if m.Header.MsgType == MsgStream {
			_ = m.DecodeContent(&last)
			total += len(last.Text)
		}
	}
	if total > 200 || !strings.Contains(last.Text, "truncated") {
		t.Fatalf("streamed %d bytes, last %q", total, last.Text)
	}
}

func TestSQLErrorClassification(t *testing.T) {
	x := newTestExecutor(t, Limits{})
	src := "SELECT 1;\nSELECT UserId FROM hits"
	x.reg.Register("sqlerr", runnerFunc{run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		return text("1"), &stmtIndexError{index: 1, err: &sql.Error{Pos: sql.Pos{Offset: 17, Line: 2, Col: 8}, Msg: `unknown column "UserId"`}}
	}})
	var rec recorder
	reply, _ := x.Execute(context.Background(), Cell{Kind: "sqlerr", Source: src}, rec.emit)
	if reply.Ename != ErrSQL {
		t.Fatalf("reply %+v", reply.ExecuteReply)
	}
	if got := rec.types(); !reflect.DeepEqual(got, []string{MsgExecuteInput, MsgExecuteResult, MsgError}) {
		t.Fatalf("messages %v", got)
	}
	ec := reply.Error
	if *ec.Position != (Position{Line: 2, Col: 8, Offset: 17}) || ec.StatementIndex != nil {
		t.Fatalf("error %+v", ec)
	}
	if want := []string{"SELECT UserId FROM hits", "       ^", `2:8: unknown column "UserId"`}; !reflect.DeepEqual(ec.Traceback, want) {
		t.Fatalf("traceback %q", ec.Traceback)
	}
}

type memErr struct{}

func (memErr) Error() string { return "query needs 3 GiB, limit is 2 GiB" }
func (memErr) Unwrap() error { return engine.ErrMemoryLimit }

func TestMemoryLimitClassification(t *testing.T) {
	x := newTestExecutor(t, Limits{})
	x.reg.Register("big", runnerFunc{run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		return nil, fmtWrap(memErr{})
	}})
	reply, _ := x.Execute(context.Background(), Cell{Kind: "big"}, nil)
	if reply.Ename != ErrMemoryLimit || !strings.Contains(reply.Evalue, "3 GiB") {
		t.Fatalf("reply %+v", reply.ExecuteReply)
	}
}

func fmtWrap(err error) error { return &stmtIndexError{index: 0, err: err} }

func TestBuildResult(t *testing.T) {
	ids := vec.NewVector(vec.Int64, 4)
	names := vec.NewVector(vec.String, 4)
	avg := vec.NewVector(vec.Float64, 4)
	for i := 0; i < 4; i++ {
		ids.AppendInt(int64(math.MaxInt64 - i))
		if i == 2 {
			names.AppendNull()
		} else {
			names.AppendStr([]byte("n" + strings.Repeat("x", i)))
		}
		avg.AppendFloat(float64(i) / 3)
	}
	res := []*engine.Result{
		{Statement: "SET group_by = 'radix'", Message: "SET"},
		{Statement: "SELECT …", Columns: []vec.Column{{Name: "id", Type: vec.Int64}, {Name: "name", Type: vec.String}, {Name: "avg", Type: vec.Float64}},
			Vecs: []*vec.Vector{ids, names, avg}, Rows: 4, Elapsed: time.Millisecond, Plan: &engine.PlanNode{Name: "HASH_GROUP_BY", Rows: 4}},
	}
	b := BuildResult(res, Limits{MaxRows: 3})
	if len(b.Statements) != 2 || b.Statements[0].Message != "SET" || len(b.Statements[0].Rows) != 0 {
		t.Fatalf("statements %+v", b.Statements)
	}
	st := b.Statements[1]
	if st.RowCount != 4 || len(st.Rows) != 3 || !st.Truncated {
		t.Fatalf("rows %d of %d truncated=%v", len(st.Rows), st.RowCount, st.Truncated)
	}
	if *st.Rows[0][0] != "9223372036854775807" || st.Rows[2][1] != nil || *st.Rows[1][2] != "0.333333" {
		t.Fatalf("values %v %v %v", *st.Rows[0][0], st.Rows[2][1], *st.Rows[1][2])
	}
	if st.Columns[0] != (ResultColumn{"id", "BIGINT"}) || st.Plan.Name != "HASH_GROUP_BY" || st.ElapsedNs != 1e6 {
		t.Fatalf("statement %+v", st)
	}
	// A byte budget cuts rows too; the count stays.
	b = BuildResult(res, Limits{MaxResultBytes: 40})
	if st := b.Statements[1]; len(st.Rows) != 1 || st.RowCount != 4 {
		t.Fatalf("byte cap: %d rows of %d", len(st.Rows), st.RowCount)
	}
	txt := RenderText(BuildResult(res, Limits{}))
	for _, want := range []string{"SET\n", "id                   name  avg", "NULL", "(4 rows)"} {
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q:\n%s", want, txt)
		}
	}
}
