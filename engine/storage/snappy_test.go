package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// hitsFile is the generated 20M-row table the SNAPPY benchmarks read their
// pages from; they skip when it is absent.
const hitsFile = "/work/main/data/bench-20000000-shuffled/hits.parquet"

// hitsColumns are the columns whose pages the benchmarks decode: integer
// columns of few distinct values (many short overlapping copies), a
// timestamp, and strings (long literals).
var hitsColumns = []string{"IsRefresh", "CounterID", "EventDate", "EventTime", "URL", "SearchPhrase"}

// snappyPages returns the compressed bodies of the SNAPPY data pages of
// the named columns in row group g of the Parquet file at path, walked
// with the storage package's own header walk, and their uncompressed
// sizes.
func snappyPages(tb testing.TB, path string, g int, cols []string) (map[string][][]byte, map[string][]int) {
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		tb.Skipf("%s is absent", path)
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	f, err := parquet.OpenFile(fh, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		tb.Fatal(err)
	}
	bodies, sizes := map[string][][]byte{}, map[string][]int{}
	for _, c := range f.Metadata().RowGroups[g].Columns {
		md := c.MetaData
		name := md.PathInSchema[len(md.PathInSchema)-1]
		want := false
		for _, n := range cols {
			want = want || n == name
		}
		if !want || md.Codec != format.Snappy {
			continue
		}
		start := md.DataPageOffset
		if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
			start = md.DictionaryPageOffset
		}
		w, err := newHeaderWalk(fh, start, start+md.TotalCompressedSize)
		if err != nil {
			tb.Fatal(err)
		}
		for !w.done() {
			loc, err := w.next()
			if err != nil {
				tb.Fatal(err)
			}
			raw := make([]byte, loc.header+loc.size)
			if _, err := fh.ReadAt(raw, loc.pos); err != nil && err != io.EOF {
				tb.Fatal(err)
			}
			w.skip(nil)
			var h format.PageHeader
			if err := thrift.Unmarshal(new(thrift.CompactProtocol), raw[:loc.header], &h); err != nil {
				tb.Fatal(err)
			}
			body := raw[loc.header:]
			switch {
			case h.Type == format.DataPage:
			case h.Type == format.DataPageV2 && (!h.DataPageHeaderV2.V.IsCompressed.Valid || h.DataPageHeaderV2.V.IsCompressed.V):
				v := &h.DataPageHeaderV2.V
				levels := int(v.RepetitionLevelsByteLength + v.DefinitionLevelsByteLength)
				body = body[levels:]
				h.UncompressedPageSize -= int32(levels)
			default:
				continue
			}
			bodies[name] = append(bodies[name], body)
			sizes[name] = append(sizes[name], int(h.UncompressedPageSize))
		}
	}
	return bodies, sizes
}

