package main

import (
	"fmt"
	"io"
)

// chunkBytes is the size of one chunk of a chunkedFile.
const chunkBytes = 1 << 20

// chunkedFile is an in-memory file written once, front to back, and then
// read at random: the generated Parquet file of hits. Unlike a
// bytes.Buffer it never copies what it holds to grow, and it holds at most
// one chunk more than its length, where a doubling buffer holds up to
// twice it — in the browser's heap that is room for a larger table, and
// less memory that the garbage collector must leave free for growth.
type chunkedFile struct {
	chunks [][]byte // each of capacity chunkBytes; all but the last full
	size   int64
}

// Write appends p.
func (f *chunkedFile) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(f.chunks) == 0 || len(f.chunks[len(f.chunks)-1]) == chunkBytes {
			f.chunks = append(f.chunks, make([]byte, 0, chunkBytes))
		}
		last := &f.chunks[len(f.chunks)-1]
		k := min(len(p), chunkBytes-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
	f.size += int64(n)
	return n, nil
}

// Size returns the bytes written.
func (f *chunkedFile) Size() int64 { return f.size }

// ReadAt implements io.ReaderAt.
func (f *chunkedFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("chunked file: negative offset %d", off)
	}
	n := 0
	for n < len(p) && off < f.size {
		c := f.chunks[off/chunkBytes][off%chunkBytes:]
		k := copy(p[n:], c)
		n += k
		off += int64(k)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
