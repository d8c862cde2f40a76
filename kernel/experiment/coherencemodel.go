package experiment

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cachebook/engine/cachesim"
	"cachebook/engine/units"
	"cachebook/kernel/latency"
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
	for range 20 * modelRounds { // warm: every line the pattern uses in its steady state
		for core := range cores {
			op(c, core)
		}
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
		c := &Chart{Title: "Modelled cost per increment (not measured)", XTitle: "layout", YTitle: "modelled ns per increment", Bars: true}
		for _, mode := range modes {
			sr := ChartSeries{Name: mode}
			for _, row := range data.Rows {
				if row.Mode == mode {
					sr.Points = append(sr.Points, ChartPoint{Label: row.Layout, Y: row.CPUNSPerOp})
				}
			}
			c.Series = append(c.Series, sr)
		}
		r.Chart = c
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

// modelCacheOpNS is one operation of the lock-contention experiment's
// cache on one core, uncontended: a map lookup and the variant's own
// atomics on lines the core holds.
const modelCacheOpNS = 25.0

// lockContentionModel is the lock-contention experiment on the coherence
// model: every operation touches the variant's shared words (a mutex's
// state, a read-write lock's reader count, a snapshot's pointer, a
// shard's lock, nothing shared for per-thread state) and reads, or now
// and then writes, one entry of the cache.
func lockContentionModel(ctx context.Context, s Spec, raw map[string]string) (*Result, error) {
	return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
		threads := p.Int("threads", 1, 64)
		keys := p.Int("keys", 1, 1<<24)
		writes := p.Float("writes", 0, 1)
		shards := p.Int("shards", 1, 4096)
		var variants []string
		for v := range splitList(p.String("variants")) {
			variants = append(variants, v)
		}
		if err := p.err(); err != nil {
			return err
		}
		const (
			lockLine  = 0
			entryBase = 1 << 20
			privBase  = 1 << 30
		)
		data := &LockContentionData{Keys: keys, Writes: writes, Shards: shards}
		t := Table{
			Title:   fmt.Sprintf("MODELLED (not measured): %d cores operating on one shared cache in turn, MESI coherence", threads),
			Columns: []string{"variant", "threads", "lines moved/op", "modelled ns/op (each core)", "ops/µs (all)", "vs 1 thread"},
		}
		for _, variant := range variants {
			var one float64
			for _, n := range threadSteps(threads) {
				rngs := make([]splitmix64, n)
				for i := range rngs {
					rngs[i] = splitmix64(i + 1)
				}
				op := func(c *cachesim.Coherence, core int) {
					x := rngs[core].next()
					k := x % uint64(keys)
					write := float64(x>>40)/float64(1<<24) < writes
					entry := uint64(entryBase) + k*64
					access := func(a uint64) {
						if write {
							c.Write(core, a)
						} else {
							c.Read(core, a)
						}
					}
					switch variant {
					case "mutex":
						c.Write(core, lockLine) // Lock
						access(entry)
						c.Write(core, lockLine) // Unlock
					case "rwmutex":
						c.Write(core, lockLine) // RLock: the reader count
						access(entry)
						c.Write(core, lockLine) // RUnlock
					case "snapshot":
						c.Read(core, lockLine) // load the map's pointer
						if write {
							c.Write(core, lockLine) // swap in a copy
						}
						access(entry)
					case "sharded":
						l := (k * 0x9e3779b97f4a7c15 >> 32) % uint64(shards) * 64
						c.Write(core, l)
						access(entry)
						c.Write(core, l)
					default: // per-thread: nothing shared
						access(uint64(privBase) + uint64(core)<<24 + k*64)
					}
				}
				tr, err := runCoherence(ctx, n, op, func(int) uint64 { return lockLine })
				if err != nil {
					return err
				}
				per := tr.ns(modelCacheOpNS)
				rate := float64(n) / per // ops per ns, all cores
				if variant == "mutex" {
					rate = 1 / per // the critical section admits one core at a time
				}
				if n == 1 {
					one = rate
				}
				row := LockContentionRow{Variant: variant, Threads: n, OpsPerS: rate * 1e9, Scaling: rate / one, CPUShare: 1}
				data.Rows = append(data.Rows, row)
				t.Rows = append(t.Rows, []string{variant, strconv.Itoa(n), fmt.Sprintf("%.2f", tr.Transfers+tr.Upgrades),
					fmt.Sprintf("%.1f", per), fmt.Sprintf("%.1f", rate*1e3), fmtRatio(row.Scaling)})
			}
		}
		r.Data = data
		r.Tables = append(r.Tables, t)
		c := &Chart{Title: "Modelled scaling with threads (not measured)", XTitle: "threads", YTitle: "modelled ops/s vs 1 thread"}
		for _, variant := range variants {
			sr := ChartSeries{Name: variant}
			for _, row := range data.Rows {
				if row.Variant == variant {
					sr.Points = append(sr.Points, ChartPoint{X: float64(row.Threads), Y: row.Scaling})
				}
			}
			c.Series = append(c.Series, sr)
		}
		r.Chart = c
		r.Notes = append(r.Notes,
			"mutex and read-write lock: every operation writes the lock's word, so the line holding it moves to each core in turn — a read-write lock lets readers overlap but still writes its reader count; the mutex also lets one core at a time into its critical section",
			"snapshot: readers only read the pointer, so the line stays Shared in every core and nothing moves until a writer swaps it; sharded: two cores collide only on the same shard; per-thread: nothing is shared at all",
			fmt.Sprintf("an uncontended operation is assumed to cost %.0f ns on one core", modelCacheOpNS),
			modelNote(threads))
		return nil
	})
}