// BenchmarkSnappyPages decodes the pages of each column of hitsColumns of
// one row group of hitsFile whole.
func BenchmarkSnappyPages(b *testing.B) {
	bodies, sizes := snappyPages(b, hitsFile, 0, hitsColumns)
	for _, name := range hitsColumns {
		pages := bodies[name]
		total := 0
		for _, n := range sizes[name] {
			total += n
		}
		dst := make([]byte, 0, 1<<20)
		for _, dec := range []struct {
			name string
			f    func(dst, src []byte) error
		}{
			{"s2", func(dst, src []byte) error { _, err := s2.Decode(dst, src); return err }},
			{"cachebook", decodeSnappy},
		} {
			b.Run(name+"/"+dec.name, func(b *testing.B) {
				b.SetBytes(int64(total))
				for b.Loop() {
					for i, p := range pages {
						if err := dec.f(dst[:sizes[name][i]], p); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// TestSnappyHistogram prints the tags of the pages of hitsColumns: copy
// offsets and lengths, literal lengths.
func TestSnappyHistogram(t *testing.T) {
	if testing.Short() || os.Getenv("SNAPPY_HIST") == "" {
		t.Skip("set SNAPPY_HIST=1")
	}
	bodies, sizes := snappyPages(t, hitsFile, 0, hitsColumns)
	bucket := func(x int) string {
		switch {
		case x <= 8:
			return fmt.Sprint(x)
		case x <= 16:
			return "9-16"
		case x <= 64:
			return "17-64"
		case x <= 1024:
			return "65-1K"
		}
		return ">1K"
	}
	for _, name := range hitsColumns {
		var comp, raw, copies, lits, litBytes, copyBytes int
		offs, lens, llens := map[string]int{}, map[string]int{}, map[string]int{}
		for i, src := range bodies[name] {
			comp += len(src)
			raw += sizes[name][i]
			src = skipUvarint(src)
			for s := 0; s < len(src); {
				tag := src[s]
				var length, offset int
				switch tag & 3 {
				case 0:
					x := int(tag >> 2)
					s++
					if x >= 60 {
						k := x - 59
						x = 0
						for j := k - 1; j >= 0; j-- {
							x = x<<8 | int(src[s+j])
						}
						s += k
					}
					s += x + 1
					lits++
					litBytes += x + 1
					llens[bucket(x+1)]++
					continue
				case 1:
					length = 4 + int(tag>>2)&7
					offset = int(tag&0xe0)<<3 | int(src[s+1])
					s += 2
				case 2:
					length = 1 + int(tag>>2)
					offset = int(src[s+1]) | int(src[s+2])<<8
					s += 3
				case 3:
					length = 1 + int(tag>>2)
					offset = int(src[s+1]) | int(src[s+2])<<8 | int(src[s+3])<<16 | int(src[s+4])<<24
					s += 5
				}
				copies++
				copyBytes += length
				offs[bucket(offset)]++
				lens[bucket(length)]++
			}
		}
		t.Logf("%s: %d pages, %d -> %d bytes (%.1fx); %d copies (%d bytes, %.1f avg), %d literals (%d bytes)",
			name, len(bodies[name]), raw, comp, float64(raw)/float64(comp), copies, copyBytes, float64(copyBytes)/float64(max(copies, 1)), lits, litBytes)
		t.Logf("  offsets %v", offs)
		t.Logf("  lengths %v", lens)
		t.Logf("  literal lengths %v", llens)
	}
}

// TestSnappySpeed prints, for each column of hitsColumns, the fastest of
// several passes of each decoder over its pages (the fastest pass is the
// least disturbed on a shared machine), the decoders alternating.
func TestSnappySpeed(t *testing.T) {
	if testing.Short() || os.Getenv("SNAPPY_SPEED") == "" {
		t.Skip("set SNAPPY_SPEED=1")
	}
	bodies, sizes := snappyPages(t, hitsFile, 0, hitsColumns)
	decs := []struct {
		name string
		f    func(dst, src []byte) error
	}{
		{"s2", func(dst, src []byte) error { _, err := s2.Decode(dst, src); return err }},
		{"cachebook", decodeSnappy},
	}
	dst := make([]byte, 1<<20)
	for _, name := range hitsColumns {
		total := 0
		for _, n := range sizes[name] {
			total += n
		}
		best := make([]time.Duration, len(decs))
		for rep := range 25 {
			for i, dec := range decs {
				start := time.Now()
				for k, p := range bodies[name] {
					if err := dec.f(dst[:sizes[name][k]], p); err != nil {
						t.Fatal(err)
					}
				}
				if el := time.Since(start); rep == 0 || el < best[i] {
					best[i] = el
				}
			}
		}
		line := name + ":"
		for i, dec := range decs {
			line += fmt.Sprintf("  %s %.2f GB/s", dec.name, float64(total)/best[i].Seconds()/1e9)
		}
		t.Log(line)
	}
}

// FuzzSnappy compares the Go decoder of SNAPPY prefixes, asked for the
// whole block, with s2.Decode: a block it decodes, s2 decodes to the
// same bytes; a block s2 rejects, it rejects. (s2 accepts more: S2's
// extensions, which SNAPPY does not have.) decodeSnappy accepts and
// decodes what the prefix decoder does. Neither panics nor writes outside
// its buffer.
func FuzzSnappy(f *testing.F) {
	for _, in := range snappyInputs() {
		f.Add(s2.EncodeSnappy(nil, in[:min(len(in), 5000)]))
		f.Add(s2.EncodeSnappyBetter(nil, in[:min(len(in), 3000)]))
	}
	f.Add([]byte{0})
	f.Add([]byte{5, 0x10, 'a', 'b', 'c', 'd', 'e'})
	f.Fuzz(func(t *testing.T, src []byte) {
		n, err := s2.DecodedLen(src)
		if err != nil || n > 1<<20 {
			return
		}
		want, werr := s2.Decode(nil, src)
		// The buffer is larger than the block: bytes past it must stay.
		buf := make([]byte, n+snappyOvershoot+8)
		for i := range buf {
			buf[i] = 0xa5
		}
		z := snappyPrefix{src: src, s: len(src) - len(skipUvarint(src))}
		d, err := z.decode(buf[:n+snappyOvershoot], n, n)
		for i := n + snappyOvershoot; i < len(buf); i++ {
			if buf[i] != 0xa5 {
				t.Fatalf("byte %d past the buffer written", i)
			}
		}
		switch {
		case err == nil && werr != nil:
			t.Fatalf("decoded %d bytes of a block s2 rejects: %v", d, werr)
		case err == nil && (d != n || !bytes.Equal(buf[:n], want)):
			t.Fatalf("decoded %d bytes, s2 %d, equal %v", d, len(want), bytes.Equal(buf[:min(d, n)], want[:min(d, n)]))
		}
		// decodeSnappy accepts the blocks the prefix decoder accepts, to
		// the same bytes, and writes nothing past its buffer.
		whole := make([]byte, n+8)
		for i := range whole {
			whole[i] = 0xa5
		}
		werr2 := decodeSnappy(whole[:n], src)
		if !bytes.Equal(whole[n:], bytes.Repeat([]byte{0xa5}, 8)) {
			t.Fatal("decodeSnappy wrote past its buffer")
		}
		switch {
		case (werr2 == nil) != (err == nil):
			t.Fatalf("decodeSnappy: %v; the prefix decoder: %v", werr2, err)
		case werr2 == nil && !bytes.Equal(whole[:n], buf[:n]):
			t.Fatal("decodeSnappy and the prefix decoder decode different bytes")
		}
	})
}

// TestDecodeSnappy decodes blocks of each encoder's making, with a buffer
// offset so that the fast loop's 16-byte words start anywhere, and
// blocks with bytes changed or cut, which fail or decode to what the
// prefix decoder decodes, without writing past the buffer.
func TestDecodeSnappy(t *testing.T) {
	inputs := snappyInputs()
	// Copies of every length from every distance up to 40 bytes back, and
	// literals of every length up to 70, between bytes of the text.
	var mixed []byte
	text := inputs["text"]
	for back := 1; back <= 40; back++ {
		for n := 1; n <= 70; n += 3 {
			mixed = append(mixed, text[back*n%len(text):][:n]...)
			for i := 0; i < n; i++ {
				mixed = append(mixed, mixed[len(mixed)-back])
			}
		}
	}
	inputs["mixed"] = mixed
	for name, in := range inputs {
		for _, enc := range snappyEncoders {
			t.Run(name+"/"+enc.name, func(t *testing.T) {
				src := enc.f(nil, in)
				for _, at := range []int{0, 3} {
					buf := make([]byte, at+len(in)+8)
					dst := buf[at : at+len(in)]
					if err := decodeSnappy(dst, src); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(dst, in) {
						t.Fatal("decoded bytes differ from the input")
					}
					if !bytes.Equal(buf[at+len(in):], make([]byte, 8)) {
						t.Fatal("wrote past the buffer")
					}
				}
			})
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for name, in := range inputs {
		good := s2.EncodeSnappy(nil, in)
		for range 300 {
			src := corrupted(r, good)
			dst := make([]byte, len(in), len(in)+64)
			err := decodeSnappy(dst, src)
			for _, b := range dst[len(in):cap(dst)] {
				if b != 0 {
					t.Fatalf("%s: wrote past the buffer", name)
				}
			}
			z := snappyPrefix{src: src, s: len(src) - len(skipUvarint(src))}
			want := make([]byte, len(in)+snappyOvershoot)
			d, perr := z.decode(want, len(in), len(in))
			if perr == nil && d != len(in) {
				perr = errors.New("short")
			}
			switch {
			case (err == nil) != (perr == nil):
				t.Fatalf("%s: decodeSnappy: %v; the prefix decoder: %v", name, err, perr)
			case err == nil && !bytes.Equal(dst, want[:len(in)]):
				t.Fatalf("%s: decodeSnappy and the prefix decoder decode different bytes", name)
			case err != nil && !errors.Is(err, errCorrupt):
				t.Fatalf("%s: %v is not a corrupt-data error", name, err)
			}
		}
	}
}
