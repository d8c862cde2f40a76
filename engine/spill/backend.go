package spill

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// This file holds the two places a Space's files live: a directory of
// temporary files, and memory, where there are none.

// dirBackend keeps a Space's files in a directory of its own.
type dirBackend struct{ dir string }

func (d dirBackend) create() (storage, string, error) {
	f, err := os.CreateTemp(d.dir, "part-*.spill")
	if err != nil {
		return nil, "", err
	}
	return osFile{f}, f.Name(), nil
}

func (d dirBackend) removeAll() error  { return os.RemoveAll(d.dir) }
func (d dirBackend) where() string     { return d.dir }
func (d dirBackend) limitName() string { return "max_temp_directory_size" }

// osFile is a temporary file.
type osFile struct{ *os.File }

func (f osFile) rewind() error {
	_, err := f.Seek(0, io.SeekStart)
	return err
}

func (f osFile) remove() error {
	err := f.Close()
	if rerr := os.Remove(f.Name()); err == nil {
		err = rerr
	}
	return err
}

// memBackend keeps a Space's files in memory.
type memBackend struct {
	mu    sync.Mutex
	files map[*memFile]struct{}
	n     int
}

func (m *memBackend) create() (storage, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[*memFile]struct{}{}
	}
	f := &memFile{b: m}
	m.files[f] = struct{}{}
	m.n++
	return f, fmt.Sprintf("memory file %d", m.n), nil
}

func (m *memBackend) removeAll() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for f := range m.files {
		f.segs = nil
	}
	m.files = nil
	return nil
}

func (m *memBackend) where() string { return MemoryWhere }

func (m *memBackend) limitName() string {
	return "the room for spilled partitions in memory (what the cell's memory leaves beside memory_limit, at most max_temp_directory_size)"
}

// memFile is one file in memory: the bytes of each write, kept as
// written (a writer's buffer at a time, so nothing is over-allocated),
// read back in order.
type memFile struct {
	b    *memBackend
	segs [][]byte
	seg  int // the segment being read
	off  int // the offset in it
}

func (f *memFile) Write(p []byte) (int, error) {
	if f.b == nil {
		return 0, errors.New("write to a removed file")
	}
	f.segs = append(f.segs, append([]byte(nil), p...))
	return len(p), nil
}

func (f *memFile) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && f.seg < len(f.segs) {
		c := copy(p[n:], f.segs[f.seg][f.off:])
		n += c
		f.off += c
		if f.off == len(f.segs[f.seg]) {
			f.seg, f.off = f.seg+1, 0
		}
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (f *memFile) rewind() error {
	f.seg, f.off = 0, 0
	return nil
}

func (f *memFile) remove() error {
	if f.b == nil {
		return nil
	}
	f.b.mu.Lock()
	delete(f.b.files, f)
	f.b.mu.Unlock()
	f.segs, f.b = nil, nil
	return nil
}
