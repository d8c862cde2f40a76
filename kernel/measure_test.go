package kernel

import (
	"context"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"cachebook/engine"
	"cachebook/kernel/bandwidth"
	"cachebook/kernel/internal/memtest"
	"cachebook/kernel/perf"
	"cachebook/notebook/kind"
)

func TestCellParams(t *testing.T) {
	tests := []struct {
		cell      Cell
		skipFirst bool
		want      map[string]string
		first     string
		err       string
	}{
		{Cell{Source: "max=16K reps=1\n# comment\n\nppo=2", Attrs: map[string]string{"timeout": "5s", "min": "4K"}}, false,
			map[string]string{"min": "4K", "max": "16K", "reps": "1", "ppo": "2"}, "", ""},
		{Cell{Source: "false-sharing\nthreads=2", Attrs: map[string]string{"counters": "on"}}, true,
			map[string]string{"threads": "2"}, "false-sharing", ""},
		{Cell{Source: "size 12"}, false, nil, "", `parameter "size": want key=value`},
	}
	for _, tt := range tests {
		p, first, err := cellParams(tt.cell, tt.skipFirst)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err %v, want %q", tt.cell.Source, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(p, tt.want) || first != tt.first {
			t.Errorf("%q: got %v %q %v, want %v %q", tt.cell.Source, p, first, err, tt.want, tt.first)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestMeasurementCells(t *testing.T) {
	x, err := NewExecutor(Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	kinds := x.Registry().Kinds()
	// The executor runs every kind the notebook format names, SQL first.
	if want := kind.Code(); kinds[0] != KindSQL || !sameSet(kinds, want) {
		t.Fatalf("kinds %v, want the notebook's %v", kinds, want)
	}
	tests := []struct {
		cell  Cell
		ename string
		want  string // in text/plain or evalue
	}{
		{Cell{Kind: KindLatency, Source: "min=4K max=16K ppo=1 reps=1 sample=1ms huge=false"}, "", "ns/access"},
		{Cell{Kind: KindBandwidth, Source: "bytes=64K threads=1 ops=read reps=1"}, "", "GB/s"},
		{Cell{Kind: KindSweep, Source: "rows=20000 groups=10,1000 strategies=naive,radix reps=1"}, "", "ns/row"},
		{Cell{Kind: KindSweep, Source: "rows=20000 groups=10,1000 strategies=naive,radix reps=1 model=true"}, "", "modelled (not measured) on"},
		{Cell{Kind: KindSweep, Source: "rows=100 groups=1000"}, ErrExecution, "groups"},
		{Cell{Kind: KindSweep, Source: "rows=1.5"}, ErrExecution, "whole number"},
		{Cell{Kind: KindLatency, Source: "min=1G max=4K"}, ErrExecution, "larger than max"},
		{Cell{Kind: KindLatency, Source: "reps=0"}, ErrExecution, "reps=\"0\""},
		{Cell{Kind: KindBandwidth, Source: "ops=fly"}, ErrExecution, "fly"},
		{Cell{Kind: KindLatency, Source: "bogus=1"}, ErrExecution, "unknown parameter(s) bogus (this takes: min, max"},
		{Cell{Kind: KindLatency, Source: "seed=x"}, ErrExecution, "seed"},
		{Cell{Kind: KindExperiment, Source: ""}, ErrExecution, "name the experiment"},
		{Cell{Kind: KindExperiment, Source: "no-such-thing"}, ErrExecution, "unknown experiment"},
	}
	for _, tt := range tests {
		if x.Class(tt.cell) != Exclusive {
			t.Errorf("%s cells must be exclusive", tt.cell.Kind)
		}
		var rec recorder
		reply, _ := x.Execute(context.Background(), tt.cell, rec.emit)
		if tt.ename != "" {
			if reply.Ename != tt.ename || !strings.Contains(reply.Evalue, tt.want) {
				t.Errorf("%s %q: %+v, want %s %q", tt.cell.Kind, tt.cell.Source, reply.ExecuteReply, tt.ename, tt.want)
			}
			continue
		}
		if reply.Status != StatusOK {
			t.Fatalf("%s: %+v", tt.cell.Kind, reply.ExecuteReply)
		}
		d := reply.Outcome.Data
		m, ok := d[MIMEMeasurement].(map[string]any)
		if !ok || m["kind"] != tt.cell.Kind || m[tt.cell.Kind] == nil || !strings.Contains(d[MIMEText].(string), tt.want) {
			t.Fatalf("%s outcome %v", tt.cell.Kind, d)
		}
		if n := len(rec.msgs); n < 3 {
			t.Fatalf("%s: no progress display (%v)", tt.cell.Kind, rec.types())
		}
	}
}

// TestCountersHonest checks that a counted query reports per-worker
// readings, or for every event the reason it could not be counted.
func TestCountersHonest(t *testing.T) {
	x := newTestExecutor(t, Limits{})
	probe := &perfProbe{}
	x.reg.Register("counted", runnerFunc{run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		hooks, cs := startCounters(probe, &engine.Hooks{}, env)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if hooks.LockThreads {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			hooks.WorkerStart(1)
			hooks.PhaseStart(1, "aggregate")
			s := 0
			for i := 0; i < 1e6; i++ {
				s += i
			}
			_ = s
			hooks.PhaseEnd(1, "aggregate")
			hooks.WorkerStop(1)
		}()
		<-done
		return &Outcome{Data: map[string]any{MIMEText: "x", "counters": cs.finish()}}, nil
	}})
	reply, err := x.Execute(context.Background(), Cell{Kind: "counted"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, ok := reply.Outcome.Data["counters"].(*perf.Report)
	if !ok || rep.Live || len(rep.Total.Events) == 0 {
		t.Fatalf("report %#v", reply.Outcome.Data["counters"])
	}
	for _, ev := range rep.Total.Events {
		if !ev.Available && ev.Reason == nil {
			t.Errorf("event %s is unavailable without a reason", ev.Name)
		}
	}
	t.Logf("perf availability here: %s", rep.Availability.Summary())
}

// TestCellMemoryCap is the regression test of the cells that used to take
// the server down: each is refused with MemoryLimit before it allocates,
// measured on the heap and the resident set, not by a cgroup.
func measureExecutor(t *testing.T, lim Limits) *Executor {
	t.Helper()
	x, err := NewExecutor(Config{Limits: lim, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestCellMemoryCap(t *testing.T) {
	const limit = 1 << 30
	x := measureExecutor(t, Limits{CellMemory: limit})
	for _, c := range []Cell{
		{Kind: KindBandwidth, Source: "bytes=1T"},
		{Kind: KindLatency, Source: "max=8G"},
		{Kind: KindSweep, Source: "rows=2147483648"},
		{Kind: KindExperiment, Source: "zeroing\nsize=1GiB live=8 threads=2"},
		{Kind: KindBandwidth, Source: "bytes=2G threads=2 ops=write"},
		{Kind: KindExperiment, Source: "parallel-merge\nrows=17179869184 groups=17179869184"},
	} {
		var reply *Reply
		heap, rss := memtest.Peak(func() { reply, _ = x.Execute(context.Background(), c, nil) })
		if reply.Ename != ErrMemoryLimit || !strings.Contains(reply.Evalue, "per-cell limit of 1GiB") {
			t.Errorf("%s %q: %s %s, want MemoryLimit", c.Kind, c.Source, reply.Ename, reply.Evalue)
		}
		if heap > 16<<20 || rss > 64<<20 {
			t.Errorf("%s %q: refusing took %d bytes of heap, %d resident", c.Kind, c.Source, heap, rss)
		}
	}
	// Defaults shrink to the cap instead of failing.
	x = measureExecutor(t, Limits{CellMemory: 8 << 20})
	reply, _ := x.Execute(context.Background(), Cell{Kind: KindBandwidth, Source: "threads=1 ops=read reps=1"}, nil)
	if reply.Status != StatusOK {
		t.Fatalf("default bandwidth under 8 MiB: %+v", reply.ExecuteReply)
	}
	rep := reply.Outcome.Data[MIMEMeasurement].(map[string]any)[KindBandwidth].(*bandwidth.Report)
	if b := rep.Results[0].BytesPerThread; b > 8<<20 || b < 4<<20 {
		t.Errorf("default size fitted to %d bytes", b)
	}
}

// TestThreadsLimit: a runtime with one thread (the browser) refuses cells
// that explicitly ask for more and have no model, with Unavailable,
// instead of pretending; an experiment that needs threads at once and has
// a model runs the model, labelled so.
func TestThreadsLimit(t *testing.T) {
	x := measureExecutor(t, Limits{Threads: 1, Browser: true})
	server := measureExecutor(t, Limits{Threads: 1}) // a one-thread server: no browser
	for _, c := range []Cell{
		{Kind: KindBandwidth, Source: "bytes=64K threads=1,2"},
		{Kind: KindExperiment, Source: "zeroing\nthreads=2 size=64KiB"},
	} {
		reply, _ := x.Execute(context.Background(), c, nil)
		if reply.Ename != ErrUnavailable || !strings.Contains(reply.Evalue, "run it on the server") {
			t.Errorf("%s %q: %s %s", c.Kind, c.Source, reply.Ename, reply.Evalue)
		}
		reply, _ = server.Execute(context.Background(), c, nil)
		if reply.Ename != ErrUnavailable || strings.Contains(reply.Evalue, "browser") {
			t.Errorf("one-thread server: %s %q: %s %s", c.Kind, c.Source, reply.Ename, reply.Evalue)
		}
	}
	reply, _ := x.Execute(context.Background(), Cell{Kind: KindExperiment, Source: "false-sharing\nthreads=2"}, nil)
	if reply.Status != StatusOK || !strings.Contains(reply.Outcome.Data[MIMEText].(string), "MODELLED") {
		t.Errorf("false-sharing threads=2 on one thread: %+v, want its model", reply.ExecuteReply)
	}
}

func TestKindInfo(t *testing.T) {
	info := DefaultRegistry().Info()
	if len(info) != 6 || info[0].Name != KindSQL {
		t.Fatalf("kinds %+v", info)
	}
	for _, k := range info {
		if k.Summary == "" || len(k.Runtimes) == 0 {
			t.Errorf("%s: incomplete %+v", k.Name, k)
		}
		if (k.Name == KindLatency || k.Name == KindSweep) && len(k.Params) == 0 {
			t.Errorf("%s has no params", k.Name)
		}
	}
}
