package spill

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// Spill files bypass the page cache where the file system allows
// (O_DIRECT). A GROUP BY spills because memory is short, and a write
// through the page cache takes that memory back, page by page, until the
// kernel writes the pages out: on a VM that returns freed memory to its
// host, each of those pages is fresh memory, faulted in and zeroed, and
// writing a spill file through the cache cost several times what the
// disk needs (docs/engine.md has the figures). Direct writes go from the
// process's buffers to the disk, and reads come back the same way.
//
// O_DIRECT wants buffers, offsets and lengths aligned to the device's
// block: a directFile stages what it is given in an aligned buffer of
// directStage bytes (one per append at a time, shared through the
// Space's pool) and writes whole blocks, keeping the few bytes past the
// last one for the next append; the last block goes out padded, and the
// file is cut back to its length, when reading starts. Where a write is
// refused (EINVAL: a file system without direct I/O), the file goes on
// through the page cache.

const (
	directAlign = 4096    // a multiple of any device's logical block
	directStage = 1 << 20 // bytes staged per write, and read per read
)

// stagePool hands out aligned staging buffers of directStage bytes.
type stagePool struct{ p sync.Pool }

func (sp *stagePool) get() []byte {
	if b, ok := sp.p.Get().(*[]byte); ok {
		return *b
	}
	return alignedBytes(directStage)
}

func (sp *stagePool) put(b []byte) { sp.p.Put(&b) }

// alignedBytes returns n bytes starting at a multiple of directAlign.
func alignedBytes(n int) []byte {
	b := make([]byte, n+directAlign)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (directAlign - 1))
	return b[off : off+n : off+n]
}

// directFile is a spill file written and read with O_DIRECT while the
// file system takes it.
type directFile struct {
	f      *os.File
	fd     int
	direct bool // O_DIRECT is set on fd
	pool   *stagePool

	stage []byte // while appending: the staging buffer, stage[:n] pending
	n     int
	off   int64  // file offset of stage[0] (or of tail): a block boundary while direct
	tail  []byte // between appends: the bytes past the last block written
	size  int64  // bytes given to Write

	sealed bool // the last block is written: reading
	// Reading: cur[lo:] is what the last read brought and Read has not
	// returned; a read of the next directStage bytes, into the other
	// buffer, runs meanwhile (inflight), so that the disk works while
	// the caller aggregates what came before (direct reads have no
	// kernel readahead).
	cur      []byte
	lo       int
	spare    []byte
	next     int64 // file offset of the read in flight, or to start
	inflight bool
	done     chan readResult
}

// readResult is what a read in flight brought.
type readResult struct {
	b   []byte
	err error
}

// newDirect returns f as a directFile, with O_DIRECT set if the file
// system lets it be.
func newDirect(f *os.File, pool *stagePool) *directFile {
	d := &directFile{f: f, fd: int(f.Fd()), pool: pool}
	d.direct = setDirect(d.fd, true) == nil
	return d
}

// setDirect sets or clears O_DIRECT on fd.
func setDirect(fd int, on bool) error {
	fl, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if e != 0 {
		return e
	}
	if on {
		fl |= syscall.O_DIRECT
	} else {
		fl &^= syscall.O_DIRECT
	}
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFL, fl); e != 0 {
		return e
	}
	return nil
}

// Write stages p, writing each full staging buffer out.
func (d *directFile) Write(p []byte) (int, error) {
	if d.sealed {
		return 0, errors.New("write to a file being read")
	}
	if d.stage == nil {
		d.stage = d.pool.get()
		d.n = copy(d.stage, d.tail)
		d.tail = d.tail[:0]
	}
	w := 0
	for len(p) > 0 {
		k := copy(d.stage[d.n:], p)
		d.n += k
		p = p[k:]
		w += k
		if d.n == len(d.stage) {
			if err := d.writeOut(d.n); err != nil {
				return w, err
			}
		}
	}
	d.size += int64(w)
	return w, nil
}

