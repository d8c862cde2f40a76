package kernel

import (
	"context"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"cachebook/engine"
	"cachebook/kernel/perf"
)

func TestCellParams(t *testing.T) {
	tests := []struct {
		cell      Cell
		skipFirst bool
		allowed   []string
		want      map[string]string
		first     string
		err       string
	}{
		{Cell{Source: "max=16K reps=1\n# comment\n\nppo=2", Attrs: map[string]string{"timeout": "5s", "min": "4K"}}, false,
			[]string{"min", "max", "ppo", "reps"}, map[string]string{"min": "4K", "max": "16K", "reps": "1", "ppo": "2"}, "", ""},
		{Cell{Source: "false-sharing\nthreads=2", Attrs: map[string]string{"counters": "on"}}, true, nil,
			map[string]string{"threads": "2"}, "false-sharing", ""},
		{Cell{Source: "size 12"}, false, nil, nil, "", `parameter "size": want key=value`},
		{Cell{Source: "bogus=1"}, false, []string{"min"}, nil, "", "unknown parameter(s) bogus (this cell takes: min)"},
	}
	for _, tt := range tests {
		p, first, err := cellParams(tt.cell, tt.skipFirst, tt.allowed...)
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

func TestMeasurementCells(t *testing.T) {
	x, err := NewExecutor(Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	kinds := x.Registry().Kinds()
	if kinds[0] != KindSQL || len(kinds) != 5 {
		t.Fatalf("kinds %v", kinds)
	}
	tests := []struct {
		cell  Cell
		ename string
		want  string // in text/plain or evalue
	}{
		{Cell{Kind: KindLatency, Source: "min=4K max=16K ppo=1 reps=1 sample=1ms huge=false"}, "", "ns/access"},
		{Cell{Kind: KindBandwidth, Source: "bytes=64K threads=1 ops=read reps=1"}, "", "GB/s"},
		{Cell{Kind: KindSweep, Source: "rows=20000 groups=10,1000 strategies=naive,radix reps=1"}, "", "ns/row"},
		{Cell{Kind: KindSweep, Source: "rows=100 groups=1000"}, ErrExecution, "groups"},
		{Cell{Kind: KindSweep, Source: "rows=1.5"}, ErrExecution, "whole number"},
		{Cell{Kind: KindLatency, Source: "min=1G max=4K"}, ErrExecution, "larger than max"},
		{Cell{Kind: KindLatency, Source: "reps=0"}, ErrExecution, "reps=\"0\""},
		{Cell{Kind: KindBandwidth, Source: "ops=fly"}, ErrExecution, "fly"},
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
