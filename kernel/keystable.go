package kernel

import (
	"context"
	"fmt"
	"regexp"
	"sync"

	"cachebook/kernel/sizing"
)

// KeysTable serialises the generation of the keys table (package sizing)
// on one engine, so that sessions sharing the engine generate it once:
// the Manager gives all its sessions one, NewExecutor makes one for an
// executor on its own.
type KeysTable struct{ mu sync.Mutex }

// mentionsKeys matches SQL that names the generated keys table.
var mentionsKeys = regexp.MustCompile(`(?i)\b(from|join|describe)\s+keys\b`)

// ensureKeys generates and registers the keys table (package sizing) the
// first time a cell names it, sized from this machine's caches within the
// cell memory cap, and returns the sentence that states the sizes, for
// the cell's output. It returns "" for SQL that does not name keys, and
// leaves alone a keys table the data directory already has.
func ensureKeys(ctx context.Context, env *Env, src string) (string, error) {
	if env.db == nil || env.engine == nil || !mentionsKeys.MatchString(src) {
		return "", nil
	}
	plan := sizing.ForRuntime(env.Limits().CellMemory)
	if env.keys != nil {
		env.keys.mu.Lock()
		defer env.keys.mu.Unlock()
	}
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
