package main

import (
	"io/fs"
	"math"
	"os"
	"path"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cachebook/engine"
)

// physicalMemory returns the memory this process may use: the machine's
// MemTotal, or its cgroup's memory limit when that is lower (0 when neither
// can be read, e.g. off Linux).
func physicalMemory() int64 { return memoryOf(os.DirFS("/")) }

// memoryOf is physicalMemory reading the files under root (the file
// system's root; a fixture tree in tests).
func memoryOf(root fs.FS) int64 {
	var total int64
	if b, err := fs.ReadFile(root, "proc/meminfo"); err == nil {
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
	if n := cgroupMemoryLimit(root); n > 0 && (total == 0 || n < total) {
		total = n
	}
	return total
}

// cgroupMemoryLimit returns the lowest memory limit of the cgroups this
// process is in and of their ancestors, under cgroup v2 (memory.max) and
// v1 (memory.limit_in_bytes, and memory.stat's hierarchical_memory_limit,
// which covers ancestors a container does not see); 0 when there is none.
// It finds the process's cgroups in /proc/self/cgroup and where their
// hierarchies are mounted in /proc/self/mountinfo, and reads the limit of
// every directory from the process's cgroup up to the mount point: a
// container's limit is often set on a parent of the cgroup it runs in.
// Without those files it reads the root cgroup of the usual mount points.
func cgroupMemoryLimit(root fs.FS) int64 {
	var lowest int64
	see := func(n int64) {
		if n > 0 && (lowest == 0 || n < lowest) {
			lowest = n
		}
	}
	groups := procCgroups(root)
	mounts := cgroupMounts(root)
	if len(groups) == 0 || len(mounts) == 0 {
		see(readLimit(root, "sys/fs/cgroup/memory.max"))
		see(readLimit(root, "sys/fs/cgroup/memory/memory.limit_in_bytes"))
		see(hierarchicalLimit(root, "sys/fs/cgroup/memory/memory.stat"))
		return lowest
	}
	for _, m := range mounts {
		p, ok := groups[m.hierarchy]
		if !ok {
			continue
		}
		// The cgroup's path is relative to the hierarchy's root; the
		// mount shows the hierarchy from m.root down (a container sees
		// its own cgroup as "/", or its full path when it has no cgroup
		// namespace but the mount is bound from its cgroup).
		rel := p
		if m.root != "/" {
			if r, ok := strings.CutPrefix(p, m.root); ok && (r == "" || r[0] == '/') {
				rel = r
			}
		}
		dir := path.Join(m.point, rel)
		if !strings.HasPrefix(dir+"/", m.point+"/") {
			dir = m.point
		}
		if m.hierarchy == "" {
			for d := dir; ; d = path.Dir(d) {
				see(readLimit(root, path.Join(d, "memory.max")))
				if d == m.point || d == "." {
					break
				}
			}
			continue
		}
		see(hierarchicalLimit(root, path.Join(dir, "memory.stat")))
		for d := dir; ; d = path.Dir(d) {
			see(readLimit(root, path.Join(d, "memory.limit_in_bytes")))
			if d == m.point || d == "." {
				break
			}
		}
	}
	return lowest
}

// procCgroups returns this process's cgroup paths from /proc/self/cgroup:
// the v2 one under "" and the v1 memory controller's under "memory".
func procCgroups(root fs.FS) map[string]string {
	b, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		// hierarchy-ID:controller-list:path
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			out[""] = f[2]
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			out["memory"] = f[2]
		}
	}
	return out
}

// cgroupMount is where a cgroup hierarchy is mounted.
type cgroupMount struct {
	hierarchy string // "" for v2, "memory" for v1's memory controller
	root      string // the hierarchy's directory shown at the mount point
	point     string // the mount point, relative to the file system's root
}

// cgroupMounts returns the cgroup v2 and v1 memory mounts listed in
// /proc/self/mountinfo.
func cgroupMounts(root fs.FS) []cgroupMount {
	b, err := fs.ReadFile(root, "proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []cgroupMount
	for _, line := range strings.Split(string(b), "\n") {
		// ID parent major:minor root mount-point options [optional…] - type source super-options
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		m := cgroupMount{root: unescapeMount(f[3]), point: strings.TrimPrefix(path.Clean(unescapeMount(f[4])), "/")}
		if m.point == "" {
			m.point = "."
		}
		switch {
		case g[0] == "cgroup2":
		case g[0] == "cgroup" && len(g) >= 3 && slices.Contains(strings.Split(g[2], ","), "memory"):
			m.hierarchy = "memory"
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unlimited is where a cgroup v1 limit means none: the kernel reports an
// unset limit as the largest page-aligned int64.
const unlimited = 1 << 60

// readLimit reads a cgroup memory limit file; 0 for none ("max", absent,
// unlimited or unreadable).
func readLimit(root fs.FS, name string) int64 {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= unlimited {
		return 0
	}
	return n
}

// hierarchicalLimit reads hierarchical_memory_limit from a cgroup v1
// memory.stat: the lowest limit of the cgroup and all its ancestors.
func hierarchicalLimit(root fs.FS, name string) int64 {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "hierarchical_memory_limit "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			if err == nil && n > 0 && n < unlimited {
				return n
			}
		}
	}
	return 0
}

// defaultCellMemory is a quarter of the memory this process may use (at
// least 256 MiB; 2 GiB when that is unknown), so that a few cells at their
// limit still leave the server room.
func defaultCellMemory() int64 { return cellMemoryOf(physicalMemory()) }

// cellMemoryOf is the default cell memory of a process that may use m
// bytes (0: unknown).
func cellMemoryOf(m int64) int64 {
	if m <= 0 {
		return 2 << 30
	}
	return max(m/4, 256<<20)
}

// softLimitOf is the Go runtime's soft memory limit for a process that may
// use m bytes: three quarters of them.
func softLimitOf(m int64) int64 { return m / 4 * 3 }

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
	bound  int64 // a lower total for one statement's run (0: none)
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
		total = softLimitOf(m)
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
	m.apply()
}

// apply sets the runtime's soft limit: the total (or the statement's
// bound) less the mappings, down to an eighth of it. The caller holds mu.
func (m *memoryLimit) apply() {
	total := m.total
	if m.bound > 0 {
		total = min(total, m.bound)
	}
	debug.SetMemoryLimit(max(total-m.mapped, total/8))
}

// boundTo lowers the total to n bytes (0: back to the process's own) for
// the statements that follow, in a process that runs one session (cachebook
// query): there memory_limit bounds what the statement holds, and this
// bounds the garbage the collector may leave on top of it.
func (m *memoryLimit) boundTo(n int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bound = n
	m.apply()
}

// goMemory is the memory the Go runtime has mapped and not returned
// (heap, stacks and its own structures).
func goMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// statementBound is the soft limit for Go's memory under a statement's
// memory_limit of limit bytes (0: none): what the process held before it
// opened the data (base), the column cache (cache) and the limit plus a
// tenth, the garbage not yet collected of its buffers. The collector then
// runs more often near it, so the process's peak RSS stays within about
// base's RSS + cache + 1.1 × limit instead of up to twice what is live.
func statementBound(base, cache, limit int64) int64 {
	if limit <= 0 {
		return 0
	}
	return base + cache + limit
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
