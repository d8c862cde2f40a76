package web

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cachebook/kernel"
	"cachebook/notebook"
)

// warmLessons is a lesson list whose first lesson has one (small)
// latency cell and an SQL cell, and whose second has a bandwidth cell.
type warmLessons struct{}

func (warmLessons) List() ([]LessonInfo, error) {
	return []LessonInfo{{ID: "01-first", Title: "First"}, {ID: "02-second", Title: "Second"}}, nil
}

func (warmLessons) Open(id string) (*notebook.Notebook, error) {
	switch id {
	case "01-first":
		return &notebook.Notebook{Cells: []*notebook.Cell{
			{ID: "latency-curve", Kind: notebook.KindLatency, Source: testLatencyCell},
			{ID: "count", Kind: notebook.KindSQL, Source: "SELECT 1"},
		}}, nil
	case "02-second":
		return &notebook.Notebook{Cells: []*notebook.Cell{{ID: "bw", Kind: notebook.KindBandwidth, Source: "size=1M"}}}, nil
	}
	return nil, fmt.Errorf("%w: no lesson %q", errNotFound, id)
}

// warmClass is a class server with Prepare on, a stepped clock, a short
// warm tick and a latency kind that counts its runs and, while block is
// open, waits for block to close (or its interrupt).
type warmClass struct {
	*testServer
	runs  atomic.Int32
	mu    sync.Mutex
	now   time.Time
	block chan struct{}
}

func (w *warmClass) clock() time.Time { w.mu.Lock(); defer w.mu.Unlock(); return w.now }
func (w *warmClass) step(d time.Duration) {
	w.mu.Lock()
	w.now = w.now.Add(d)
	w.mu.Unlock()
}

