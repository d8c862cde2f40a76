package cachesim

import "fmt"

// MESI is the coherence state of one line in one core's private cache.
type MESI uint8

// The four MESI states.
const (
	// Invalid: the core holds no valid copy.
	Invalid MESI = iota
	// Shared: a clean copy that other cores may hold too; a write must
	// first invalidate them.
	Shared
	// Exclusive: the only copy, clean; a write needs no message.
	Exclusive
	// Modified: the only copy, dirty; another core's access must fetch it
	// from this core.
	Modified
)

func (s MESI) String() string {
	switch s {
	case Shared:
		return "S"
	case Exclusive:
		return "E"
	case Modified:
		return "M"
	}
	return "I"
}

// CoherenceStats counts the coherence traffic of a Coherence model.
type CoherenceStats struct {
	Reads  int64 `json:"reads"`
	Writes int64 `json:"writes"`
	// Hits are accesses the core's own copy served without a message.
	Hits int64 `json:"hits"`
	// Transfers are lines handed from another core's cache (a read or a
	// write that found the line Modified or Exclusive elsewhere): the
	// cross-core trip that false sharing pays on every increment.
	Transfers int64 `json:"transfers"`
	// Invalidations are copies removed from other cores by a write.
	Invalidations int64 `json:"invalidations"`
	// Upgrades are writes to a Shared copy: no data moves, but the other
	// copies must be invalidated first.
	Upgrades int64 `json:"upgrades"`
	// Fills are lines fetched from memory (no core held them).
	Fills int64 `json:"fills"`
}

// Coherence models the private caches of a few cores kept coherent by the
// MESI protocol, the way a snooping bus or a directory in the shared last
// level keeps them. It models coherence only: each core's cache is
// unbounded (nothing is evicted for capacity), so every message it counts
// is caused by another core touching the same line. That is what false
// sharing and lock hand-overs cost, and what one thread cannot measure.
type Coherence struct {
	lineShift uint
	cores     int
	lines     map[uint64][]MESI
	stats     CoherenceStats
}

// NewCoherence returns a model of cores private caches with lines of
// lineSize bytes (a power of two).
func NewCoherence(cores, lineSize int) (*Coherence, error) {
	if cores < 1 || cores > 64 {
		return nil, fmt.Errorf("cachesim: coherence model of %d cores, want 1 to 64", cores)
	}
	if lineSize < 8 || lineSize&(lineSize-1) != 0 {
		return nil, fmt.Errorf("cachesim: line size %d is not a power of two of at least 8", lineSize)
	}
	shift := uint(0)
	for 1<<shift < lineSize {
		shift++
	}
	return &Coherence{lineShift: shift, cores: cores, lines: make(map[uint64][]MESI)}, nil
}

// Stats returns the traffic counted so far.
func (c *Coherence) Stats() CoherenceStats { return c.stats }

// State returns core's state for the line holding addr.
func (c *Coherence) State(core int, addr uint64) MESI {
	if st, ok := c.lines[addr>>c.lineShift]; ok {
		return st[core]
	}
	return Invalid
}

func (c *Coherence) line(addr uint64) []MESI {
	l := addr >> c.lineShift
	st, ok := c.lines[l]
	if !ok {
		st = make([]MESI, c.cores)
		c.lines[l] = st
	}
	return st
}

// Read is a load by core from addr.
func (c *Coherence) Read(core int, addr uint64) {
	c.stats.Reads++
	st := c.line(addr)
	if st[core] != Invalid {
		c.stats.Hits++
		return
	}
	other := false
	for i, s := range st {
		if i == core || s == Invalid {
			continue
		}
		if s == Modified || s == Exclusive {
			// The owner supplies the line (writing a dirty one back) and
			// keeps a shared copy.
			c.stats.Transfers++
		}
		st[i] = Shared
		other = true
	}
	if other {
		st[core] = Shared
		return
	}
	c.stats.Fills++
	st[core] = Exclusive
}

// Write is a store, or an atomic read-modify-write, by core to addr: the
// core must hold the only copy, so every other copy is invalidated and a
// line held elsewhere is transferred first (a read for ownership).
func (c *Coherence) Write(core int, addr uint64) {
	c.stats.Writes++
	st := c.line(addr)
	switch st[core] {
	case Modified, Exclusive:
		c.stats.Hits++
		st[core] = Modified
		return
	case Shared:
		c.stats.Upgrades++
	}
	moved, others := false, false
	for i, s := range st {
		if i == core || s == Invalid {
			continue
		}
		moved = moved || s == Modified || s == Exclusive
		others = true
		st[i] = Invalid
		c.stats.Invalidations++
	}
	switch {
	case moved:
		c.stats.Transfers++
	case st[core] == Shared:
		// An upgrade: the data is here already.
	case others:
		// Shared copies elsewhere supplied it: it crossed from another
		// core's cache.
		c.stats.Transfers++
	default:
		c.stats.Fills++
	}
	st[core] = Modified
}
