package storage

import "testing"

// TestBufPool: a kept buffer comes back for a request it can hold and
// for no larger one, once; nil and empty buffers are not kept; the pool
// keeps no more than maxPooled bytes.
func TestBufPool(t *testing.T) {
	var p bufPool
	if b := p.get(1); b != nil {
		t.Fatalf("empty pool gave a buffer of %d bytes", cap(b))
	}
	p.put(nil)
	p.put(make([]byte, 0))
	if len(p.bufs) != 0 {
		t.Fatalf("kept %d empty buffers", len(p.bufs))
	}
	small, large := make([]byte, 100), make([]byte, 1000)
	p.put(small)
	p.put(large)
	for _, tc := range []struct {
		n    int
		want int // capacity of the buffer given, 0 for none
	}{
		{2000, 0},
		{500, 1000},
		{500, 0},
		{100, 100},
		{1, 0},
	} {
		if got := cap(p.get(tc.n)); got != tc.want {
			t.Errorf("get(%d): a buffer of %d bytes, want %d", tc.n, got, tc.want)
		}
	}
	for range 3 {
		p.put(make([]byte, maxPooled/2))
	}
	if p.bytes > maxPooled || len(p.bufs) != 2 {
		t.Errorf("kept %d buffers, %d bytes; want 2, at most %d", len(p.bufs), p.bytes, maxPooled)
	}
	var none *bufPool
	none.put(small)
	if none.get(1) != nil {
		t.Error("a nil pool gave a buffer")
	}
}
