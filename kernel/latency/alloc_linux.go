//go:build linux

package latency

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

const hugePageSize = 2 << 20

// buffer is chase memory outside the Go heap: an anonymous mapping aligned
// to 2 MiB so that transparent huge pages can back it.
type buffer struct {
	mapping []byte
	words   []uint32
	start   uintptr
	size    int64
	huge    bool
	advErr  error
}

func allocate(size int64, huge bool) (*buffer, error) {
	size = (size + hugePageSize - 1) / hugePageSize * hugePageSize
	m, err := unix.Mmap(-1, 0, int(size+hugePageSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	base := uintptr(unsafe.Pointer(&m[0]))
	off := int((hugePageSize - base%hugePageSize) % hugePageSize)
	region := m[off : off+int(size)]
	b := &buffer{mapping: m, start: base + uintptr(off), size: size, huge: huge}
	advice := unix.MADV_NOHUGEPAGE
	if huge {
		advice = unix.MADV_HUGEPAGE
	}
	if err := unix.Madvise(region, advice); err != nil {
		b.advErr = err
	}
	b.words = unsafe.Slice((*uint32)(unsafe.Pointer(&region[0])), len(region)/4)
	return b, nil
}

func (b *buffer) free() {
	b.words = nil
	if b.mapping != nil {
		unix.Munmap(b.mapping)
		b.mapping = nil
	}
}

// pages reports the page size the kernel used, from AnonHugePages of the
// mappings that overlap the buffer in /proc/self/smaps.
func (b *buffer) pages() Pages {
	p := Pages{Requested: "4KiB", BufferBytes: b.size, Used: "unknown"}
	if b.huge {
		p.Requested = "2MiB-THP"
	}
	if b.advErr != nil {
		p.Detail = "madvise failed: " + b.advErr.Error()
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		p.Detail = strings.TrimSpace(p.Detail + " smaps unreadable: " + err.Error())
		return p
	}
	defer f.Close()
	huge, found, err := smapsHugeBytes(f, b.start, b.start+uintptr(b.size))
	if err != nil || !found {
		p.Detail = strings.TrimSpace(p.Detail + " buffer mapping not found in smaps")
		return p
	}
	p.HugeBytes = huge
	if huge > 0 {
		p.Used = "2MiB"
		p.Detail = strings.TrimSpace(fmt.Sprintf("%s %d of %d MiB backed by huge pages", p.Detail, huge>>20, b.size>>20))
	} else {
		p.Used = "4KiB"
	}
	return p
}

// smapsHugeBytes sums AnonHugePages over the smaps entries that overlap
// [lo, hi).
func smapsHugeBytes(r interface{ Read([]byte) (int, error) }, lo, hi uintptr) (int64, bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var total int64
	found, in := false, false
	for sc.Scan() {
		line := sc.Text()
		if a, bnd, ok := parseSmapsRange(line); ok {
			in = a < hi && bnd > lo
			found = found || in
			continue
		}
		if !in {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "AnonHugePages:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					total += kb << 10
				}
			}
		}
	}
	return total, found, sc.Err()
}

// parseSmapsRange parses a mapping header "start-end perms ...".
func parseSmapsRange(line string) (uintptr, uintptr, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || strings.HasSuffix(f[0], ":") {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(f[0], "-")
	if !ok {
		return 0, 0, false
	}
	x, err1 := strconv.ParseUint(a, 16, 64)
	y, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(x), uintptr(y), true
}
