package kernel

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSharedKey(t *testing.T) {
	lim := Limits{CellMemory: 64 << 20, Threads: 1}
	tests := []struct {
		name   string
		a, b   Cell
		same   bool
		shares bool
	}{
		{"same params, other order", Cell{Kind: KindLatency, Source: "min=4K max=1M"}, Cell{Kind: KindLatency, Source: "max=1M\nmin=4K"}, true, true},
		{"attrs and source alike", Cell{Kind: KindLatency, Attrs: map[string]string{"max": "1M"}}, Cell{Kind: KindLatency, Source: "max=1M"}, true, true},
		{"id and timeout ignored", Cell{Kind: KindLatency, ID: "a", Attrs: map[string]string{"timeout": "5s"}}, Cell{Kind: KindLatency, ID: "b"}, true, true},
		{"other params", Cell{Kind: KindLatency, Source: "max=1M"}, Cell{Kind: KindLatency, Source: "max=2M"}, false, true},
		{"other kind", Cell{Kind: KindLatency, Source: "max=1M"}, Cell{Kind: KindBandwidth, Source: "max=1M"}, false, true},
		{"sql does not share", Cell{Kind: KindSQL, Source: "SELECT 1"}, Cell{Kind: KindSQL, Source: "SELECT 1"}, true, false},
		{"again does not share", Cell{Kind: KindLatency, Attrs: map[string]string{AttrAgain: "1"}}, Cell{Kind: KindLatency, Attrs: map[string]string{AttrAgain: "1"}}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ka, kb := sharedKey(tc.a, lim), sharedKey(tc.b, lim)
			if (ka != "") != tc.shares {
				t.Fatalf("key %q: shares = %v, want %v", ka, ka != "", tc.shares)
			}
			if (ka == kb) != tc.same {
				t.Fatalf("keys %q and %q: same = %v, want %v", ka, kb, ka == kb, tc.same)
			}
		})
	}
	if sharedKey(Cell{Kind: KindLatency}, lim) == sharedKey(Cell{Kind: KindLatency}, Limits{CellMemory: 32 << 20, Threads: 1}) {
		t.Fatal("runs under other memory limits share a key")
	}
}

// sharedResult is what a test reads of a cell's answer.
type sharedResult struct {
	shared   bool
	queued   bool // a status said it waits for a shared run
	status   string
	hasInput bool
	live     bool // it showed live output before its result
}

func runLatency(t *testing.T, sub *Subscription, attrs map[string]string) sharedResult {
	t.Helper()
	m := NewMessage(ChannelShell, MsgExecuteRequest, "client", Header{}, ExecuteRequest{Code: "max=1M", Kind: KindLatency, Attrs: attrs})
	if err := sub.Kernel().Handle(sub, &m); err != nil {
		t.Fatal(err)
	}
	var r sharedResult
	for _, f := range readUntil(t, sub, isType(MsgExecuteReply)) {
		switch f.Header.MsgType {
		case MsgExecuteInput:
			r.hasInput = true
		case MsgDisplayData, MsgUpdateDisplayData:
			r.live = true
		case MsgStatus:
			var st Status
			_ = f.DecodeContent(&st)
			r.queued = r.queued || st.Shared
		case MsgExecuteResult:
			var res struct {
				Data map[string]json.RawMessage `json:"data"`
			}
			_ = f.DecodeContent(&res)
			var mm struct {
				Shared *SharedInfo `json:"shared"`
			}
			_ = json.Unmarshal(res.Data[MIMEMeasurement], &mm)
			r.shared = mm.Shared != nil
		case MsgExecuteReply:
			var er ExecuteReply
			_ = f.DecodeContent(&er)
			r.status = er.Status
		}
	}
	return r
}

