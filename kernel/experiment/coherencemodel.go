package experiment

import (
	"context"
	"fmt"
	"strings"

	"cachebook/engine/cachesim"
)

// The models of the experiments whose point needs threads running at the
// same time (false sharing, lock contention, core-to-core hand-overs):
// what a one-thread runtime runs instead (see Spec.Fit). They drive the
// two-or-more-core MESI model of engine/cachesim with the experiment's
// access pattern, count the lines that move between cores per operation,
// and price them with the assumed costs below.

// Assumed costs of the coherence models, in nanoseconds.
const (
	// modelAtomicNS is an atomic increment (LOCK XADD) of a line in the
	// core's own L1: about 18–20 cycles at 3 GHz.
	modelAtomicNS = 6.0
	// modelPlainNS is a plain increment (load and store, store-to-load
	// forwarded) of a line in L1: about 5 cycles.
	modelPlainNS = 1.5
	// modelTransferNS is one line handed from one core's cache to
	// another's through a shared L3: lesson 5's core-to-core cell measures
	// 20–80 ns between cores of one L3.
	modelTransferNS = 40.0
	// modelUpgradeNS is invalidating other copies of a line the core
	// holds Shared: a round trip with no data.
	modelUpgradeNS = modelTransferNS / 2
)

// modelRounds is how many rounds of one operation per core a coherence
// model runs after its warm-up round.
const modelRounds = 1000

// coherencePerOp is the coherence traffic per operation of a model run.
type coherencePerOp struct {
	Transfers, Invalidations, Upgrades float64
	States                             string // each core's state of its line at the end
}

// ns prices one operation: local costs local ns, each transfer and
// upgrade its assumed cost.
func (c coherencePerOp) ns(local float64) float64 {
	return local + c.Transfers*modelTransferNS + c.Upgrades*modelUpgradeNS
}

// runCoherence runs cores in strict rotation, each doing op(core) once per
// round — the worst case, both cores at the same rate, which real cores
// approach when they run at the same time — and returns the traffic per
// operation after a warm-up round. addr(core) is the line a core's
// operation ends on, for the final states.
func runCoherence(ctx context.Context, cores int, op func(c *cachesim.Coherence, core int), addr func(core int) uint64) (coherencePerOp, error) {
	c, err := cachesim.NewCoherence(cores, 64)
	if err != nil {
		return coherencePerOp{}, err
	}
	for core := range cores {
		op(c, core)
	}
	before := c.Stats()
	for range modelRounds {
		for core := range cores {
			op(c, core)
		}
	}
	if err := ctx.Err(); err != nil {
		return coherencePerOp{}, err
	}
	s := c.Stats()
	ops := float64(modelRounds * cores)
	states := make([]string, cores)
	for core := range cores {
		states[core] = fmt.Sprintf("core %d: %v", core, c.State(core, addr(core)))
	}
	return coherencePerOp{
		Transfers:     float64(s.Transfers-before.Transfers) / ops,
		Invalidations: float64(s.Invalidations-before.Invalidations) / ops,
		Upgrades:      float64(s.Upgrades-before.Upgrades) / ops,
		States:        strings.Join(states, ", "),
	}, nil
}

// modelNote says what every coherence model assumes.
func modelNote(cores int) string {
	return fmt.Sprintf("modelled: %d cores with private caches kept coherent by MESI (engine/cachesim: Modified, Exclusive, Shared, Invalid per line and core), "+
		"taking turns one operation each — the worst case, as when they truly run at the same time; a line handed between cores costs an assumed %.0f ns "+
		"(a shared L3; lesson 5's core-to-core cell measures it on a server), an invalidation without data %.0f ns, an atomic increment in L1 %.0f ns, a plain one %.1f ns. "+
		"Real cores sometimes win a few operations in a row, so measured slowdowns are often lower than the model's",
		cores, modelTransferNS, modelUpgradeNS, modelAtomicNS, modelPlainNS)
}

// falseSharingModel is the false-sharing experiment on the coherence
// model: each core increments its own counter, stride bytes from its
// neighbour's.
func falseSharingModel(ctx context.Context, s Spec, raw map[string]string) (*Result, error) {
	return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
		threads := p.Int("threads", 1, 64)
		var modes []string
		for m := range splitList(p.String("modes")) {
			if m != "atomic" && m != "plain" {
				p.fail(fmt.Errorf("modes must list atomic and/or plain, got %q", m))
			}
			modes = append(modes, m)
		}
		if err := p.err(); err != nil {
			return err
		}
		data := &FalseSharingData{Threads: threads, Reps: 1}
		t := Table{
			Title: fmt.Sprintf("MODELLED (not measured): %d cores incrementing their own counters in turn, MESI coherence", threads),
			Columns: []string{"layout", "stride", "mode", "lines moved/inc", "invalidations/inc", "states at the end",
				"modelled ns/op", "vs padded-128"},
		}
		for _, mode := range modes {
			local := modelAtomicNS
			if mode == "plain" {
				local = modelPlainNS
			}
			var rows []FalseSharingRow
			var traffic []coherencePerOp
			for _, lay := range counterLayouts {
				addr := func(core int) uint64 { return uint64(core * lay.stride) }
				tr, err := runCoherence(ctx, threads, func(c *cachesim.Coherence, core int) {
					if mode == "plain" {
						c.Read(core, addr(core))
					}
					c.Write(core, addr(core))
				}, addr)
				if err != nil {
					return err
				}
				traffic = append(traffic, tr)
				rows = append(rows, FalseSharingRow{Layout: lay.name, Stride: lay.stride, Mode: mode,
					CPUNSPerOp: tr.ns(local), CPUShare: 1, Overlap: 1})
			}
			base := rows[len(rows)-1].CPUNSPerOp
			for i := range rows {
				rows[i].Slowdown = rows[i].CPUNSPerOp / base
				t.Rows = append(t.Rows, []string{rows[i].Layout, fmt.Sprintf("%d B", rows[i].Stride), mode,
					fmt.Sprintf("%.2f", traffic[i].Transfers), fmt.Sprintf("%.2f", traffic[i].Invalidations), traffic[i].States,
					fmt.Sprintf("%.1f", rows[i].CPUNSPerOp), fmtRatio(rows[i].Slowdown)})
			}
			if data.Verdict.Text == "" && threads > 1 {
				x := rows[0].Slowdown
				data.Verdict = Verdict{Ratio: x, Low: x, High: x, Rounds: 1,
					Text: fmt.Sprintf("modelled: packed %s× slower than padded-128 (%s mode: %.2f lines moved per increment against none)", fmtX(x, x), mode, traffic[0].Transfers)}
			}
			data.Rows = append(data.Rows, rows...)
		}
		r.Data = data
		r.Tables = append(r.Tables, t)
		r.Notes = append(r.Notes,
			"packed: 8 counters share one 64-byte line, so every increment must take the line from the core that wrote it last: the model counts one line moved and one copy invalidated per increment; padded, each core keeps its line Modified and nothing moves",
			modelNote(threads))
		if threads == 1 {
			r.Notes = append(r.Notes, "with 1 core nothing is shared: the model shows no slowdown")
		}
		if data.Verdict.Text != "" {
			r.Notes = append(r.Notes, "verdict: "+data.Verdict.Text)
		}
		return nil
	})
}
