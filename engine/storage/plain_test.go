package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// snappyInputs are blocks of several kinds: incompressible bytes (long
// literals), text (short copies) and runs (copies overlapping their
// source).
func snappyInputs() map[string][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 100_000)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	var text strings.Builder
	for i := 0; text.Len() < 200_000; i++ {
		fmt.Fprintf(&text, "http://site-%d.example/path/%d?q=%d ", i%37, i%101, i)
	}
	runs := bytes.Repeat([]byte("ab"), 50_000)
	runs = append(runs, bytes.Repeat([]byte{0}, 70_000)...)
	return map[string][]byte{"random": random, "text": []byte(text.String()), "runs": runs, "short": []byte("hello, hello, hello")}
}

// snappyEncoders are s2's SNAPPY encoders, each making blocks of its own.
var snappyEncoders = []struct {
	name string
	f    func(dst, src []byte) []byte
}{{"fast", s2.EncodeSnappy}, {"better", s2.EncodeSnappyBetter}, {"best", s2.EncodeSnappyBest}}

// corrupted returns a copy of the block good with one to three bytes
// changed and, one time in four, cut short.
func corrupted(r *rand.Rand, good []byte) []byte {
	src := bytes.Clone(good)
	for range 1 + r.IntN(3) {
		src[r.IntN(len(src))] = byte(r.Uint32())
	}
	if r.IntN(4) == 0 {
		src = src[:r.IntN(len(src))]
	}
	return src
}

// TestSnappyPrefix decompresses blocks in uneven steps and checks every
// prefix against the block, and that the whole block comes out.
func TestSnappyPrefix(t *testing.T) {
	for name, in := range snappyInputs() {
		for _, enc := range snappyEncoders {
			t.Run(name+"/"+enc.name, func(t *testing.T) {
				src := enc.f(nil, in)
				z := snappyPrefix{src: src, s: len(src) - len(skipUvarint(src))}
				dst := make([]byte, len(in))
				for n := 1; ; n = n*5/2 + 7 {
					d, err := z.decode(dst, len(dst), min(n, len(in)))
					if err != nil {
						t.Fatal(err)
					}
					if d < min(n, len(in)) || !bytes.Equal(dst[:d], in[:d]) {
						t.Fatalf("asked for %d bytes: %d, equal %v", n, d, bytes.Equal(dst[:d], in[:d]))
					}
					if d == len(in) {
						break
					}
				}
			})
		}
	}
}

// TestSnappyPrefixCorrupt decompresses blocks with bytes changed: each
// fails or fills its buffer, and none writes outside it or panics.
func TestSnappyPrefixCorrupt(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for name, in := range snappyInputs() {
		good := s2.EncodeSnappy(nil, in)
		for range 300 {
			src := corrupted(r, good)
			z := snappyPrefix{src: src, s: len(src) - len(skipUvarint(src))}
			dst := make([]byte, len(in), len(in)+64)
			guard := dst[len(in):cap(dst)]
			d, err := z.decode(dst, len(in), len(in))
			if err == nil && d != len(in) {
				t.Fatalf("%s: no error, %d of %d bytes", name, d, len(in))
			}
			for _, b := range guard {
				if b != 0 {
					t.Fatalf("%s: wrote past the buffer", name)
				}
			}
		}
	}
}

// bigPages is a required column of every kind a plainPage reads, with
// strings of uneven lengths.
type bigPages struct {
	I32 int32     `parquet:"I32"`
	I64 int64     `parquet:"I64"`
	U16 uint16    `parquet:"U16"`
	F32 float32   `parquet:"F32"`
	F64 float64   `parquet:"F64"`
	Str string    `parquet:"Str,plain"`
	Ts  time.Time `parquet:"Ts,timestamp(millisecond)"`
}

func bigPagesRow(i int) bigPages {
	return bigPages{I32: int32(i*7919 - 1<<20), I64: int64(i) * -987654321, U16: uint16(i * 3), F32: float32(i) / 8, F64: float64(i) * 1.25,
		Str: strings.Repeat(string(rune('a'+i%26)), i%61) + fmt.Sprint(i),
		Ts:  time.Date(2013, 7, 15, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)}
}