func TestSharedMeasurements(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1e9, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	step := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	m := newTestManager(t, ManagerConfig{Shared: &SharedMeasurements{Fresh: time.Minute, Now: clock}})
	var runs atomic.Int32
	gate := make(chan struct{})
	fail := atomic.Bool{}
	m.Registry().Register(KindLatency, runnerFunc{class: Exclusive, run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		runs.Add(1)
		<-gate
		env.Display("progress", map[string]any{MIMEText: "half way"})
		if fail.Load() {
			return nil, context.DeadlineExceeded
		}
		return measurement(KindLatency, map[string]any{"points": []map[string]any{{"bytes": 4096, "ns": 1.5}}}, "curve"), nil
	}})
	subs := map[string]*Subscription{}
	for _, id := range []string{"a", "b", "c", "d"} {
		var err error
		if subs[id], err = m.Attach(id, 0); err != nil {
			t.Fatal(err)
		}
	}
	// a leads; b and c arrive while it runs and wait for it.
	results := make(chan sharedResult, 3)
	go func() { results <- runLatency(t, subs["a"], nil) }()
	waitFor(t, func() bool { return runs.Load() == 1 })
	for _, id := range []string{"b", "c"} {
		go func() { results <- runLatency(t, subs[id], nil) }()
	}
	time.Sleep(50 * time.Millisecond)
	close(gate)
	var sharedN, queuedN int
	for range 3 {
		r := <-results
		if r.status != StatusOK || !r.hasInput || !r.live {
			t.Fatalf("a cell of the first round: %+v; want ok, with its input and the run's live output", r)
		}
		if r.shared {
			sharedN++
		}
		if r.queued {
			queuedN++
		}
	}
	if runs.Load() != 1 || sharedN != 2 || queuedN != 2 {
		t.Fatalf("first round: %d runs, %d shared results, %d waited for the shared run; want 1, 2, 2", runs.Load(), sharedN, queuedN)
	}
	// A fresh measurement is shared at once.
	if r := runLatency(t, subs["d"], nil); !r.shared || runs.Load() != 1 {
		t.Fatalf("fresh measurement: %+v after %d runs; want a shared result and still 1 run", r, runs.Load())
	}
	// again=1 measures anew, and its result is the one shared next.
	if r := runLatency(t, subs["d"], map[string]string{AttrAgain: "1"}); r.shared || runs.Load() != 2 {
		t.Fatalf("measure again: %+v after %d runs; want a run of its own (2 runs)", r, runs.Load())
	}
	if r := runLatency(t, subs["a"], nil); !r.shared || runs.Load() != 2 {
		t.Fatalf("after measure again: %+v after %d runs; want the new shared result", r, runs.Load())
	}
	// Past Fresh, the next cell measures again.
	step(2 * time.Minute)
	if r := runLatency(t, subs["b"], nil); r.shared || runs.Load() != 3 {
		t.Fatalf("stale measurement: %+v after %d runs; want a new run", r, runs.Load())
	}
	// A failed run is not shared: the next cell measures.
	step(2 * time.Minute)
	fail.Store(true)
	if r := runLatency(t, subs["c"], nil); r.status != StatusError {
		t.Fatalf("failing run: %+v", r)
	}
	fail.Store(false)
	if r := runLatency(t, subs["c"], nil); r.shared || r.status != StatusOK || runs.Load() != 5 {
		t.Fatalf("after a failed run: %+v after %d runs; want a run of its own (5 runs)", r, runs.Load())
	}
}

// TestSharedLeaderFails: when the run others wait for fails, one of them
// measures and the rest wait for that run, not one run each.
func TestSharedLeaderFails(t *testing.T) {
	m := newTestManager(t, ManagerConfig{Shared: &SharedMeasurements{}})
	var runs atomic.Int32
	gate := make(chan struct{})
	m.Registry().Register(KindLatency, runnerFunc{class: Exclusive, run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		if runs.Add(1) == 1 {
			<-gate
			return nil, context.DeadlineExceeded
		}
		return measurement(KindLatency, map[string]any{"points": []map[string]any{{"bytes": 4096, "ns": 1.5}}}, "curve"), nil
	}})
	subs := map[string]*Subscription{}
	for _, id := range []string{"a", "b", "c", "d"} {
		var err error
		if subs[id], err = m.Attach(id, 0); err != nil {
			t.Fatal(err)
		}
	}
	results := make(chan sharedResult, 4)
	go func() { results <- runLatency(t, subs["a"], nil) }()
	waitFor(t, func() bool { return runs.Load() == 1 })
	for _, id := range []string{"b", "c", "d"} {
		go func() { results <- runLatency(t, subs[id], nil) }()
	}
	time.Sleep(50 * time.Millisecond)
	close(gate)
	ok, shared := 0, 0
	for range 4 {
		r := <-results
		if r.status == StatusOK {
			ok++
		}
		if r.shared {
			shared++
		}
	}
	if runs.Load() != 2 || ok != 3 || shared != 2 {
		t.Fatalf("%d runs, %d ok, %d shared; want 2 runs (the failed one and one more), 3 ok, 2 shared", runs.Load(), ok, shared)
	}
}

