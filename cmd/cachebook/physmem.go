package main

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"cachebook/engine"
)

// physicalMemory returns the memory this process may use: the machine's
// MemTotal, or its cgroup's memory.max when that is lower (0 when neither
// can be read, e.g. off Linux).
func physicalMemory() int64 {
	var total int64
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(rest)
				if len(f) > 0 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						total = kb << 10
					}
				}
			}
		}
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}

// defaultCellMemory is a quarter of the memory this process may use (at
// least 256 MiB; 2 GiB when that is unknown), so that a few cells at their
// limit still leave the server room.
func defaultCellMemory() int64 {
	m := physicalMemory()
	if m <= 0 {
		return 2 << 30
	}
	return max(m/4, 256<<20)
}

// processMemory is the Go runtime's soft memory limit for this process,
// kept below what it may use by the engine's huge-page mappings. main sets
// it once; like the runtime setting it mirrors, it is process-wide.
var processMemory *memoryLimit

// memoryLimit keeps Go's heap and the engine's mappings together within
// total: the mappings of big hash tables and radix partitions are outside
// Go's heap, so the runtime's limit alone would let a query holding 3.7 GiB
// of partitions grow its heap to the full limit besides.
type memoryLimit struct {
	total  int64 // bytes for heap and mappings together
	mu     sync.Mutex
	mapped int64 // bytes the engine has mapped
}

// newMemoryLimit sets the runtime's soft memory limit to three quarters of
// the memory this process may use, unless GOMEMLIMIT already set one, which
// is then the total. The engine's budgets count what queries hold; without
// a soft limit the collector lets the heap grow to about twice what is
// live (GOGC=100) before it runs, so a query holding 4 GB could take 8 GB
// of the machine. Near the limit the collector runs more often instead. It
// returns nil when no limit applies.
func newMemoryLimit() *memoryLimit {
	total := debug.SetMemoryLimit(-1)
	if os.Getenv("GOMEMLIMIT") == "" {
		m := physicalMemory()
		if m <= 0 {
			return nil
		}
		total = m / 4 * 3
		debug.SetMemoryLimit(total)
	}
	if total <= 0 || total == math.MaxInt64 {
		return nil
	}
	return &memoryLimit{total: total}
}

// arenaMapped is the engine's OnArenaMapped: it lowers the heap's share of
// the total by the bytes mapped, down to an eighth of it. Workers map and
// unmap at once; the lock keeps the last limit set the one for the last
// count.
func (m *memoryLimit) arenaMapped(delta int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mapped += delta
	debug.SetMemoryLimit(max(m.total-m.mapped, m.total/8))
}

// openEngine opens an engine whose huge-page mappings count against the
// process's memory limit (every engine the binary opens itself goes
// through here; kernels get the same hook through kernel.Config).
func openEngine(o engine.Options) (*engine.DB, error) {
	o.OnArenaMapped = onArenaMapped()
	return engine.Open(o)
}

// onArenaMapped returns the callback for engine.Options.OnArenaMapped, or
// nil without a limit (tests that call run without main).
func onArenaMapped() func(int64) {
	if processMemory == nil {
		return nil
	}
	return processMemory.arenaMapped
}
