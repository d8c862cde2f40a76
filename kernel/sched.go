package kernel

import (
	"context"
	"fmt"
	"sync"
)

// Scheduler is the admission queue of a server: at most Limit heavy cells
// run at once, an exclusive cell runs only when nothing else runs, and
// waiting cells are admitted round-robin across owners (sessions) so one
// owner's backlog cannot starve the others. It is safe for concurrent use.
//
// Admission is strictly in order: when the cell at the head of the
// round-robin cannot start (an exclusive cell waiting for running heavy
// cells to finish), no cell behind it starts either, so exclusive cells are
// not starved by a stream of heavy ones.
type Scheduler struct {
	mu        sync.Mutex
	limit     int
	running   int  // admitted cells (heavy or exclusive)
	exclusive bool // an exclusive cell is running
	waiting   int
	owners    map[any]*ownerQueue
	ring      []*ownerQueue // owners with waiters, in round-robin order
}

type ownerQueue struct {
	owner   any
	waiters []*waiter
	inRing  bool
}

type waiter struct {
	class   Class
	ready   chan struct{}
	granted bool
}

// NewScheduler returns a scheduler admitting at most limit heavy cells at
// once (limit < 1 is taken as 1).
func NewScheduler(limit int) *Scheduler {
	return &Scheduler{limit: max(1, limit), owners: map[any]*ownerQueue{}}
}

// Limit returns the number of heavy cells that may run at once.
func (s *Scheduler) Limit() int { return s.limit }

// SchedStats is a snapshot of the admission queue.
type SchedStats struct {
	Running   int  // admitted cells now running
	Waiting   int  // cells waiting for admission
	Exclusive bool // an exclusive cell is running
}

// Stats returns a snapshot of the queue.
func (s *Scheduler) Stats() SchedStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SchedStats{Running: s.running, Waiting: s.waiting, Exclusive: s.exclusive}
}

// TryAcquire admits a cell of owner at once if that is possible without
// overtaking any waiting cell.
func (s *Scheduler) TryAcquire(owner any, class Class) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting > 0 || !s.canRun(class) {
		return nil, false
	}
	s.admit(class)
	return s.releaser(class), true
}

// Acquire waits until a cell of owner and class may run and returns the
// function that ends its admission (call it exactly once). It returns an
// error, without admission, when ctx is done first; the cell then leaves
// the queue.
func (s *Scheduler) Acquire(ctx context.Context, owner any, class Class) (release func(), err error) {
	s.mu.Lock()
	if s.waiting == 0 && s.canRun(class) {
		s.admit(class)
		s.mu.Unlock()
		return s.releaser(class), nil
	}
	w := &waiter{class: class, ready: make(chan struct{})}
	q := s.owners[owner]
	if q == nil {
		q = &ownerQueue{owner: owner}
		s.owners[owner] = q
	}
	q.waiters = append(q.waiters, w)
	if !q.inRing {
		q.inRing = true
		s.ring = append(s.ring, q)
	}
	s.waiting++
	s.mu.Unlock()

	select {
	case <-w.ready:
		return s.releaser(class), nil
	case <-ctx.Done():
		s.mu.Lock()
		if w.granted {
			// Admitted just as ctx ended: hand the slot back.
			s.mu.Unlock()
			s.releaser(class)()
		} else {
			s.removeWaiter(q, w)
			s.dispatch()
			s.mu.Unlock()
		}
		return nil, fmt.Errorf("kernel: waiting for admission: %w", ctx.Err())
	}
}

// canRun reports whether a cell of class could start now; s.mu held.
func (s *Scheduler) canRun(class Class) bool {
	if s.exclusive {
		return false
	}
	if class == Exclusive {
		return s.running == 0
	}
	return s.running < s.limit
}

func (s *Scheduler) admit(class Class) {
	s.running++
	if class == Exclusive {
		s.exclusive = true
	}
}

func (s *Scheduler) releaser(class Class) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.running--
			if class == Exclusive {
				s.exclusive = false
			}
			s.dispatch()
		})
	}
}

// removeWaiter takes w out of q; s.mu held.
func (s *Scheduler) removeWaiter(q *ownerQueue, w *waiter) {
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			s.waiting--
			break
		}
	}
	if len(q.waiters) == 0 {
		s.dropOwner(q)
	}
}

// dropOwner removes an owner without waiters from the ring; s.mu held.
func (s *Scheduler) dropOwner(q *ownerQueue) {
	if q.inRing {
		for i, x := range s.ring {
			if x == q {
				s.ring = append(s.ring[:i], s.ring[i+1:]...)
				break
			}
		}
		q.inRing = false
	}
	delete(s.owners, q.owner)
}

// dispatch admits waiting cells in round-robin order while possible;
// s.mu held.
func (s *Scheduler) dispatch() {
	for len(s.ring) > 0 {
		q := s.ring[0]
		w := q.waiters[0]
		if !s.canRun(w.class) {
			return
		}
		q.waiters = q.waiters[1:]
		s.waiting--
		s.ring = s.ring[1:]
		if len(q.waiters) > 0 {
			s.ring = append(s.ring, q) // to the back: next owner's turn
		} else {
			q.inRing = false
			delete(s.owners, q.owner)
		}
		s.admit(w.class)
		w.granted = true
		close(w.ready)
	}
}
