package experiment

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// LockContentionData is the typed result of the lock-contention experiment.
type LockContentionData struct {
	Keys   int                 `json:"keys"`
	Ops    int                 `json:"ops"` // per thread, per run
	Writes float64             `json:"writes"`
	Shards int                 `json:"shards"`
	Rows   []LockContentionRow `json:"rows"`
}

// LockContentionRow is one variant at one thread count.
type LockContentionRow struct {
	Variant string  `json:"variant"`
	Threads int     `json:"threads"`
	WallNS  int64   `json:"wall_ns"`
	OpsPerS float64 `json:"ops_per_s"`
	Scaling float64 `json:"scaling"` // ops/s relative to the same variant with 1 thread
	// CPUNSPerOp is the threads' CPU time per operation; a thread parked on
	// a contended lock uses none, so it can fall while wall time rises.
	CPUNSPerOp float64 `json:"cpu_ns_per_op"`
	// CPUShare is the fraction of wall x threads the threads were running:
	// low when they sleep on a lock or wait for a busy machine's cores.
	CPUShare  float64 `json:"cpu_share"`
	Updates   int64   `json:"updates"`    // update calls
	RealWrite int64   `json:"real_write"` // updates that changed the cache (the rest were redundant)
}

// sharedCache is a read-mostly map from key to value guarded one way or
// another. update stores v under k unless k already holds v and reports
// whether it wrote. w is the calling worker (only per-thread uses it).
// snapshot copies the contents (worker 0's copy for per-thread).
type sharedCache interface {
	get(w int, k uint64) (uint64, bool)
	update(w int, k, v uint64) bool
	snapshot() map[uint64]uint64
}

var cacheVariants = []string{"mutex", "rwmutex", "snapshot", "sharded", "per-thread"}

func newSharedCache(variant string, init map[uint64]uint64, shards, threads int) sharedCache {
	switch variant {
	case "per-thread":
		c := &perThreadCache{maps: make([]paddedMap, threads)}
		for i := range c.maps {
			c.maps[i].m = maps.Clone(init)
		}
		return c
	case "mutex":
		return &mutexCache{m: maps.Clone(init)}
	case "rwmutex":
		return &rwCache{m: maps.Clone(init)}
	case "snapshot":
		c := &snapshotCache{}
		m := maps.Clone(init)
		c.p.Store(&m)
		return c
	default: // sharded
		c := &shardedCache{shards: make([]cacheShard, shards)}
		for i := range c.shards {
			c.shards[i].m = make(map[uint64]uint64)
		}
		for k, v := range init {
			c.shards[mix64(k)%uint64(shards)].m[k] = v
		}
		return c
	}
}

// mutexCache takes one exclusive lock for every operation, reads included,
// like the original QueryConditionCache.
type mutexCache struct {
	mu sync.Mutex
	m  map[uint64]uint64
}

func (c *mutexCache) get(_ int, k uint64) (uint64, bool) {
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	return v, ok
}

func (c *mutexCache) update(_ int, k, v uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[k]; ok && old == v {
		return false
	}
	c.m[k] = v
	return true
}

func (c *mutexCache) snapshot() map[uint64]uint64 { return maps.Clone(c.m) }

// rwCache reads under a shared lock; an update first checks under the
// shared lock whether it is needed, then re-checks under the exclusive lock
// (double-checked locking, as in ClickHouse PR #80247).
type rwCache struct {
	mu sync.RWMutex
	m  map[uint64]uint64
}

