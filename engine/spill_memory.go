package engine

import (
	"fmt"
	"sync"

	"cachebook/engine/spill"
	"cachebook/engine/units"
)

// spillPlace is where a statement's spilled partitions go: temporary
// files under temp_directory, or memory (the browser's WebAssembly, which
// has no temporary files, or Options.SpillToMemory), where they share the
// engine's per-query cap with the statement.
type spillPlace struct {
	memory     bool
	cellMemory int64 // Options.QueryMemory: what a query may use in all
}

// spillPlace returns where db's statements spill.
func (db *DB) spillPlace() spillPlace {
	return spillPlace{memory: db.opts.SpillToMemory || !spill.Supported(), cellMemory: db.opts.QueryMemory}
}

// openSpace opens a statement's spill space with settings st at p.
func openSpace(st Settings, p spillPlace) (*spill.Space, error) {
	limit, err := spaceLimit(st, p)
	if err != nil {
		return nil, err
	}
	if p.memory {
		return spill.OpenMemory(limit), nil
	}
	root := st.TempDirectory
	if root == "" {
		root = DefaultTempDirectory()
	}
	return spill.Open(root, limit)
}

// lazySpace is an operator's spill space, opened when its aggregation
// first spills and closed (its files removed) when the operator closes.
type lazySpace struct {
	mu    sync.Mutex
	st    Settings
	place spillPlace
	space *spill.Space
}

// open opens the space with the settings and place set beforehand, once.
func (l *lazySpace) open() (*spill.Space, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.space == nil {
		sp, err := openSpace(l.st, l.place)
		if err != nil {
			return nil, err
		}
		l.space = sp
	}
	return l.space, nil
}

// close removes the spill files, if any.
func (l *lazySpace) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.space != nil {
		l.space.Close()
		l.space = nil
	}
}

// spaceLimit is the most a statement's spill space may hold: the setting
// max_temp_directory_size for temporary files, and in memory no more than
// the memory the cell may use (p.cellMemory; 0: no cap) leaves beside the
// statement's own memory_limit — the spilled partitions are charged
// against the cell's memory, as its tables are against memory_limit. It
// fails when memory_limit leaves nothing to spill to.
func spaceLimit(st Settings, p spillPlace) (int64, error) {
	limit := st.MaxTempDirectorySize
	if !p.memory || p.cellMemory <= 0 {
		return limit, nil
	}
	room := p.cellMemory - st.MemoryLimit
	if room <= 0 {
		return 0, fmt.Errorf("spill: this runtime has no temporary files and spills to memory, and memory_limit (%s) leaves nothing of the %s a query may use here: lower memory_limit to leave room for the spilled partitions: %w",
			units.HumanBytes(st.MemoryLimit), units.HumanBytes(p.cellMemory), spill.ErrSpaceLimit)
	}
	if limit <= 0 || room < limit {
		limit = room
	}
	return limit, nil
}
