//go:build !linux

package latency

import (
	"errors"
	"fmt"
)

// errTooBig is returned when an allocation cannot be made.
var errTooBig = errors.New("buffer too large for this platform")

// buffer is chase memory on the Go heap (no huge-page control here).
type buffer struct {
	words []uint32
	size  int64
	huge  bool
}

func allocate(size int64, huge bool) (b *buffer, err error) {
	defer func() {
		if r := recover(); r != nil { // makeslice: len out of range
			b, err = nil, fmt.Errorf("%w: %v", errTooBig, r)
		}
	}()
	return &buffer{words: make([]uint32, size/4), size: size, huge: huge}, nil
}

func (b *buffer) free() { b.words = nil }

func (b *buffer) pages() Pages {
	p := Pages{Requested: "4KiB", Used: "unknown", BufferBytes: b.size,
		Detail: "page size cannot be controlled or checked on this platform"}
	if b.huge {
		p.Requested = "2MiB-THP"
		p.Detail = "huge pages were requested but are not available on this platform"
	}
	return p
}
