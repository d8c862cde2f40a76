//go:build linux

package agg

import (
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugeMin is the smallest allocation worth its own huge-page mapping.
const hugeMin = 2 << 20

// Pool keeps the mappings of finished queries for the next ones, up to a
// byte limit. Fresh anonymous memory costs a page fault per page and the
// kernel zeroes every page on first touch (the Oxla article's point about
// large zeroed allocations); a reused mapping is already faulted in. It is
// safe for concurrent use. A nil *Pool unmaps on Free.
type Pool struct {
	mu       sync.Mutex
	free     [][]byte
	bytes    int64
	limit    int64
	onMapped func(delta int64)
	fresh    freshCost
}

// freshCost decides, by measuring, whether fresh mappings are advised for
// huge pages. A huge page that is already backed costs less to fault in
// than the 512 small pages it replaces (one fault, one zeroing pass), but
// on a virtual machine that hands free 2 MiB blocks back to its host (free
// page reporting), each fresh huge page also costs the host's faults: on
// the VM this project was built on, 2.5–3.2 s per GB against 0.35–0.7 s
// per GB for small pages, so a first query whose partitions took a
// gigabyte spent half its time zeroing. Huge pages that another process
// freed a moment ago have not been handed back yet and cost 0.12–0.2 s
// per GB, until they run out, so one look is not enough.
//
// Before the pool's first fresh mapping it maps a probe of a few huge
// pages, faults them in one by one, timing each, and unmaps it (its pages
// go back to the free lists, where the next mappings take them); where
// the probe's upper quartile is dearer than small pages (dearer), fresh
// mappings keep small pages. After that, each fresh mapping advised for
// huge pages has its first huge page faulted in and timed as it is made:
// the memory is the query's own, so the look costs nothing where huge
// pages are cheap. Where that page was dear, the rest of its mapping keeps
// small pages; after freshDearRuns dear ones in a row, every later fresh
// mapping does. A probe every so many bytes of huge mappings lets the
// cheap pages run out unseen between probes. Mappings kept in the pool
// are reused as they are, already faulted in.
type freshCost struct {
	probing sync.Mutex // held by the goroutine probing
	probed  bool       // the first probe has run
	base    float64    // s/GB of fresh small pages (0: not measured yet)
	dear    int        // fresh mappings in a row whose first huge page was dear
	small4K bool       // fresh mappings are left on small pages
	note    string     // what was last measured and decided
}

const (
	freshProbeFirst = 16 // huge pages in the first probe
	freshProbeSmall = 4 << 20
	// freshDearRuns is how many fresh mappings in a row must find their
	// first huge page dear before later ones keep small pages: one slow
	// fault may be the scheduler's.
	freshDearRuns = 2
)

// adviseFresh advises the fresh mapping b for huge pages, unless the
// pool's measurements found fresh huge pages dearer than small ones here;
// where it does, it faults in b's first huge page and times it (see
// freshCost).
func (p *Pool) adviseFresh(b []byte) {
	if p.keepSmall() {
		return
	}
	// Advice is best effort: without THP the mapping still works.
	if unix.Madvise(b, unix.MADV_HUGEPAGE) != nil || p == nil || len(b) < hugeMin {
		return
	}
	at := hugeStart(b)
	if at+hugeMin > len(b) {
		return
	}
	start := time.Now()
	b[at] = 0 // a write fault: the whole huge page is made and zeroed
	if p.judgeFresh(max(time.Since(start), 1)) {
		_ = unix.Madvise(b[at+hugeMin:], unix.MADV_NOHUGEPAGE)
	}
}

// freshDearMax is the most, in s/GB, a fresh huge page may cost to fault
// in and still count as cheap where small pages, timed over a few
// megabytes, came out dear themselves (see dearer).
const freshDearMax = 1.0

// dearer reports whether fresh huge pages costing cost s/GB to fault in
// are to give way to small pages costing base: where they cost more than
// twice as much per byte, or more than freshDearMax and more than small
// pages. On the VM above a huge page the host still backs costs
// 0.08–0.25 s/GB and one it must fault in 2.5–3.2, while small pages came
// out anywhere from 0.35 to 2.5: against 1.5 the twice-as-dear rule alone
// let a dear huge page pass; against 2.5, huge pages are the cheaper.
func dearer(cost, base float64) bool {
	return cost > 2*base || cost > freshDearMax && cost > base
}

// keepSmall runs the first probe of fresh huge pages if it is due and
// reports whether fresh mappings are to keep small pages.
func (p *Pool) keepSmall() bool {
	if p == nil {
		return false
	}
	f := &p.fresh
	p.mu.Lock()
	due := !f.probed
	p.mu.Unlock()
	if due {
		if !f.probing.TryLock() {
			return true // another worker is probing: small pages meanwhile
		}
		p.mu.Lock()
		due = !f.probed
		p.mu.Unlock()
		if due {
			p.probeFresh()
		}
		f.probing.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return f.small4K
}

// judgeFresh counts the first huge page of a fresh mapping, which took d
// to fault in, and reports whether the rest of this mapping is to keep
// small pages: where the page was dear. Later fresh mappings keep them
// too from the freshDearRuns-th dear page in a row.
func (p *Pool) judgeFresh(d time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := &p.fresh
	cost := float64(d) / hugeMin
	if f.small4K || f.base <= 0 || !dearer(cost, f.base) {
		f.dear = 0
		return f.small4K
	}
	f.dear++
	if f.dear < freshDearRuns {
		return true // this mapping's rest, at least
	}
	f.small4K = true
	f.note = fmt.Sprintf("the first huge page of %d fresh mappings in a row was dear (the last took %.2f s/GB to fault in, 4 KiB pages %.2f s/GB): later fresh mappings use 4 KiB pages (mappings already made are reused as they are)",
		freshDearRuns, cost, f.base)
	return true
}

// probeFresh times fresh huge and small pages and decides for the
// pool's fresh mappings until a mapping's own first page says otherwise.
func (p *Pool) probeFresh() {
	small := timeSmallPages()
	base := float64(small) / freshProbeSmall
	huge, err := timeHugePages(freshProbeFirst, base)
	p.mu.Lock()
	defer p.mu.Unlock()
	f := &p.fresh
	f.probed, f.base = true, base
	if err != nil || f.base <= 0 {
		f.note = "fresh huge pages not measured"
		if err != nil {
			f.note += ": " + err.Error()
		}
		return
	}
	slices.Sort(huge)
	q3 := float64(huge[len(huge)*3/4]) / hugeMin // ns per byte, that is s/GB
	f.small4K = dearer(q3, f.base)
	verdict := "fresh mappings use huge pages while the first one of each is cheap"
	if f.small4K {
		verdict = "fresh mappings use 4 KiB pages (mappings already made are reused as they are)"
	}
	f.note = fmt.Sprintf("fresh 2 MiB pages took %.2f s/GB to fault in (upper quartile of %d), 4 KiB pages %.2f s/GB: %s",
		q3, len(huge), f.base, verdict)
}

// hugeStart returns the offset in the mapping b of its first 2 MiB
// boundary, where its first whole huge page starts: 0 on kernels since
// 6.7, which align mappings of that size; older ones may not.
func hugeStart(b []byte) int {
	return int((hugeMin - uintptr(unsafe.Pointer(unsafe.SliceData(b)))%hugeMin) % hugeMin)
}

// freshProbeClear is the fewest huge pages a probe faults in before it
// may stop early (timeHugePages).
const freshProbeClear = 4

// timeHugePages returns the time each of up to n fresh huge pages took to
// fault in. Given base, the s/GB of fresh small pages (0: unknown), it
// stops after freshProbeClear pages once the verdict is plain: the lower
// quartile is dearer than base (dearer), or the upper quartile costs less
// than base. A probe of dear huge pages costs a few milliseconds a page,
// and huge pages that another process freed a moment ago, the cheap ones,
// come first: dear pages found first will not turn cheap later, while
// cheap ones may run out.
func timeHugePages(n int, base float64) ([]time.Duration, error) {
	b, err := syscall.Mmap(-1, 0, n*hugeMin, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	defer syscall.Munmap(b)
	if err := unix.Madvise(b, unix.MADV_HUGEPAGE); err != nil {
		return nil, fmt.Errorf("no transparent huge pages: %w", err)
	}
	at := hugeStart(b)
	out := make([]time.Duration, 0, n)
	sorted := make([]time.Duration, 0, n)
	for i := 0; at+(i+1)*hugeMin <= len(b); i++ {
		start := time.Now()
		b[at+i*hugeMin] = 1 // faults in the whole huge page
		d := max(time.Since(start), 1)
		out = append(out, d)
		sorted = append(sorted, d)
		slices.Sort(sorted)
		if base > 0 && len(sorted) >= freshProbeClear {
			lo := float64(sorted[len(sorted)/4]) / hugeMin
			hi := float64(sorted[len(sorted)*3/4]) / hugeMin
			if dearer(lo, base) || hi < base {
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no whole huge page in a probe of %d", n)
	}
	return out, nil
}

// timeSmallPages returns the time freshProbeSmall bytes of fresh small
// pages take to fault in, or 0 if they could not be measured.
func timeSmallPages() time.Duration {
	b, err := syscall.Mmap(-1, 0, freshProbeSmall, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		return 0
	}
	defer syscall.Munmap(b)
	_ = unix.Madvise(b, unix.MADV_NOHUGEPAGE)
	start := time.Now()
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	return max(time.Since(start), 1)
}

// HugePageNote says what the pool measured of fresh huge pages and what
// it decided, or "" before it has measured.
func (p *Pool) HugePageNote() string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fresh.note
}

// DefaultPoolBytes is the pool limit used when none is configured: a
// quarter of physical memory, at least 2 GiB and at most 8 GiB. The pool
// must hold the mappings of the queries run in turn (a benchmark alternates
// strategies and thread counts, whose buffers differ in size): a mapping
// that does not fit is unmapped, and mapping it again costs a fault per
// huge page, each of which may have to compact memory first.
func DefaultPoolBytes() int64 {
	const lo, hi = 2 << 30, 8 << 30
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return lo
	}
	return min(max(int64(si.Totalram)*int64(si.Unit)/4, lo), hi)
}

// NewPool returns a pool that keeps at most limit bytes of mappings.
// onMapped, if not nil, is called with the change in bytes whenever the
// pool's arenas map or unmap memory (in use or kept): that memory is
// outside Go's heap, so the runtime's soft memory limit does not see it.
func NewPool(limit int64, onMapped func(delta int64)) *Pool {
	return &Pool{limit: limit, onMapped: onMapped}
}

// mapped reports a change in the bytes mapped through p.
func (p *Pool) mapped(delta int64) {
	if p != nil && p.onMapped != nil {
		p.onMapped(delta)
	}
}

// get returns a free mapping of at least size bytes, or nil.
func (p *Pool) get(size int) []byte {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, m := range p.free {
		if len(m) >= size && (best < 0 || len(m) < len(p.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	m := p.free[best]
	p.free = append(p.free[:best], p.free[best+1:]...)
	p.bytes -= int64(len(m))
	return m
}

// kept returns the bytes of the mappings p keeps for reuse.
func (p *Pool) kept() int64 {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

// Drain unmaps every mapping the pool keeps. A pool that is dropped
// without it leaks them: the garbage collector does not unmap memory.
func (p *Pool) Drain() {
	if p == nil {
		return
	}
	p.mu.Lock()
	free := p.free
	p.free, p.bytes = nil, 0
	p.mu.Unlock()
	for _, m := range free {
		if syscall.Munmap(m) == nil {
			p.mapped(-int64(len(m)))
		}
	}
}

// put keeps m for reuse or unmaps it when the pool is full.
func (p *Pool) put(m []byte) {
	if p != nil {
		p.mu.Lock()
		if p.bytes+int64(len(m)) <= p.limit {
			p.free = append(p.free, m)
			p.bytes += int64(len(m))
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	if syscall.Munmap(m) == nil {
		p.mapped(-int64(len(m)))
	}
}

// Arena hands out large int64 slices from anonymous mappings advised with
// MADV_HUGEPAGE. Go's heap gets 4 KiB pages under THP=madvise, so a hash
// table of hundreds of megabytes probed at random costs a TLB miss per
// probe; on 2 MiB pages the same table needs 512 times fewer TLB entries.
// Slices from an Arena must not be used after Free; results are copied out.
// An Arena is not safe for concurrent use: give each worker its own.
type Arena struct {
	maps [][]byte
	huge bool
	pool *Pool
}

// NewArena returns an arena; with huge false it uses Go's heap. Mappings
// come from and go back to pool, which may be nil.
func NewArena(huge bool, pool *Pool) *Arena { return &Arena{huge: huge, pool: pool} }

// Huge reports whether the arena maps memory advised for huge pages.
func (a *Arena) Huge() bool { return a != nil && a.huge }

// Int64s returns a slice of n int64s, zeroed when zero is set (a reused
// mapping holds the previous query's data otherwise).
func (a *Arena) Int64s(n int, zero bool) ([]int64, error) {
	if a == nil || !a.huge || n*8 < hugeMin {
		return make([]int64, n), nil
	}
	b, err := a.Bytes(n*8, zero)
	if err != nil {
		return nil, err
	}
	return viewAs[int64](b, n), nil
}

// Bytes returns n bytes, zeroed when zero is set. Small requests, and every
// request of an arena without huge pages, come from Go's heap. A mapping is
// page-aligned, so the slice may be viewed as wider integers.
func (a *Arena) Bytes(n int, zero bool) ([]byte, error) {
	if a == nil || !a.huge || n < hugeMin {
		return make([]byte, n), nil
	}
	size := (n + hugeMin - 1) &^ (hugeMin - 1)
	b := a.pool.get(size)
	if b != nil {
		if zero {
			clear(b[:n])
		}
	} else {
		var err error
		b, err = syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
		if err != nil {
			return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
		}
		a.pool.mapped(int64(size))
		a.pool.adviseFresh(b)
	}
	a.maps = append(a.maps, b)
	return b[:n:n], nil
}

// Free returns everything the arena handed out to its pool (or unmaps it).
func (a *Arena) Free() {
	if a == nil {
		return
	}
	for _, m := range a.maps {
		a.pool.put(m)
	}
	a.maps = nil
}