// c2cModelSize is the working set whose load latency prices a hand-over
// in the c2c model: beyond a core's private L1 and, on most cores, its
// L2, within the cache that cores share.
const c2cModelSize = 2 << 20

// c2cModel is the c2c experiment on the coherence model: two cores take
// turns writing one line, each after reading the other's write. The model
// counts what moves per hand-over and prices a moved line as a load from
// the cache the cores share, measured here on one thread.
func c2cModel(ctx context.Context, s Spec, raw map[string]string) (*Result, error) {
	return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
		p.String("pairs")
		p.Duration("duration", time.Millisecond, 2*time.Second)
		reps := p.Int("reps", 1, 20)
		if err := p.err(); err != nil {
			return err
		}
		tr, err := runCoherence(ctx, 2, func(c *cachesim.Coherence, core int) {
			c.Read(core, 0) // spin until the line holds the other's value
			c.Write(core, 0)
		}, func(int) uint64 { return 0 })
		if err != nil {
			return err
		}
		samples := max(5*reps, 15)
		lat, err := sharedLoadNS(ctx, c2cModelSize, samples)
		if err != nil {
			return err
		}
		ns := tr.Transfers*lat + tr.Upgrades*lat/2
		data := &C2CData{Reps: reps, Rows: []C2CPair{{CPUs: [2]int{-1, -1},
			Relation:  fmt.Sprintf("modelled: two cores sharing the cache a %s working set lives in", units.HumanBytes(c2cModelSize)),
			Handovers: modelRounds * 2, NSPerHandover: ns, MedianNS: ns, CPUShare: 1, Valid: true}}}
		r.Data = data
		r.Tables = append(r.Tables, Table{
			Title:   "MODELLED (not measured): two cores bouncing one line, MESI coherence",
			Columns: []string{"lines moved/hand-over", "invalidations/hand-over", "load from the shared cache (measured here)", "modelled ns/hand-over"},
			Rows: [][]string{{fmt.Sprintf("%.2f", tr.Transfers), fmt.Sprintf("%.2f", tr.Invalidations),
				fmt.Sprintf("%.1f ns", lat), fmt.Sprintf("%.1f", ns)}},
		})
		r.Notes = append(r.Notes,
			"each hand-over: the waiting core reads the line (the writer's Modified copy moves to it, both keep it Shared), then writes it (its copy is upgraded and the other invalidated) — one line moved and one invalidation per hand-over",
			fmt.Sprintf("priced with this machine's own latency: a dependent load from a %s working set (the fastest of %d samples of 2 ms, measured on this one thread) for the moved line, half that for the invalidation; a line moving between cores goes through the cache they share, so a hand-over costs about a shared-cache hit", units.HumanBytes(c2cModelSize), samples),
			"the server measures the real hand-over between two named CPUs; SMT siblings are faster, cores on different chiplets or sockets slower")
		return nil
	})
}

// sharedLoadNS measures the time of one dependent load from a random
// cycle over size bytes with the latency cell's own code (kernel/latency):
// the fastest of reps samples.
func sharedLoadNS(ctx context.Context, size, reps int) (float64, error) {
	// Many short samples, the fastest kept: a 2 ms window often runs
	// undisturbed even on a busy machine, where the browser has only the
	// wall clock.
	res, err := latency.Run(ctx, latency.Config{MinBytes: int64(size), MaxBytes: int64(size), PointsPerOctave: 1,
		Reps: reps, SampleTime: 2 * time.Millisecond})
	if err != nil {
		return 0, err
	}
	if len(res.Points) == 0 {
		return 0, fmt.Errorf("the latency probe at %s gave no point", units.HumanBytes(int64(size)))
	}
	return res.Points[0].MinNs, nil // the fastest sample: a busy machine only adds
}
