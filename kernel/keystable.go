package kernel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"cachebook/engine"
	"cachebook/kernel/latency"
	"cachebook/kernel/sizing"
)

// keysTable builds the keys table (package sizing) of one engine the
// first time a statement names it: the engine resolves the name through
// the builder RegisterKeys registers (engine.DB.RegisterBuilder).
type keysTable struct {
	cellMemory int64 // the cell memory of the kernel that registered it (0: none)

	mu sync.Mutex
	// measured is the last cache level measured on this machine, and
	// probed whether it was looked for (0: it could not be measured).
	measured int64
	probed   bool
	// onProbe, when set, is told what a probe measured (NewKeysTableFrom).
	onProbe func(bytes int64)
}

// RegisterKeysFrom is RegisterKeys for a runtime that keeps the measured
// last cache level itself, such as the browser in its own storage:
// measured, when positive, is used instead of a probe (the caller has
// checked its age against sizing.MeasuredMaxAge), and onProbe, when not
// nil, receives what a probe measures, for the caller to store. Call it
// before the kernel is made: the first registration on a DB stays.
func RegisterKeysFrom(db *engine.DB, cellMemory, measured int64, onProbe func(bytes int64)) {
	k := newKeysTableFrom(cellMemory, measured, onProbe)
	db.RegisterBuilder(sizing.Table, k.build)
}

func newKeysTableFrom(cellMemory, measured int64, onProbe func(bytes int64)) *keysTable {
	k := &keysTable{cellMemory: cellMemory, onProbe: onProbe}
	if measured > 0 {
		k.measured, k.probed = measured, true
	}
	return k
}

// RegisterKeys makes the keys table (package sizing) a table of db that
// the engine builds the first time a statement names it, sized from this
// machine's measured last cache level within the smaller of cellMemory
// (when positive) and the naming session's memory limit. A keys table in
// db's data directory is used as it is. Executors and managers register
// it on their engine; the first registration on a DB stays.
func RegisterKeys(db *engine.DB, cellMemory int64) {
	k := &keysTable{cellMemory: cellMemory}
	db.RegisterBuilder(sizing.Table, k.build)
}

// build is the keys table's engine.TableBuilder: it generates and
// registers the table, decodes its columns once, and returns the sentence
// that states its sizes, which the engine gives every statement that
// names the table (Result.Notes) and the sql runner prints.
func (k *keysTable) build(ctx context.Context, db *engine.DB, memoryLimit int64) (string, error) {
	mem := memoryLimit
	if k.cellMemory > 0 && (mem <= 0 || k.cellMemory < mem) {
		mem = k.cellMemory
	}
	plan := sizing.ForMeasured(k.lastLevel(ctx), sizing.RuntimeBudget(mem))
	if err := plan.Register(ctx, db, 1); err != nil {
		return "", err
	}
	// Decode both columns once, so that the lesson's cells time their
	// GROUP BY and not the first decoding of whichever column they read
	// first (the engine keeps decoded columns cached).
	s := db.NewSession()
	if memoryLimit > 0 {
		if err := s.Set("memory_limit", fmt.Sprint(memoryLimit)); err != nil {
			return "", err
		}
	}
	if _, err := s.Exec(ctx, "SELECT count(*) FROM keys WHERE k = 1 OR s = -1", nil); err != nil {
		return "", fmt.Errorf("decoding the keys table: %w", err)
	}
	return plan.String(), nil
}

// lastLevel returns this machine's last cache level as a short latency
// probe measures it: stored under the user's cache directory for a week,
// else probed now (a second or two) and stored. It returns 0 when the
// probe finds no memory plateau; the caller then sizes from the OS's
// figure.
func (k *keysTable) lastLevel(ctx context.Context) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.probed {
		return k.measured
	}
	dir := ""
	if d, err := os.UserCacheDir(); err == nil {
		dir = filepath.Join(d, "cachebook")
	}
	now := time.Now()
	if b, ok := sizing.LoadMeasured(dir, now); dir != "" && ok {
		k.measured, k.probed = b, true
		return b
	}
	b, err := latency.ProbeLastLevel(ctx)
	if err != nil {
		if ctx.Err() == nil {
			k.probed = true // no plateau here: do not probe again
		}
		return 0
	}
	k.measured, k.probed = b, true
	if k.onProbe != nil {
		k.onProbe(b)
	}
	if dir != "" {
		_ = sizing.SaveMeasured(dir, b, now) // a cache: failing to store it costs a probe next time
	}
	return b
}
