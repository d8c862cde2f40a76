package kernel

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestSchedulerLimitAndExclusive(t *testing.T) {
	s := NewScheduler(2)
	r1, ok1 := s.TryAcquire("a", Heavy)
	r2, ok2 := s.TryAcquire("b", Heavy)
	if !ok1 || !ok2 {
		t.Fatal("two heavy cells should run under limit 2")
	}
	if _, ok := s.TryAcquire("c", Heavy); ok {
		t.Fatal("third heavy cell admitted over the limit")
	}
	// An exclusive cell waits for both; a heavy cell behind it waits too.
	got := make(chan string, 2)
	go func() {
		rel, err := s.Acquire(context.Background(), "m", Exclusive)
		if err == nil {
			got <- "exclusive"
			time.Sleep(20 * time.Millisecond)
			rel()
		}
	}()
	waitFor(t, func() bool { return s.Stats().Waiting == 1 })
	go func() {
		rel, err := s.Acquire(context.Background(), "h", Heavy)
		if err == nil {
			got <- "heavy"
			rel()
		}
	}()
	waitFor(t, func() bool { return s.Stats().Waiting == 2 })
	r1()
	select {
	case g := <-got:
		t.Fatalf("%s admitted while a heavy cell still runs", g)
	case <-time.After(20 * time.Millisecond):
	}
	r2()
	if g := <-got; g != "exclusive" {
		t.Fatalf("first admitted: %s", g)
	}
	if st := s.Stats(); !st.Exclusive || st.Running != 1 {
		t.Fatalf("stats while exclusive: %+v", st)
	}
	if g := <-got; g != "heavy" {
		t.Fatalf("second admitted: %s", g)
	}
	waitFor(t, func() bool { return s.Stats() == SchedStats{} })
}

func TestSchedulerRoundRobin(t *testing.T) {
	s := NewScheduler(1)
	hold, _ := s.TryAcquire("x", Heavy)
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	// Owner a queues three cells before b and c queue one each.
	enqueue := func(owner string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel, err := s.Acquire(context.Background(), owner, Heavy)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, owner)
			mu.Unlock()
			rel()
		}()
	}
	for i, o := range []string{"a", "a", "a", "b", "c", "b"} {
		enqueue(o)
		waitFor(t, func() bool { return s.Stats().Waiting == i+1 })
	}
	hold()
	wg.Wait()
	want := []string{"a", "b", "c", "a", "b", "a"}
	if !reflect.DeepEqual(order, want) {
		t.Fatalf("admission order %v, want %v", order, want)
	}
}

func TestSchedulerCancel(t *testing.T) {
	s := NewScheduler(1)
	hold, _ := s.TryAcquire("x", Exclusive)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, "a", Heavy)
		errc <- err
	}()
	waitFor(t, func() bool { return s.Stats().Waiting == 1 })
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled Acquire succeeded")
	}
	if st := s.Stats(); st.Waiting != 0 {
		t.Fatalf("cancelled waiter still queued: %+v", st)
	}
	hold()
	if r, ok := s.TryAcquire("b", Heavy); !ok {
		t.Fatal("slot lost after cancel")
	} else {
		r()
		r() // release is idempotent
	}
	if st := s.Stats(); st.Running != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}