// TestPlainPages reads files of pages larger than lazyPrefix (and, in the
// second row group, some not), with
// SNAPPY and without compression, data pages v1 and v2: ten rows of each
// column first (decompressed a prefix at a time), then the rest in uneven
// steps, and every chunk whole, against the values written.
func TestPlainPages(t *testing.T) {
	const n = 12_000
	rows := make([]bigPages, n)
	for i := range rows {
		rows[i] = bigPagesRow(i)
	}
	for _, tc := range []struct {
		name    string
		codec   parquet.WriterOption
		version int
	}{
		{"snappy v1", parquet.Compression(&parquet.Snappy), 1},
		{"snappy v2", parquet.Compression(&parquet.Snappy), 2},
		{"uncompressed v2", parquet.Compression(&parquet.Uncompressed), 2},
	} {
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[bigPages](&buf, tc.codec, parquet.MaxRowsPerRowGroup(8_000),
			parquet.PageBufferSize(256<<10), parquet.DataPageVersion(tc.version))
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		for _, src := range []string{"memory", "file"} {
			t.Run(tc.name+" "+src, func(t *testing.T) {
				c := memCatalog(t, "t", buf.Bytes(), 0)
				if src == "file" {
					c = fileCatalog(t, "t", buf.Bytes(), 0) // pages read from a mapping
				}
				tb, err := c.Table("t", false)
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				rd, err := c.Open(tb)
				if err != nil {
					t.Fatal(err)
				}
				defer rd.Close()
				wantRow := func(col string, i int) string {
					r := bigPagesRow(i)
					switch col {
					case "I32":
						return fmt.Sprint(r.I32)
					case "I64":
						return fmt.Sprint(r.I64)
					case "U16":
						return fmt.Sprint(r.U16)
					case "F32":
						return fmt.Sprint(float64(r.F32))
					case "F64":
						return fmt.Sprint(r.F64)
					case "Str":
						return r.Str
					default:
						return fmt.Sprint(r.Ts.UTC())
					}
				}
				first := 0
				for g, rows := range tb.RowGroupRows {
					for j, col := range tb.Columns {
						st, err := rd.Stream(ctx, g, j)
						if err != nil {
							t.Fatal(err)
						}
						whole, err := rd.RowGroup(ctx, g, []int{j})
						if err != nil {
							t.Fatal(err)
						}
						pos := 0
						for step := 10; pos < int(rows); step = step*3 + 1 {
							v, err := st.Next(ctx, step)
							if err != nil {
								t.Fatal(err)
							}
							for i := range v.Len {
								if got, want := fmt.Sprint(v.Value(i)), wantRow(col.Name, first+pos+i); got != want {
									t.Fatalf("%s row %d, streamed: %s, want %s", col.Name, first+pos+i, got, want)
								}
							}
							if pos == 0 && tc.version == 1 && g == 0 {
								// Ten rows: a prefix of the first page (the
								// second row group's pages of INT32 are
								// too small to be read a prefix at a time).
								if pp, ok := st.cur.(*plainPage); !ok || pp.have >= pp.size {
									t.Fatalf("%s: after ten rows, page %T decompressed whole", col.Name, st.cur)
								}
							}
							pos += v.Len
						}
						st.Close()
						v := whole[0]
						for i := range v.Len {
							if got, want := fmt.Sprint(v.Value(i)), wantRow(col.Name, first+i); got != want {
								t.Fatalf("%s row %d, whole: %s, want %s", col.Name, first+i, got, want)
							}
						}
					}
					first += int(rows)
				}
			})
		}
	}
}

// TestPlainPageLazyFirst checks which requests decompress a SNAPPY page a
// prefix at a time and which whole, and that the values are right either
// way.
func TestPlainPageLazyFirst(t *testing.T) {
	const np = 32 << 10 // INT64 values: 256 KiB
	raw := make([]byte, 8*np)
	for i := range np {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(i%1000)*7)
	}
	src := s2.EncodeSnappy(nil, raw)
	for _, tc := range []struct {
		name  string
		asks  []int // values asked for, in turn
		whole bool  // the page is decompressed whole after the last
	}{
		{"limit 10", []int{10}, false},
		{"limit 256", []int{256}, false},
		{"growing", []int{10, 200, 400, 800}, false},
		{"a morsel first", []int{lazyFirst/8 + 1}, true},
		{"a morsel after a look", []int{10, 2000}, true},
		{"past the prefix", []int{10, 200, 400, 800, 1600, (lazyPrefix+snappyOvershoot)/8 + 1}, true},
		{"the last value", []int{np}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole := make([]byte, len(raw))
			p, err := newPlainPage(np, format.Int64, format.Snappy, src, len(raw), func() []byte { return whole },
				make([]byte, lazyPrefix+snappyOvershoot), nil, &decompressors{})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tc.asks {
				v, err := p.values(n)
				if err != nil {
					t.Fatal(err)
				}
				got := v.Int64()
				if len(got) < n {
					t.Fatalf("asked for %d values, got %d", n, len(got))
				}
				for i := range n {
					if want := int64(i%1000) * 7; got[i] != want {
						t.Fatalf("value %d: %d, want %d", i, got[i], want)
					}
				}
			}
			if got := p.have == p.size; got != tc.whole {
				t.Errorf("decompressed whole: %v (%d of %d bytes), want %v", got, p.have, p.size, tc.whole)
			}
		})
	}
}
