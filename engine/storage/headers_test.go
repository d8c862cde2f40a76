package storage

import (
	"bytes"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// TestHeaderWalkKeeps walks a chunk of pages whose headers are short and
// long (statistics of long strings: past what skip keeps of the bytes read
// ahead, and past what next reads first), given the bytes a reader reads
// for each page as the mapped path does, and finds every page where it is.
func TestHeaderWalkKeeps(t *testing.T) {
	tests := []struct {
		name  string
		stats []int // per page, the bytes of its min and max value
		body  int   // bytes of each page's body
	}{
		{"short headers", []int{0, 8, 0, 16}, 100},
		{"a header past headerKeep", []int{0, headerKeep, 0}, 100},
		{"a header past headerAhead", []int{0, headerAhead, 10}, 3000},
		{"long headers in a row", []int{headerKeep * 2, headerKeep * 3, headerAhead * 2}, 10},
		{"empty bodies", []int{0, headerKeep, 0}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var chunk bytes.Buffer
			var want []pageLoc
			for i, n := range tc.stats {
				h := format.PageHeader{Type: format.DataPage, UncompressedPageSize: int32(tc.body), CompressedPageSize: int32(tc.body)}
				dp := format.DataPageHeader{NumValues: 1}
				if n > 0 {
					dp.Statistics.MinValue = []byte(strings.Repeat("a", n))
					dp.Statistics.MaxValue = []byte(strings.Repeat("z", n))
				}
				h.DataPageHeader = thrift.New(dp)
				hdr, err := thrift.Marshal(new(thrift.CompactProtocol), &h)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, pageLoc{pos: int64(chunk.Len()), header: len(hdr), size: tc.body})
				chunk.Write(hdr)
				chunk.Write(bytes.Repeat([]byte{byte(i)}, tc.body))
			}
			file := chunk.Bytes()
			w, err := newHeaderWalk(bytes.NewReader(file), 0, int64(len(file)))
			if err != nil {
				t.Fatal(err)
			}
			for i, wl := range want {
				loc, err := w.next()
				if err != nil {
					t.Fatalf("page %d: %v", i, err)
				}
				if loc.pos != wl.pos || loc.header != wl.header || loc.size != wl.size {
					t.Fatalf("page %d at %+v, want %+v", i, loc, wl)
				}
				n := w.readLen()
				w.skip(file[loc.pos : loc.pos+int64(n)])
			}
			if !w.done() {
				t.Errorf("not done after %d pages", len(want))
			}
		})
	}
}