// TestSharedMeasureAgainInFlight: a measure-again run (a learner's, or
// a background refresh) is what a cell that finds no fresh measurement
// waits for, and State tells what runs, who waits and until when a
// result is fresh.
func TestSharedMeasureAgainInFlight(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1e9, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	step := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	sh := &SharedMeasurements{Fresh: time.Minute, Now: clock}
	m := newTestManager(t, ManagerConfig{Shared: sh})
	var runs atomic.Int32
	gate := make(chan struct{}, 4)
	m.Registry().Register(KindLatency, runnerFunc{class: Exclusive, run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		runs.Add(1)
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return measurement(KindLatency, map[string]any{"points": []map[string]any{{"bytes": 4096, "ns": 1.5}}}, "curve"), nil
	}})
	a, err := m.Attach("a", 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Attach("b", 0)
	if err != nil {
		t.Fatal(err)
	}
	key := a.Kernel().SharedKey(Cell{Kind: KindLatency, Source: "max=1M", Attrs: map[string]string{AttrAgain: "1"}})
	if key == "" || key != b.Kernel().SharedKey(Cell{Kind: KindLatency, Source: "max=1M"}) {
		t.Fatalf("SharedKey %q: want the same key with and without again=1", key)
	}
	if st := sh.State(key); st.Running || !st.At.IsZero() {
		t.Fatalf("state before any run: %+v", st)
	}

	// A measure-again starts with nothing shared; b waits for it.
	again := make(chan sharedResult, 1)
	go func() { again <- runLatency(t, a, map[string]string{AttrAgain: "1"}) }()
	waitFor(t, func() bool { return runs.Load() == 1 })
	waited := make(chan sharedResult, 1)
	go func() { waited <- runLatency(t, b, nil) }()
	waitFor(t, func() bool { st := sh.State(key); return st.Running && st.Waiters == 1 })
	gate <- struct{}{}
	if r := <-again; r.status != StatusOK || r.shared {
		t.Fatalf("measure again: %+v; want a run of its own", r)
	}
	if r := <-waited; r.status != StatusOK || !r.shared || !r.queued {
		t.Fatalf("cell during the measure-again: %+v; want it waited for that run and got it shared", r)
	}
	if runs.Load() != 1 {
		t.Fatalf("%d runs, want 1", runs.Load())
	}
	st := sh.State(key)
	if st.Running || st.At.IsZero() || st.Expires.Sub(st.At) != time.Minute {
		t.Fatalf("state after the run: %+v; want a fresh result for a minute", st)
	}

	// Refreshed before it expires: the old result is shared meanwhile,
	// and past the old one's window the cell waits for the refresh.
	step(50 * time.Second)
	go func() { again <- runLatency(t, a, map[string]string{AttrAgain: "1"}) }()
	waitFor(t, func() bool { return runs.Load() == 2 })
	if r := runLatency(t, b, nil); !r.shared || r.queued {
		t.Fatalf("during the refresh: %+v; want the fresh old result at once", r)
	}
	step(20 * time.Second)
	go func() { waited <- runLatency(t, b, nil) }()
	waitFor(t, func() bool { return sh.State(key).Waiters == 1 })
	gate <- struct{}{}
	<-again
	if r := <-waited; !r.shared || !r.queued || runs.Load() != 2 {
		t.Fatalf("past the old window: %+v after %d runs; want it waited for the refresh (2 runs)", r, runs.Load())
	}
	if st := sh.State(key); st.At != clock() {
		t.Fatalf("state after the refresh: %+v; want the refresh's time %v", st, clock())
	}
}
