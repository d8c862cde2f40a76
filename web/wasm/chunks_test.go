package main

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// TestChunkedFile writes in pieces that straddle chunk boundaries and
// reads back at random offsets and lengths, against bytes.Reader.
func TestChunkedFile(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	want := make([]byte, 3*chunkBytes+12345)
	for i := range want {
		want[i] = byte(r.Uint32())
	}
	var f chunkedFile
	for rest := want; len(rest) > 0; {
		n := min(len(rest), 1+r.IntN(chunkBytes/2))
		if got, err := f.Write(rest[:n]); got != n || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", n, got, err)
		}
		rest = rest[n:]
	}
	if f.Size() != int64(len(want)) {
		t.Fatalf("Size() = %d, want %d", f.Size(), len(want))
	}
	ref := bytes.NewReader(want)
	for i := 0; i < 200; i++ {
		off := int64(r.IntN(len(want) + 10))
		p, q := make([]byte, r.IntN(2*chunkBytes)), make([]byte, 0)
		q = append(q, p...)
		n, err := f.ReadAt(p, off)
		m, rerr := ref.ReadAt(q, off)
		if n != m || (err == nil) != (rerr == nil) || !bytes.Equal(p[:n], q[:m]) {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; bytes.Reader: %d, %v", len(p), off, n, err, m, rerr)
		}
		if err != nil && err != io.EOF {
			t.Fatalf("ReadAt: %v", err)
		}
	}
	if _, err := f.ReadAt(make([]byte, 1), -1); err == nil {
		t.Fatal("ReadAt at -1: no error")
	}
}
