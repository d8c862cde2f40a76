package kernel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// runnerFunc adapts a function to Runner for tests.
type runnerFunc struct {
	class Class
	run   func(ctx context.Context, cell Cell, env *Env) (*Outcome, error)
}

func (r runnerFunc) Class(Cell) Class { return r.class }
func (r runnerFunc) Run(ctx context.Context, cell Cell, env *Env) (*Outcome, error) {
	return r.run(ctx, cell, env)
}

func text(s string) *Outcome { return &Outcome{Data: map[string]any{MIMEText: s}} }

// testRegistry returns runners used by the tests:
//
//	echo   returns its source
//	slow   reports progress every ms until cancelled (checks ctx like the engine)
//	stuck  ignores cancellation for 300 ms
//	panic  panics
//	fail   returns an error
//	measure an exclusive echo
func testRegistry() *Registry {
	r := NewRegistry()
	r.Register("echo", runnerFunc{run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		return text(c.Source), nil
	}})
	r.Register("measure", runnerFunc{class: Exclusive, run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		return text("measured " + c.Source), nil
	}})
	r.Register("slow", runnerFunc{run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		for i := int64(0); ; i++ {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("slow: %w", ctx.Err())
			case <-time.After(time.Millisecond):
			}
			env.Progress(i, 1<<40)
		}
	}})
	r.Register("stuck", runnerFunc{run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		time.Sleep(300 * time.Millisecond)
		env.Stream("stdout", "late output\n")
		return text("late"), nil
	}})
	r.Register("panic", runnerFunc{run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		panic("boom")
	}})
	r.Register("fail", runnerFunc{run: func(ctx context.Context, c Cell, env *Env) (*Outcome, error) {
		return nil, errors.New("it failed")
	}})
	return r
}

// recorder collects emitted messages.
type recorder struct {
	mu   sync.Mutex
	msgs []Message
}

func (r *recorder) emit(m Message) {
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
}

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var t []string
	for _, m := range r.msgs {
		t = append(t, m.Header.MsgType)
	}
	return t
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// streamText returns the text of every stream message, in order.
func (r *recorder) streamText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, m := range r.msgs {
		if m.Header.MsgType != MsgStream {
			continue
		}
		var s Stream
		if m.DecodeContent(&s) == nil {
			b.WriteString(s.Text)
		}
	}
	return b.String()
}