func newWarmClass(t *testing.T, block chan struct{}) *warmClass {
	t.Helper()
	w := &warmClass{now: time.Unix(2e9, 0), block: block}
	reg := classRegistry()
	real, ok := reg.Lookup(kernel.KindLatency)
	if !ok {
		t.Fatal("no latency runner")
	}
	reg.Register(kernel.KindLatency, runner{class: kernel.Exclusive, run: func(ctx context.Context, c kernel.Cell, env *kernel.Env) (*kernel.Outcome, error) {
		w.runs.Add(1)
		if w.block != nil {
			select {
			case <-w.block:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return real.Run(ctx, c, env)
	}})
	w.testServer = newTestServer(t, Config{Lessons: warmLessons{},
		Class:  &ClassConfig{Name: "warm", Code: "JOIN42", Prepare: true, Share: time.Minute, Now: w.clock, warmTick: 10 * time.Millisecond},
		Kernel: kernel.ManagerConfig{Executor: kernel.Config{Registry: reg, Limits: kernel.Limits{CellMemory: 64 << 20}}}})
	return w
}

// prepared returns the class view's entry for lesson 1's latency cell.
func (w *warmClass) prepared(t *testing.T) PreparedView {
	t.Helper()
	for _, p := range w.snapshot(t).Prepared {
		if p.Cell == "latency-curve" {
			return p
		}
	}
	t.Fatal("the class view lists no prepared latency cell")
	return PreparedView{}
}

// TestClassPrepare: a class server measures lesson 1's latency cell once
// when it starts, with nobody connected; learners then get that shared
// result without a run of their own; it is measured again before it
// expires while a learner is connected, and not when none is.
func TestClassPrepare(t *testing.T) {
	w := newWarmClass(t, nil)
	waitFor(t, "the pre-measurement", func() bool {
		s := w.snapshot(t)
		return len(s.Prepared) == 1 && s.Prepared[0].MeasuredAt != "" && s.Measuring == nil
	})
	if n := w.runs.Load(); n != 1 {
		t.Fatalf("%d runs at start, want 1 (lesson 1's latency cell; its SQL cell is not measured)", n)
	}
	s := w.snapshot(t)
	if !s.KeptFresh || s.Measuring != nil || len(s.Prepared) != 1 || s.Prepared[0].LessonNumber != 1 {
		t.Fatalf("class view after the pre-measurement: kept fresh %v, measuring %+v, prepared %+v", s.KeptFresh, s.Measuring, s.Prepared)
	}

	// Close to its expiry with no learner connected: nothing runs.
	w.step(50 * time.Second)
	time.Sleep(300 * time.Millisecond) // 30 warm ticks
	if n := w.runs.Load(); n != 1 {
		t.Fatalf("%d runs with no learner connected, want still 1", n)
	}

	// A learner connects: the result about to expire is measured again.
	l := w.join(t, "ada")
	c, code := w.dialAs(t, l.cookie(), "tab")
	if code != 101 {
		t.Fatalf("websocket %d", code)
	}
	waitFor(t, "the refresh with a learner connected", func() bool {
		return w.runs.Load() == 2 && w.prepared(t).MeasuredAt == w.clock().UTC().Format(time.RFC3339)
	})
	// The learner's cell gets it at once.
	if r, _ := runCell(c, kernel.KindLatency, testLatencyCell, "latency-curve"); r.Status != kernel.StatusOK {
		t.Fatalf("learner's cell: %+v", r)
	}
	waitFor(t, "the learner's shared curve", func() bool { return w.snapshot(t).Stats.SharedCurves == 1 })
	if n := w.runs.Load(); n != 2 {
		t.Fatalf("%d runs after the learner's cell, want 2: it shares the background run", n)
	}

	// The learner leaves; past the expiry nothing is measured.
	c.conn.Close()
	waitFor(t, "the learner's disconnection", func() bool { return !w.class.learnersPresent() })
	w.step(2 * time.Minute)
	time.Sleep(300 * time.Millisecond)
	if n := w.runs.Load(); n != 2 {
		t.Fatalf("%d runs with no learner connected, want still 2", n)
	}
}

// TestClassWarmGivesWay: a background measurement gives way to a
// learner's cell waiting for the machine (and is taken later), but not
// while a learner waits for its result.
func TestClassWarmGivesWay(t *testing.T) {
	release := make(chan struct{})
	w := newWarmClass(t, release)
	waitFor(t, "the pre-measurement's start", func() bool { return w.runs.Load() == 1 })
	if s := w.snapshot(t); s.Measuring == nil || s.Measuring.Why != WarmStart || s.Measuring.LessonNumber != 1 {
		t.Fatalf("class view while it runs: %+v, want lesson 1's cell measured for the start", s.Measuring)
	}
	a, b := w.join(t, "ada"), w.join(t, "bob")
	ca, _ := w.dialAs(t, a.cookie(), "tab")
	cb, _ := w.dialAs(t, b.cookie(), "tab")

	// A learner's cell waits for the machine: the run gives way.
	if r, _ := runCell(cb, "work", "", "w1"); r.Status != kernel.StatusOK {
		t.Fatalf("learner's cell beside the background run: %+v", r)
	}
	waitFor(t, "the background run giving way", func() bool { _, yields := w.class.warm.stats(); return yields == 1 })

	// Taken again when the machine is idle; a learner waits for its
	// result, so another's cell waiting does not stop it.
	waitFor(t, "the second try", func() bool { return w.runs.Load() == 2 })
	done := make(chan kernel.ExecuteReply, 1)
	go func() { r, _ := runCell(ca, kernel.KindLatency, testLatencyCell, "latency-curve"); done <- r }()
	waitFor(t, "the learner waiting for the background run", func() bool { return w.prepared(t).Waiters == 1 })
	other := cb.executeCell("work", "", "w2")
	time.Sleep(200 * time.Millisecond) // 20 warm ticks with a cell waiting
	if _, yields := w.class.warm.stats(); yields != 1 {
		t.Fatalf("%d background runs gave way, want still 1: a learner waits for its result", yields)
	}
	close(release)
	if r := <-done; r.Status != kernel.StatusOK {
		t.Fatalf("learner's latency cell: %+v", r)
	}
	cb.until(replyTo(other, kernel.MsgExecuteReply))
	waitFor(t, "the shared curve", func() bool { return w.snapshot(t).Stats.SharedCurves == 1 })
	if n := w.runs.Load(); n != 2 {
		t.Fatalf("%d latency runs, want 2 (the one that gave way and the shared one)", n)
	}
}

// TestClassWarmPush: pushing a lesson measures its server-side
// measurement cells, with or without Prepare, ahead of lesson 1's, which
// a preparing server keeps through later pushes.
func TestClassWarmPush(t *testing.T) {
	cells := func(s ClassSnapshot) (ids []string, measured int) {
		for _, p := range s.Prepared {
			ids = append(ids, p.Cell)
			if p.MeasuredAt != "" {
				measured++
			}
		}
		return ids, measured
	}
	for _, tc := range []struct {
		name    string
		prepare bool
		// before: the prepared cells before any push; after: after
		// pushing lesson 2, lesson 1 and lesson 2 again.
		before, after []string
	}{
		{"without Prepare", false, nil, []string{"bw"}},
		{"with Prepare", true, []string{"latency-curve"}, []string{"bw", "latency-curve"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bw atomic.Int32
			reg := classRegistry()
			reg.Register(kernel.KindBandwidth, runner{class: kernel.Exclusive, run: func(ctx context.Context, c kernel.Cell, env *kernel.Env) (*kernel.Outcome, error) {
				bw.Add(1)
				return &kernel.Outcome{Data: map[string]any{kernel.MIMEText: "bandwidth", kernel.MIMEMeasurement: map[string]any{"kind": "bandwidth"}}}, nil
			}})
			ts := newTestServer(t, Config{Lessons: warmLessons{},
				Class:  &ClassConfig{Name: "warm", Code: "JOIN42", Prepare: tc.prepare, warmTick: 10 * time.Millisecond},
				Kernel: kernel.ManagerConfig{Executor: kernel.Config{Registry: reg, Limits: kernel.Limits{CellMemory: 64 << 20}}}})
			waitFor(t, "the prepared cells measured", func() bool {
				ids, measured := cells(ts.snapshot(t))
				return fmt.Sprint(ids) == fmt.Sprint(tc.before) && measured == len(tc.before)
			})
			if s := ts.snapshot(t); s.KeptFresh != tc.prepare {
				t.Fatalf("kept fresh %v, want %v", s.KeptFresh, tc.prepare)
			}
			for _, l := range []string{"02-second", "01-first", "02-second"} {
				if code, body := ts.do(t, "teacher", "POST", "/api/class/push", fmt.Sprintf(`{"lesson":%q}`, l)); code != 200 {
					t.Fatalf("push: %d %s", code, body)
				}
			}
			waitFor(t, "the pushed lesson's measurement", func() bool {
				ids, measured := cells(ts.snapshot(t))
				return fmt.Sprint(ids) == fmt.Sprint(tc.after) && measured == len(tc.after)
			})
			if bw.Load() != 1 {
				t.Fatalf("%d bandwidth runs, want 1: pushed again while fresh, it is not measured again", bw.Load())
			}
		})
	}
}