func (c *rwCache) get(_ int, k uint64) (uint64, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

func (c *rwCache) update(_ int, k, v uint64) bool {
	c.mu.RLock()
	old, ok := c.m[k]
	c.mu.RUnlock()
	if ok && old == v {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[k]; ok && old == v {
		return false
	}
	c.m[k] = v
	return true
}

func (c *rwCache) snapshot() map[uint64]uint64 { return maps.Clone(c.m) }

// snapshotCache publishes an immutable map through an atomic pointer:
// readers take no lock at all; a writer checks the current snapshot, then
// under a mutex re-checks, copies, modifies and publishes a new snapshot.
type snapshotCache struct {
	p  atomic.Pointer[map[uint64]uint64]
	mu sync.Mutex
}

func (c *snapshotCache) get(_ int, k uint64) (uint64, bool) {
	v, ok := (*c.p.Load())[k]
	return v, ok
}

func (c *snapshotCache) update(_ int, k, v uint64) bool {
	if old, ok := (*c.p.Load())[k]; ok && old == v {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := *c.p.Load()
	if old, ok := cur[k]; ok && old == v {
		return false
	}
	next := maps.Clone(cur)
	next[k] = v
	c.p.Store(&next)
	return true
}

func (c *snapshotCache) snapshot() map[uint64]uint64 { return maps.Clone(*c.p.Load()) }

// shardedCache splits the keys over independent mutex-guarded maps, each
// shard on its own cache lines, so threads rarely meet on the same lock.
type shardedCache struct {
	shards []cacheShard
}

type cacheShard struct {
	mu sync.Mutex
	m  map[uint64]uint64
	_  [128 - 16]byte // keep neighbouring shards' locks off each other's lines
}

func (c *shardedCache) shard(k uint64) *cacheShard {
	return &c.shards[mix64(k)%uint64(len(c.shards))]
}

func (c *shardedCache) get(_ int, k uint64) (uint64, bool) {
	s := c.shard(k)
	s.mu.Lock()
	v, ok := s.m[k]
	s.mu.Unlock()
	return v, ok
}

func (c *shardedCache) update(_ int, k, v uint64) bool {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.m[k]; ok && old == v {
		return false
	}
	s.m[k] = v
	return true
}

func (c *shardedCache) snapshot() map[uint64]uint64 {
	out := make(map[uint64]uint64)
	for i := range c.shards {
		maps.Copy(out, c.shards[i].m)
	}
	return out
}

// perThreadCache gives every worker its own private copy: no lock and no
// shared line at all, at the price of one copy per thread and of updates
// that other threads never see (ClickHouse's thread-local timer_id fix).
type perThreadCache struct {
	maps []paddedMap
}

type paddedMap struct {
	m map[uint64]uint64
	_ [128 - 8]byte
}

func (c *perThreadCache) get(w int, k uint64) (uint64, bool) {
	v, ok := c.maps[w].m[k]
	return v, ok
}

func (c *perThreadCache) update(w int, k, v uint64) bool {
	m := c.maps[w].m
	if old, ok := m[k]; ok && old == v {
		return false
	}
	m[k] = v
	return true
}

func (c *perThreadCache) snapshot() map[uint64]uint64 { return maps.Clone(c.maps[0].m) }

// each calls f with every copy the cache holds.
func eachCopy(c sharedCache, f func(map[uint64]uint64) error) error {
	if pt, ok := c.(*perThreadCache); ok {
		for _, m := range pt.maps {
			if err := f(m.m); err != nil {
				return err
			}
		}
		return nil
	}
	return f(c.snapshot())
}

func lockContentionSpec() Spec {
	s := Spec{
		Name: "lock-contention",
		Summary: "a read-mostly shared cache behind sync.Mutex, sync.RWMutex, an atomic snapshot " +
			"(copy-on-write), sharded locks (ClickHouse QueryConditionCache)",
		Params: []Param{
			{"threads", strconv.Itoa(defaultThreads()), "largest thread count; runs 1, 2, 4, ... up to it (1..256)"},
			{"ops", "1000000", "cache operations per thread per run"},
			{"keys", "1024", "entries in the cache"},
			{"writes", "0.001", "fraction of operations that are updates (0..1); half of them find the value already there"},
			{"shards", "64", "shards of the sharded variant (1..4096)"},
			{"variants", "mutex,rwmutex,snapshot,sharded,per-thread", "variants to run"},
		},
	}
	s.Run = func(ctx context.Context, raw map[string]string, hooks *Hooks) (*Result, error) {
		return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
			return lockContention(ctx, p, r, hooks)
		})
	}
	s.Model = func(ctx context.Context, raw map[string]string, _ *Hooks) (*Result, error) {
		return lockContentionModel(ctx, s, raw)
	}
	s.Memory = func(p *params) int64 {
		// The initial map, the shared cache and one copy per thread (the
		// per-thread variant). A Go map of int keys holds about 48 bytes an
		// entry when full and more while it grows (measured: 54). The
		// heap in use also holds the garbage of each growth until the
		// collector runs, which at GOGC=100 may be as much again: beside
		// other packages' tests under the race detector, TestMemoryLimit
		// measured about 80 bytes an entry (31.6 MiB at 100,000 keys and
		// 2 threads). So 96.
		threads := int64(p.Int("threads", 1, 256))
		keys := int64(p.Int("keys", 1, 1<<24))
		return 96*keys*(threads+2) + 1<<20
	}
	return s
}

func lockContention(ctx context.Context, p *params, r *Result, hooks *Hooks) error {
	threads := p.Int("threads", 1, 256)
	ops := p.Int("ops", 1, 1<<40)
	keys := p.Int("keys", 1, 1<<24)
	writes := p.Float("writes", 0, 1)
	shards := p.Int("shards", 1, 4096)
	var variants []string
	for v := range splitList(p.String("variants")) {
		ok := false
		for _, known := range cacheVariants {
			ok = ok || v == known
		}
		if !ok {
			p.fail(fmt.Errorf("variants must be among %s, got %q", strings.Join(cacheVariants, ", "), v))
		}
		variants = append(variants, v)
	}
	if len(variants) == 0 {
		p.fail(fmt.Errorf("variants must list at least one of %s", strings.Join(cacheVariants, ", ")))
	}
	if err := p.err(); err != nil {
		return err
	}

	// Key k always holds 2k or 2k+1; an update picks one of the two at
	// random, so about half the updates are redundant.
	init := make(map[uint64]uint64, keys)
	for k := range uint64(keys) {
		init[k] = 2 * k
	}
	writeBelow := uint64(writes * (1 << 53))
	data := &LockContentionData{Keys: keys, Ops: ops, Writes: writes, Shards: shards}
	for _, variant := range variants {
		var one float64
		for _, n := range threadSteps(threads) {
			c := newSharedCache(variant, init, shards, n)
			var updates, real atomic.Int64
			label := fmt.Sprintf("%s, %d threads", variant, n)
			st, err := runWorkers(ctx, hooks, label, n, func(w int) error {
				rng := splitmix64(uint64(w+1) * 0x2545f4914f6cdd1d)
				var up, wr int64
				for done := 0; done < ops; {
					chunk := min(ops-done, 4096)
					for range chunk {
						x := rng.next()
						k := x % uint64(keys)
						if x>>11 < writeBelow {
							up++
							if c.update(w, k, 2*k+(x>>10)&1) {
								wr++
							}
							continue
						}
						v, ok := c.get(w, k)
						if !ok || v>>1 != k {
							return fmt.Errorf("%s: lookup of key %d found %d, %v", label, k, v, ok)
						}
					}
					done += chunk
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				updates.Add(up)
				real.Add(wr)
				return nil
			})
			if err != nil {
				return err
			}
			err = eachCopy(c, func(final map[uint64]uint64) error {
				if len(final) != keys {
					return fmt.Errorf("%s: cache has %d keys after the run, want %d", label, len(final), keys)
				}
				for k, v := range final {
					if v>>1 != k {
						return fmt.Errorf("%s: key %d holds %d, want %d or %d", label, k, v, 2*k, 2*k+1)
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			wall := max(st.Wall, 1)
			rate := float64(n) * float64(ops) / wall.Seconds()
			if n == 1 {
				one = rate
			}
			row := LockContentionRow{Variant: variant, Threads: n, WallNS: wall.Nanoseconds(), OpsPerS: rate,
				Updates: updates.Load(), RealWrite: real.Load(),
				CPUNSPerOp: float64(st.CPUTotal()) / (float64(n) * float64(ops)), CPUShare: st.CPUShare()}
			if one > 0 {
				row.Scaling = rate / one
			}
			data.Rows = append(data.Rows, row)
		}
	}
	r.Data = data
	t := Table{
		Title:   fmt.Sprintf("%d keys, %d ops per thread, %.3g%% updates", keys, ops, writes*100),
		Columns: []string{"variant", "threads", "wall", "ops/s (all)", "vs 1 thread", "CPU ns/op", "CPU share", "updates", "real writes"},
	}
	for _, row := range data.Rows {
		t.Rows = append(t.Rows, []string{row.Variant, strconv.Itoa(row.Threads), fmtMs(row.WallNS),
			fmtRate(row.OpsPerS), fmtRatio(row.Scaling), fmt.Sprintf("%.1f", row.CPUNSPerOp),
			fmt.Sprintf("%.0f%%", 100*row.CPUShare), strconv.FormatInt(row.Updates, 10), strconv.FormatInt(row.RealWrite, 10)})
	}
	r.Tables = append(r.Tables, t)
	r.Notes = append(r.Notes,
		"checked: every lookup hit, and every key still holds one of its two legal values",
		"CPU share below 100% with 1 thread means other processes were using the cores; with more threads it also drops when goroutines sleep on a contended lock",
		"mutex serialises readers too; rwmutex and snapshot check first and take the exclusive lock only for a real change (double-checked); snapshot readers take no lock but each real write copies the whole map; sharded spreads keys over padded locks; per-thread shares nothing (each thread's updates stay its own)",
		"ClickHouse (Intel's high-core-count article): QueryConditionCache::write under one exclusive lock made native_queued_spin_lock_slowpath 76% of CPU on 2x240 vCPUs; the double-checked fast path (PR #80247) cut it to 1% and raised Q10/Q11 QPS by 85%/89%",
	)
	if threads > r.Machine.GOMAXPROCS {
		r.Notes = append(r.Notes, fmt.Sprintf("threads above GOMAXPROCS (%d) time-share cores: they show lock hand-off cost, not parallel speed-up", r.Machine.GOMAXPROCS))
	}
	return nil
}
