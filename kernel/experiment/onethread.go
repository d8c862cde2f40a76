package experiment

import (
	"context"
	"fmt"
	"maps"
	"strconv"
)

// This file adapts experiments to a runtime with fewer threads than they
// ask for — Go WebAssembly in the browser has one. An experiment whose
// point needs only one thread runs there on one (its default thread count
// lowered, and said so); one whose point needs threads running at the same
// time (a cache line bounced between cores) runs its Model instead, where
// it has one, labelled modelled.

// oneThreadWhy is the browser fact behind every adaptation.
const oneThreadWhy = "Go WebAssembly in the browser runs on one thread"

// threadsWhy is the fact behind an adaptation to o's threads: the
// browser's, or that of a server limited to o.MaxThreads.
func threadsWhy(o Options) string {
	if o.Browser {
		return oneThreadWhy
	}
	return fmt.Sprintf("this server runs a cell on at most %d thread%s", o.MaxThreads, map[bool]string{true: "", false: "s"}[o.MaxThreads == 1])
}

// Fit returns the run that a runtime with o's limits can do of s with
// raw: s and raw unchanged where it can run them as asked; raw with its
// threads parameter lowered to o.MaxThreads where only the default asked
// for more; or s's model (a Spec whose Run is s.Model and whose results
// are labelled modelled) where the experiment needs more threads at once
// than o offers. note says what was changed and what the server would
// show ("" when nothing was). Where nothing fits, s and raw come back
// unchanged and Check refuses them.
func (s Spec) Fit(raw map[string]string, o Options) (Spec, map[string]string, string) {
	if o.MaxThreads <= 0 {
		return s, raw, ""
	}
	def, hasThreads := "", false
	for _, p := range s.Params {
		if p.Name == "threads" {
			def, hasThreads = p.Default, true
		}
	}
	want := s.MinThreads
	v, explicit := raw["threads"]
	if !explicit {
		v = def
	}
	n := 0
	if hasThreads {
		if x, err := strconv.Atoi(v); err == nil {
			n = x
		}
	}
	switch {
	case s.Model != nil && (want > o.MaxThreads || explicit && n > o.MaxThreads):
		m := s
		m.MinThreads = 0
		m.modelled = true
		m.Run = func(ctx context.Context, raw map[string]string, hooks *Hooks) (*Result, error) {
			r, err := s.Model(ctx, raw, hooks)
			if err != nil {
				return nil, err
			}
			r.Modelled = true
			return r, nil
		}
		m.RunData = nil
		threads := max(want, n)
		if !o.Browser {
			return m, raw, fmt.Sprintf("modelled, not measured: %s needs %d threads running at the same time and %s; "+
				"this cell runs a model of %d cores instead, and grades the prediction against it — a server with more threads measures it on real cores",
				s.Name, threads, threadsWhy(o), threads)
		}
		return m, raw, fmt.Sprintf("modelled, not measured: %s needs %d threads running at the same time and %s; "+
			"this cell runs a model of %d cores instead, and grades the prediction against it — the server measures it on real cores (see the reference run)",
			s.Name, threads, threadsWhy(o), threads)
	case !explicit && hasThreads && n > o.MaxThreads && want <= o.MaxThreads:
		r := maps.Clone(raw)
		if r == nil {
			r = map[string]string{}
		}
		r["threads"] = strconv.Itoa(o.MaxThreads)
		if !o.Browser {
			return s, r, fmt.Sprintf("on %d thread: %s, so this runs threads=%d (the experiment's default is threads=%s)",
				o.MaxThreads, threadsWhy(o), o.MaxThreads, def)
		}
		return s, r, fmt.Sprintf("on %d thread: %s, so this runs threads=%d; the server also runs threads=%s (see the reference run)",
			o.MaxThreads, threadsWhy(o), o.MaxThreads, def)
	}
	return s, raw, ""
}
