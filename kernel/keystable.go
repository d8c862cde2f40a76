package kernel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"cachebook/kernel/latency"
	"cachebook/kernel/sizing"
)

// KeysTable serialises the generation of the keys table (package sizing)
// on one engine, so that sessions sharing the engine generate it once:
// the Manager gives all its sessions one, NewExecutor makes one for an
// executor on its own.
type KeysTable struct {
	mu sync.Mutex
	// measured is the last cache level measured on this machine, and
	// probed whether it was looked for (0: it could not be measured).
	measured int64
	probed   bool
	// onProbe, when set, is told what a probe measured (NewKeysTableFrom).
	onProbe func(bytes int64)
}

// NewKeysTableFrom returns a KeysTable for a runtime that keeps the
// measured last cache level itself, such as the browser in its own
// storage: measured, when positive, is used instead of a probe (the
// caller has checked its age against sizing.MeasuredMaxAge), and onProbe,
// when not nil, receives what a probe measures, for the caller to store.
func NewKeysTableFrom(measured int64, onProbe func(bytes int64)) *KeysTable {
	k := &KeysTable{onProbe: onProbe}
	if measured > 0 {
		k.measured, k.probed = measured, true
	}
	return k
}

// lastLevel returns this machine's last cache level as a short latency
// probe measures it: stored under the user's cache directory for a week,
// else probed now (a second or two) and stored. It returns 0 when the
// probe finds no memory plateau; the caller then sizes from the OS's
// figure. k.mu must be held.
func (k *KeysTable) lastLevel(ctx context.Context) int64 {
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

// mentionsKeys matches SQL that names the generated keys table.
var mentionsKeys = regexp.MustCompile(`(?i)\b(from|join|describe)\s+keys\b`)

// ensureKeys generates and registers the keys table (package sizing) the
// first time a cell names it, sized from this machine's measured last
// cache level (KeysTable.lastLevel) within the cell memory cap, and returns the sentence that states the sizes, for
// the cell's output. It returns "" for SQL that does not name keys, and
// leaves alone a keys table the data directory already has.
func ensureKeys(ctx context.Context, env *Env, src string) (string, error) {
	if env.db == nil || env.engine == nil || !mentionsKeys.MatchString(src) {
		return "", nil
	}
	keys := env.keys
	if keys == nil {
		keys = new(KeysTable)
	}
	keys.mu.Lock()
	defer keys.mu.Unlock()
	plan := sizing.ForMeasured(keys.lastLevel(ctx), sizing.RuntimeBudget(env.Limits().CellMemory))
	res, err := env.engine.Exec(ctx, "SHOW TABLES", nil)
	if err != nil {
		return "", fmt.Errorf("keys table: %w", err)
	}
	for _, r := range res {
		for i := 0; len(r.Vecs) > 0 && i < r.Rows; i++ {
			if string(r.Vecs[0].Str(i)) == sizing.Table {
				return plan.String(), nil
			}
		}
	}
	if err := plan.Register(ctx, env.db, 1); err != nil {
		return "", fmt.Errorf("keys table: %w", err)
	}
	// Decode both columns once, so that the lesson's cells time their
	// GROUP BY and not the first decoding of whichever column they read
	// first (the engine keeps decoded columns cached).
	if _, err := env.engine.Exec(ctx, "SELECT count(*) FROM keys WHERE k = 1 OR s = -1", nil); err != nil {
		return "", fmt.Errorf("keys table: %w", err)
	}
	return plan.String(), nil
}
