package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
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

// softMemoryLimit sets the Go runtime's soft memory limit to three
// quarters of the memory this process may use, unless GOMEMLIMIT already
// set one. The engine's budgets count what queries hold; without a soft
// limit the collector lets the heap grow to about twice what is live
// (GOGC=100) before it runs, so a query holding 4 GB could take 8 GB of
// the machine. Near the limit the collector runs more often instead.
func softMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if m := physicalMemory(); m > 0 {
		debug.SetMemoryLimit(m / 4 * 3)
	}
}