// writeOut writes stage[:n] at off (n whole blocks while direct) and
// moves what follows to the front.
func (d *directFile) writeOut(n int) error {
	b := d.stage[:n]
	for len(b) > 0 {
		k, err := syscall.Pwrite(d.fd, b, d.off)
		if err == syscall.EINVAL && d.direct {
			// The file system refuses direct writes: on through the
			// page cache.
			if err := setDirect(d.fd, false); err != nil {
				return fmt.Errorf("clear O_DIRECT: %w", err)
			}
			d.direct = false
			continue
		}
		if err != nil {
			return err
		}
		if k == 0 {
			return io.ErrShortWrite
		}
		b, d.off = b[k:], d.off+int64(k)
	}
	d.n = copy(d.stage, d.stage[n:d.n])
	return nil
}

// flush ends an append: it writes the whole blocks staged, keeps the rest
// as the tail and gives the staging buffer back.
func (d *directFile) flush() error {
	if d.stage == nil {
		return nil
	}
	n := d.n
	if d.direct {
		n &^= directAlign - 1
	}
	var err error
	if n > 0 {
		err = d.writeOut(n)
	}
	d.tail = append(d.tail[:0], d.stage[:d.n]...)
	d.pool.put(d.stage)
	d.stage, d.n = nil, 0
	return err
}

// rewind writes the last block, padded, cuts the file back to its length
// and starts reading from its first byte.
func (d *directFile) rewind() error {
	if !d.sealed {
		if err := d.flush(); err != nil {
			return err
		}
		if len(d.tail) > 0 {
			d.stage = d.pool.get()
			d.n = copy(d.stage, d.tail)
			n := d.n
			if d.direct {
				n = (n + directAlign - 1) &^ (directAlign - 1)
				clear(d.stage[d.n:n])
				d.n = n
			}
			err := d.writeOut(n)
			d.pool.put(d.stage)
			d.stage, d.n, d.tail = nil, 0, nil
			if err != nil {
				return err
			}
		}
		if err := syscall.Ftruncate(d.fd, d.size); err != nil {
			return err
		}
		d.sealed = true
	}
	d.wait()
	if d.spare == nil {
		d.spare, d.cur = alignedBytes(directStage), alignedBytes(directStage)
		d.done = make(chan readResult, 1)
	}
	d.cur, d.lo, d.next = d.cur[:0], 0, 0
	d.start()
	return nil
}

// start reads the next directStage bytes into spare in the background,
// unless the file ends before them.
func (d *directFile) start() {
	if d.next >= d.size {
		return
	}
	b, off := d.spare[:cap(d.spare)], d.next
	d.next += int64(len(b))
	d.inflight = true
	go func() {
		k, err := syscall.Pread(d.fd, b, off)
		if err == nil && k < len(b) && off+int64(k) < d.size {
			err = io.ErrUnexpectedEOF
		}
		d.done <- readResult{b[:max(k, 0)], err}
	}()
}

// wait waits for the read in flight, if any, and returns what it brought.
func (d *directFile) wait() readResult {
	if !d.inflight {
		return readResult{}
	}
	d.inflight = false
	return <-d.done
}

// Read returns the file's bytes in order.
func (d *directFile) Read(p []byte) (int, error) {
	if !d.sealed {
		return 0, errors.New("read of a file being written")
	}
	if d.lo == len(d.cur) {
		if !d.inflight {
			return 0, io.EOF
		}
		res := d.wait()
		if res.err != nil {
			return 0, res.err
		}
		// The buffer just read out becomes the one the next read fills.
		// (The file was cut to its length: a read stops there.)
		d.spare, d.cur, d.lo = d.cur, res.b, 0
		d.start()
	}
	k := copy(p, d.cur[d.lo:])
	d.lo += k
	return k, nil
}

func (d *directFile) remove() error {
	if d.stage != nil {
		d.pool.put(d.stage)
	}
	d.wait()
	d.stage, d.cur, d.spare, d.tail = nil, nil, nil, nil
	err := d.f.Close()
	if rerr := os.Remove(d.f.Name()); err == nil {
		err = rerr
	}
	return err
}

// wrapFile returns the spill file f as a backend's storage: direct where
// the file system takes it.
func wrapFile(f *os.File, pool *stagePool) storage { return newDirect(f, pool) }
