package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"unsafe"
)

// chunkMap reads the pages of a column chunk from a read-only shared
// mapping of the file, a window of it at a time, instead of copying each
// page out of the page cache with pread. On a warm page cache it saves
// the kernel's copy (a quarter of the CPU of a one-column scan such as
// ClickBench's Q19), but the first touch of the page's bytes, its CRC,
// then pays for reading them from memory, and the page faults (one maps
// 16 pages of the cache) cost about half of what the copy did: measured,
// 5 to 15 % less CPU for such a scan, and as much as before for queries
// whose time goes elsewhere.
//
// A page's bytes are touched only inside pageReader.mappedPage, which
// runs with debug.SetPanicOnFault: a file truncated while mapped turns
// the SIGBUS its reader gets into an error, not a crash. No page handed
// out refers to the mapping; every page's bytes are decompressed or
// copied out of it there.
//
// Mapped file pages count in the process's resident memory as long as
// they are mapped, so the windows of all the readers of a catalog are
// bounded together (mapBudget); a reader that finds the budget spent
// reads with pread, as do readers on systems without mmap, of files
// that are not an *os.File, and of chunks whose mapping fails.
type chunkMap struct {
	f      *os.File
	end    int64 // the chunk's end in the file
	budget *atomic.Int64
	win    []byte // the mapped window; nil when none
	off    int64  // file offset of win[0]
	held   int64  // bytes of budget the window holds
}

// mapWindow is the bytes of a chunk mapped at a time (or the page, when
// longer): the mapping is replaced by the next window when a page reaches
// past it. Each replacement unmaps the window, and on Linux/x86 unmapping
// more than a few dozen pages flushes the whole TLB of every CPU that runs
// one of the process's threads (an interrupt to each, costly on a virtual
// machine), so that every worker then misses the TLB afresh. Larger
// windows flush less often (docs/engine.md has the figures); beyond 4 MiB
// they saved no more time, and mapped pages count in the resident set.
const mapWindow = 4 << 20

// mapBudget is the most bytes the windows of a catalog's readers map at
// once: sixteen windows.
const mapBudget = 16 * mapWindow

// newChunkMap returns a mapping of the chunk occupying [start, end) of r,
// a file of size bytes, or nil when the chunk is not to be read that way.
func newChunkMap(r io.ReaderAt, size, start, end int64, budget *atomic.Int64) *chunkMap {
	f, ok := r.(*os.File)
	if !ok || !canMap || start < 0 || start >= end || end > size {
		return nil
	}
	return &chunkMap{f: f, end: end, budget: budget}
}

// bytes returns the file's bytes [pos, pos+n), mapped, or false when
// they cannot be mapped now (the caller reads them with pread).
func (m *chunkMap) bytes(pos int64, n int) ([]byte, bool) {
	if pos >= m.off && pos+int64(n) <= m.off+int64(len(m.win)) {
		return m.win[pos-m.off:][:n], true
	}
	m.unmap()
	if pos+int64(n) > m.end {
		return nil, false
	}
	off := pos &^ int64(os.Getpagesize()-1)
	length := min(max(mapWindow, pos+int64(n)-off), m.end-off)
	if m.budget.Add(length) > mapBudget {
		m.budget.Add(-length)
		return nil, false
	}
	win, err := mmapFile(m.f, off, int(length))
	if err != nil {
		m.budget.Add(-length)
		return nil, false
	}
	m.win, m.off, m.held = win, off, length
	return m.win[pos-m.off:][:n], true
}

// unmap releases the window.
func (m *chunkMap) unmap() {
	if m.win == nil {
		return
	}
	munmapFile(m.win)
	m.budget.Add(-m.held)
	m.win, m.off, m.held = nil, 0, 0
}

// errFileChanged is the error of a read of a mapped page that faulted:
// the file was truncated (or replaced) while it was read.
var errFileChanged = errors.New("the file changed while it was read")

// fault returns the error for a panic value p of a fault inside the
// window, or nil when p is anything else.
func (m *chunkMap) fault(p any) error {
	a, ok := p.(interface{ Addr() uintptr })
	if !ok || len(m.win) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m.win)))
	addr := a.Addr()
	if addr < base || addr-base >= uintptr(cap(m.win)) {
		return nil
	}
	return fmt.Errorf("%w: %s, at offset %d", errFileChanged, m.f.Name(), m.off+int64(addr-base))
}
