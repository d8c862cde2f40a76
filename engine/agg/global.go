package agg

import (
	"context"

	"cachebook/engine/vec"
)

// global is an aggregate without keys: one group, even over empty input,
// on one worker.
type global struct {
	cfg    Config
	states []*State
	gids   []uint32 // all zero: the one group
	aggs   []*vec.Vector
	done   bool
}

func newGlobal(specs []Spec, cfg Config) (*global, error) {
	g := &global{cfg: cfg}
	for _, sp := range specs {
		s, err := NewState(sp, cfg.Hasher, cfg.Budget)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.states = append(g.states, s)
		if err := s.Resize(1); err != nil {
			g.Close()
			return nil, err
		}
	}
	return g, nil
}

func (g *global) Workers() int { return 1 }

func (g *global) Sink(_ int, in Input) error {
	if cap(g.gids) < in.N {
		g.gids = make([]uint32, in.N)
	}
	for j, s := range g.states {
		if err := s.Update(g.gids[:in.N], in.Args[j], in.N); err != nil {
			return err
		}
	}
	return nil
}

func (g *global) Flush(int) error { return nil }

func (g *global) Finalize(context.Context) error {
	for _, s := range g.states {
		v, err := s.Finalize(1)
		if err != nil {
			return err
		}
		g.aggs = append(g.aggs, v)
	}
	g.Close()
	return nil
}

func (g *global) Next(context.Context, int) (Part, bool, error) {
	if g.done {
		return Part{}, false, nil
	}
	g.done = true
	p := Part{Aggs: g.aggs, Groups: 1}
	if err := p.charge(g.cfg.Budget, 0); err != nil {
		return Part{}, false, err
	}
	g.aggs = nil
	return p, true, nil
}

func (g *global) Stats() Stats {
	return Stats{SinkPhase: "aggregate", Groups: 1, Complete: g.aggs != nil || g.done}
}

// Close gives the states' memory back.
func (g *global) Close() {
	for _, s := range g.states {
		s.release()
	}
	g.states = nil
}
