// Package spill writes columns to temporary files and reads them back: the
// level under memory that a radix GROUP BY uses when its partitions would
// pass the statement's memory limit (Grace hash aggregation).
//
// A Space is one statement's directory of files under a temporary root.
// Each file is a sequence of chunks, each a few columns of equal length,
// written and read whole. Everything written counts against the Space's
// limit; Close removes the directory, and CleanStale removes what a process
// that died left behind.
//
// Where there are no temporary files (the browser's WebAssembly) a Space
// keeps its files in memory instead (OpenMemory; Open does so there): the
// same chunks, written and read back the same way, so a GROUP BY makes the
// same partition passes; its Dir says so, and its limit is what the
// caller can spare of the memory the cell may use.
package spill

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"cachebook/engine/units"
	"cachebook/engine/vec"
)

// ErrSpaceLimit is wrapped by the error of a write that would take a Space
// past its limit.
var ErrSpaceLimit = errors.New("temporary space limit exceeded")

// dirPrefix starts the name of every Space's directory; the process id
// follows, so that CleanStale can tell whose it is.
const dirPrefix = "cachebook-spill-"

// Stats are what a Space wrote and read.
type Stats struct {
	Files        int
	Chunks       int64
	BytesWritten int64
	BytesRead    int64
	WriteTime    time.Duration
	ReadTime     time.Duration
}

// Space is a directory of spill files with a limit on their total size.
// Its methods may be called from several goroutines.
type Space struct {
	b     backend
	limit int64
	used  atomic.Int64

	mu    sync.Mutex
	stats Stats

	// writers are the buffers chunks are written through, kept for the
	// next chunk: a GROUP BY writes many small chunks, and a fresh 64 KiB
	// buffer for each cost more than writing it.
	writers sync.Pool
}

// backend is where a Space's files live: a directory (dirBackend) or
// memory (memBackend).
type backend interface {
	// create makes a new, empty file and returns it and its name.
	create() (storage, string, error)
	// removeAll removes every file.
	removeAll() error
	// where names the place in messages and EXPLAIN: the directory, or
	// memory and why.
	where() string
	// limitName names what the Space's limit is, in its error.
	limitName() string
}

// storage is one file of a backend.
type storage interface {
	io.Writer
	io.Reader
	// rewind starts reading from the first byte.
	rewind() error
	// remove closes and deletes the file.
	remove() error
}

// Supported reports whether this platform has a file system to spill to
// (not the browser's WebAssembly, where Open keeps the files in memory).
func Supported() bool { return supported }

// MemoryWhere is what Dir returns for a Space that keeps its files in
// memory: EXPLAIN ANALYZE's "spilled: … to" line ends with it.
const MemoryWhere = "memory (this runtime has no temporary files)"

// Open makes a new Space under root (os.TempDir() when empty) whose files
// may hold limit bytes in all (0: no limit of its own). Where the
// platform has no file system (Supported is false) it returns
// OpenMemory(limit) instead.
func Open(root string, limit int64) (*Space, error) {
	if !supported {
		return OpenMemory(limit), nil
	}
	if root == "" {
		root = os.TempDir()
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("spill: temp directory: %w", err)
	}
	name := fmt.Sprintf("%s%d-%08x", dirPrefix, os.Getpid(), rand.Uint32())
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spill: temp directory: %w", err)
	}
	return &Space{b: dirBackend{dir: dir}, limit: limit}, nil
}

// OpenMemory makes a new Space that keeps its files in memory, whose
// files may hold limit bytes in all (0: no limit of its own). Its bytes
// stay in the process's heap until the files are removed: the caller
// charges them against the memory it may use, by choosing limit.
func OpenMemory(limit int64) *Space {
	return &Space{b: &memBackend{}, limit: limit}
}

// Dir is the Space's directory, or MemoryWhere for one in memory.
func (s *Space) Dir() string { return s.b.where() }

// InMemory reports whether the Space keeps its files in memory.
func (s *Space) InMemory() bool {
	_, ok := s.b.(*memBackend)
	return ok
}

// Used is the bytes its files hold now.
func (s *Space) Used() int64 { return s.used.Load() }

// Stats returns what the Space has written and read so far.
func (s *Space) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Close removes the Space's directory and every file in it.
func (s *Space) Close() error {
	if s == nil {
		return nil
	}
	if err := s.b.removeAll(); err != nil {
		return fmt.Errorf("spill: remove %s: %w", s.b.where(), err)
	}
	s.used.Store(0)
	return nil
}

// reserve counts n more bytes against the limit, or fails without
// counting them.
func (s *Space) reserve(n int64) error {
	u := s.used.Add(n)
	if s.limit > 0 && u > s.limit {
		s.used.Add(-n)
		return fmt.Errorf("spilling needs more than %s, %s (already %s in %s): raise it, or give the query more memory: %w",
			s.b.limitName(), units.HumanBytes(s.limit), units.HumanBytes(u-n), s.b.where(), ErrSpaceLimit)
	}
	return nil
}

func (s *Space) record(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

// File is one spill file: written chunk by chunk, then read back.
type File struct {
	s    *Space
	path string
	f    storage
	size int64
	read bool // Reader was called: no more appends
}

// Create makes a new, empty file in the Space.
func (s *Space) Create() (*File, error) {
	f, path, err := s.b.create()
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	s.record(func(st *Stats) { st.Files++ })
	// No buffer is kept between appends: a radix GROUP BY writes to one
	// file per partition, hundreds at once, and a chunk is large enough
	// to be written through a small buffer.
	return &File{s: s, path: path, f: f}, nil
}

// Size is the bytes written to the file so far.
func (f *File) Size() int64 { return f.size }

// Append writes one chunk: columns of equal length. It fails before
// writing when the chunk would take the Space past its limit.
func (f *File) Append(cols []*vec.Vector) error {
	if f.read {
		return errors.New("spill: append to a file being read")
	}
	n := chunkBytes(cols)
	if err := f.s.reserve(n); err != nil {
		return err
	}
	start := time.Now()
	w, _ := f.s.writers.Get().(*bufio.Writer)
	if w == nil {
		w = bufio.NewWriterSize(f.f, 64<<10)
	} else {
		w.Reset(f.f)
	}
	err := writeChunk(w, cols)
	if err == nil {
		err = w.Flush()
	}
	w.Reset(nil)
	f.s.writers.Put(w)
	if err != nil {
		f.s.used.Add(-n) // not written: the reservation goes back
		return fmt.Errorf("spill: write %s: %w", f.path, err)
	}
	f.size += n
	f.s.record(func(st *Stats) {
		st.Chunks++
		st.BytesWritten += n
		st.WriteTime += time.Since(start)
	})
	return nil
}

// Reader flushes what was written and returns a reader of the file's
// chunks from the start. No more can be appended.
func (f *File) Reader() (*Reader, error) {
	f.read = true
	if err := f.f.rewind(); err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	return &Reader{file: f, r: bufio.NewReaderSize(f.f, 256<<10)}, nil
}

// Remove closes and deletes the file, giving its bytes back to the Space.
func (f *File) Remove() error {
	err := f.f.remove()
	f.s.used.Add(-f.size)
	f.size = 0
	if err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	return nil
}

// Reader reads a File's chunks in the order they were written.
type Reader struct {
	file *File
	r    *bufio.Reader
	off  int64 // bytes of the file read so far
}

// Next returns the next chunk's columns, or ok=false after the last one.
// charge, if not nil, is called with the bytes the chunk will take in
// memory before any of it is allocated; an error from it is returned.
func (r *Reader) Next(charge func(int64) error) (cols []*vec.Vector, ok bool, err error) {
	start := time.Now()
	var hdr [16]byte
	if _, err := io.ReadFull(r.r, hdr[:]); err != nil {
		if err == io.EOF {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("spill: read %s: %w", r.file.path, err)
	}
	ncols, rows, size := int(binary.LittleEndian.Uint32(hdr[0:])), int(binary.LittleEndian.Uint32(hdr[4:])), int64(binary.LittleEndian.Uint64(hdr[8:]))
	// A header that promises more than the file holds is damage, not a
	// size to allocate.
	if size < 16 || size > r.file.size-r.off || int64(ncols)*8 > size || int64(rows) > size {
		return nil, false, fmt.Errorf("spill: read %s: damaged chunk header at byte %d", r.file.path, r.off)
	}
	r.off += size
	if charge != nil {
		if err := charge(size); err != nil {
			return nil, false, err
		}
	}
	cols = make([]*vec.Vector, ncols)
	for i := range cols {
		v, err := readVector(r.r, rows, size)
		if err != nil {
			return nil, false, fmt.Errorf("spill: read %s: %w", r.file.path, err)
		}
		cols[i] = v
	}
	r.file.s.record(func(st *Stats) {
		st.BytesRead += size
		st.ReadTime += time.Since(start)
	})
	return cols, true, nil
}

// chunkBytes is what a chunk takes on disk, and about what it takes in
// memory read back.
func chunkBytes(cols []*vec.Vector) int64 {
	n := int64(16)
	for _, v := range cols {
		n += 8 + int64(len(v.Valid))
		switch {
		case v.Type == vec.Null:
		case v.Type == vec.String:
			n += 4*int64(len(v.Offsets)) + int64(len(v.Bytes))
		case v.Type.IsFloat():
			n += 8 * int64(len(v.F64))
		default:
			n += 8 * int64(len(v.I64))
		}
	}
	return n
}

// writeChunk writes a header (columns, rows, bytes) and each column: its
// type, whether it has a validity array, its payload's length in bytes,
// then the validity bytes and the payload in this machine's byte order
// (spill files never leave the process that wrote them).
func writeChunk(w *bufio.Writer, cols []*vec.Vector) error {
	rows := 0
	if len(cols) > 0 {
		rows = cols[0].Len
	}
	var hdr [16]byte
	binary.LittleEndian.PutUint32(hdr[0:], uint32(len(cols)))
	binary.LittleEndian.PutUint32(hdr[4:], uint32(rows))
	binary.LittleEndian.PutUint64(hdr[8:], uint64(chunkBytes(cols)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	for _, v := range cols {
		if v.Len != rows {
			return fmt.Errorf("column of %d rows in a chunk of %d", v.Len, rows)
		}
		var payload []byte
		switch {
		case v.Type == vec.Null:
		case v.Type == vec.String:
			payload = bytesOf(v.Offsets[:rows+1])
		case v.Type.IsFloat():
			payload = bytesOf(v.F64[:rows])
		default:
			payload = bytesOf(v.I64[:rows])
		}
		var ch [8]byte
		ch[0] = byte(v.Type)
		if v.Valid != nil {
			ch[1] = 1
		}
		binary.LittleEndian.PutUint32(ch[4:], uint32(len(v.Bytes)))
		if _, err := w.Write(ch[:]); err != nil {
			return err
		}
		if v.Valid != nil {
			if _, err := w.Write(bytesOf(v.Valid[:rows])); err != nil {
				return err
			}
		}
		if _, err := w.Write(payload); err != nil {
			return err
		}
		if v.Type == vec.String {
			if _, err := w.Write(v.Bytes); err != nil {
				return err
			}
		}
	}
	return nil
}

func readVector(r io.Reader, rows int, limit int64) (*vec.Vector, error) {
	var ch [8]byte
	if _, err := io.ReadFull(r, ch[:]); err != nil {
		return nil, err
	}
	v := &vec.Vector{Type: vec.Type(ch[0]), Len: rows}
	if int64(binary.LittleEndian.Uint32(ch[4:])) > limit {
		return nil, errors.New("damaged column header")
	}
	if ch[1] == 1 {
		v.Valid = make([]bool, rows)
		if _, err := io.ReadFull(r, bytesOf(v.Valid)); err != nil {
			return nil, err
		}
	}
	switch {
	case v.Type == vec.Null:
	case v.Type == vec.String:
		v.Offsets = make([]uint32, rows+1)
		v.Bytes = make([]byte, binary.LittleEndian.Uint32(ch[4:]))
		if _, err := io.ReadFull(r, bytesOf(v.Offsets)); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(r, v.Bytes); err != nil {
			return nil, err
		}
		for i := range rows {
			if v.Offsets[i] > v.Offsets[i+1] {
				return nil, errors.New("damaged string offsets")
			}
		}
		if v.Offsets[0] != 0 || int(v.Offsets[rows]) != len(v.Bytes) {
			return nil, errors.New("damaged string offsets")
		}
	case v.Type.IsFloat():
		v.F64 = make([]float64, rows)
		if _, err := io.ReadFull(r, bytesOf(v.F64)); err != nil {
			return nil, err
		}
	default:
		v.I64 = make([]int64, rows)
		if _, err := io.ReadFull(r, bytesOf(v.I64)); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// bytesOf views a slice of fixed-size values as its bytes.
func bytesOf[T int64 | float64 | uint32 | bool](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// CleanStale removes the Space directories under root (os.TempDir() when
// empty) left by processes that no longer run, as a server does at
// start-up, and returns how many it removed.
func CleanStale(root string) (int, error) {
	if root == "" {
		root = os.TempDir()
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, fmt.Errorf("spill: %w", err)
	}
	removed := 0
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), dirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(name, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err == nil {
			removed++
		}
	}
	return removed, nil
}
