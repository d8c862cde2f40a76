package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/lz4"
	"github.com/parquet-go/parquet-go/encoding/delta"
	"github.com/parquet-go/parquet-go/format"
	pierrec "github.com/pierrec/lz4/v4"
)

// stats sums, bounds and counts the non-NULL values of an integer column.
type stats struct {
	sum, min, max, count int64
}

func columnStats(t *testing.T, c *Catalog, table, col string) stats {
	t.Helper()
	tb, err := c.Table(table, false)
	if err != nil {
		t.Fatal(err)
	}
	batches, err := c.Load(context.Background(), tb, []string{col}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := stats{min: math.MaxInt64, max: math.MinInt64}
	for _, b := range batches {
		v := b.Vecs[0]
		for i := range v.Len {
			if v.IsNull(i) {
				continue
			}
			x := v.I64[i]
			s.sum += x
			s.min, s.max = min(s.min, x), max(s.max, x)
			s.count++
		}
	}
	return s
}

// TestDuckDBFiles reads files DuckDB v1.5 wrote, against the answers
// DuckDB gives over them. duckdb_lz4.parquet is
//
//	COPY (SELECT CASE WHEN i % 13 = 0 THEN NULL ELSE ((i * 7919) % 1000 - 500)::INTEGER END AS v
//	      FROM range(30000) r(i)) TO 'duckdb_lz4.parquet' (FORMAT parquet, COMPRESSION lz4)
//
// (LZ4_RAW pages compressed less than 3:1, which parquet-go v0.32.0 decoded
// into a buffer it then dropped: sum, min and max came out 0);
// duckdb_v2_uint32.parquet is
//
//	COPY (SELECT (4294967280 + i % 16)::UINTEGER AS u32,
//	      CASE WHEN i % 3 = 0 THEN NULL ELSE (3000000000 + i * 7)::UINTEGER END AS u32n,
//	      (i::BIGINT * 5000000 % 4294967296)::UINTEGER AS u32w FROM range(1000) r(i))
//	TO 'duckdb_v2_uint32.parquet' (FORMAT parquet, PARQUET_VERSION V2)
//
// (DELTA_BINARY_PACKED pages whose first value is above 2^31-1, which
// parquet-go refuses: "first value out of range").
func TestDuckDBFiles(t *testing.T) {
	c, err := Open("testdata", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		table, col string
		want       stats
	}{
		{"duckdb_lz4", "v", stats{-15266, -500, 499, 27692}},
		{"duckdb_v2_uint32", "u32", stats{4294967287468, 4294967280, 4294967295, 1000}},
		{"duckdb_v2_uint32", "u32n", stats{1998002328669, 3000000007, 3000006986, 666}},
		{"duckdb_v2_uint32", "u32w", stats{1891909611264, 0, 4290000000, 1000}},
	} {
		if got := columnStats(t, c, tc.table, tc.col); got != tc.want {
			t.Errorf("%s.%s: sum, min, max, count = %v, DuckDB says %v", tc.table, tc.col, got, tc.want)
		}
	}
}

// hadoopWriter writes the deprecated LZ4 codec (5) with Hadoop's framing, in
// blocks of at most block bytes, as parquet-mr does.
type hadoopWriter struct{ block int }

func (hadoopWriter) String() string                            { return "LZ4" }
func (hadoopWriter) CompressionCodec() format.CompressionCodec { return format.Lz4 }
func (h hadoopWriter) Encode(dst, src []byte) ([]byte, error) {
	dst = dst[:0]
	for len(src) > 0 {
		chunk := src[:min(len(src), h.block)]
		src = src[len(chunk):]
		buf := make([]byte, pierrec.CompressBlockBound(len(chunk)))
		n, err := pierrec.CompressBlock(chunk, buf, nil)
		if err != nil {
			return nil, err
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(chunk)))
		dst = binary.BigEndian.AppendUint32(dst, uint32(n))
		dst = append(dst, buf[:n]...)
	}
	return dst, nil
}
func (hadoopWriter) Decode(dst, src []byte) ([]byte, error) { return nil, errors.New("not used") }

// bareLZ4 writes codec 5 as a bare LZ4 block, as old parquet-cpp did.
type bareLZ4 struct{ lz4.Codec }

func (*bareLZ4) CompressionCodec() format.CompressionCodec { return format.Lz4 }

// garbageLZ4 claims LZ4_RAW and writes bytes that are no LZ4 block: a
// hostile file (its CRCs are right).
type garbageLZ4 struct{ lz4.Codec }

func (*garbageLZ4) Encode(dst, src []byte) ([]byte, error) {
	return bytes.Repeat([]byte{0xff}, max(16, len(src)/3)), nil
}

func writeCodec(t *testing.T, n int, codec compress.Codec, version int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[allTypes](&buf, parquet.Compression(codec),
		parquet.MaxRowsPerRowGroup(1000), parquet.PageBufferSize(2048), parquet.DataPageVersion(version))
	rows := make([]allTypes, n)
	for i := range rows {
		rows[i] = sampleRow(i)
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCodecs reads every column of files written with every codec, with
// data pages v1 and v2.
func TestCodecs(t *testing.T) {
	const n = 1500
	for _, codec := range []compress.Codec{
		&parquet.Uncompressed, &parquet.Snappy, &parquet.Gzip, &parquet.Brotli, &parquet.Zstd, &parquet.Lz4Raw,
		hadoopWriter{block: 1 << 10}, hadoopWriter{block: 1 << 20}, &bareLZ4{},
	} {
		for _, version := range []int{1, 2} {
			name := fmt.Sprintf("%T/v%d", codec, version)
			if h, ok := codec.(hadoopWriter); ok {
				name += fmt.Sprintf("/block%d", h.block)
			}
			t.Run(name, func(t *testing.T) {
				data := writeCodec(t, n, codec, version)
				c := memCatalog(t, "t", data, 0)
				tb, err := c.Table("t", false)
				if err != nil {
					t.Fatal(err)
				}
				batches, err := c.Load(context.Background(), tb, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				row := 0
				for _, b := range batches {
					for r := range b.Len {
						for k, col := range tb.Columns {
							got, w := b.Vecs[k].Value(r), want(col.Name, row)
							if gt, ok := got.(time.Time); ok && gt.Equal(w.(time.Time)) {
								continue
							}
							if got != w {
								t.Fatalf("%s row %d: %v, want %v", col.Name, row, got, w)
							}
						}
						row++
					}
				}
				if row != n {
					t.Fatalf("%d rows, want %d", row, n)
				}
			})
		}
	}
}

// pageHeaders returns the pages of column col of row group g of data.
func pageHeaders(t *testing.T, data []byte, g int, col string) (md format.ColumnMetaData, locs []pageLoc) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	leaf, ok := f.Schema().Lookup(col)
	if !ok {
		t.Fatalf("no column %s", col)
	}
	md = f.Metadata().RowGroups[g].Columns[leaf.ColumnIndex].MetaData
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	locs, err = checkChunkHeaders(bytes.NewReader(data), start, start+md.TotalCompressedSize)
	if err != nil {
		t.Fatal(err)
	}
	return md, locs
}

// shiftUncompressedSize adds delta to the uncompressed_page_size of the
// page header at data[loc.pos:], keeping its varint's length (the file's
// layout is unchanged, and so are the page CRCs, which cover the page's
// bytes only).
func shiftUncompressedSize(t *testing.T, data []byte, loc pageLoc, delta int64) {
	t.Helper()
	h := data[loc.pos : loc.pos+int64(loc.header)]
	// Field 1 (type, i32), then field 2 (i32): header bytes 0x15, the
	// field id a delta of 1.
	if h[0] != 0x15 {
		t.Fatalf("page header starts %x", h[0])
	}
	_, n := binary.Varint(h[1:])
	if h[1+n] != 0x15 {
		t.Fatalf("page header field 2 is %x", h[1+n])
	}
	at := 2 + n
	u, m := binary.Varint(h[at:])
	var buf [binary.MaxVarintLen64]byte
	if k := binary.PutVarint(buf[:], u+delta); k != m {
		t.Fatalf("size %d+%d changes the varint's length", u, delta)
	}
	copy(h[at:], buf[:m])
}

// TestCorruptPages checks that a page that does not decompress to its
// header's size, or does not match its CRC, or is no valid block of its
// codec fails the read with an error naming the file, the column, the row
// group, the codec and the mismatch, and that no value is ever returned
// from such a page.
func TestCorruptPages(t *testing.T) {
	const n = 1200
	for _, tc := range []struct {
		name    string
		codec   compress.Codec
		version int
		col     string
		corrupt func(t *testing.T, data []byte)
		want    []string
	}{
		{"crc", &parquet.Snappy, 1, "I64", func(t *testing.T, data []byte) {
			_, locs := pageHeaders(t, data, 1, "I64")
			l := locs[len(locs)-1]
			data[l.pos+int64(l.header)+3] ^= 0x10
		}, []string{"row group 1", "SNAPPY", "CRC mismatch"}},
		{"snappy size +1", &parquet.Snappy, 1, "I64", func(t *testing.T, data []byte) {
			_, locs := pageHeaders(t, data, 0, "I64")
			shiftUncompressedSize(t, data, locs[len(locs)-1], 1)
		}, []string{"row group 0", "SNAPPY", "decompresses to"}},
		{"lz4 size +1", &parquet.Lz4Raw, 1, "Str", func(t *testing.T, data []byte) {
			_, locs := pageHeaders(t, data, 0, "Str")
			shiftUncompressedSize(t, data, locs[0], 1)
		}, []string{"row group 0", "LZ4_RAW", "decompresses to"}},
		{"lz4 size -1", &parquet.Lz4Raw, 2, "F64", func(t *testing.T, data []byte) {
			_, locs := pageHeaders(t, data, 1, "F64")
			shiftUncompressedSize(t, data, locs[0], -1)
		}, []string{"row group 1", "LZ4_RAW", "does not decompress"}},
		{"lz4 garbage", &garbageLZ4{}, 1, "I32", nil, []string{"row group 0", "LZ4_RAW", "LZ4 block"}},
		{"hadoop lz4 size +1", hadoopWriter{block: 1 << 20}, 1, "I32", func(t *testing.T, data []byte) {
			_, locs := pageHeaders(t, data, 0, "I32")
			shiftUncompressedSize(t, data, locs[0], 1)
		}, []string{"row group 0", "LZ4 (Hadoop)", "neither Hadoop-framed LZ4 nor"}},
		{"gzip size -1", &parquet.Gzip, 1, "I32", func(t *testing.T, data []byte) {
			_, locs := pageHeaders(t, data, 0, "I32")
			shiftUncompressedSize(t, data, locs[0], -1)
		}, []string{"GZIP", "more than the header's"}},
		{"zstd size +1", &parquet.Zstd, 2, "I32", func(t *testing.T, data []byte) {
			_, locs := pageHeaders(t, data, 0, "I32")
			shiftUncompressedSize(t, data, locs[0], 1)
		}, []string{"ZSTD", "decompresses to"}},
		{"brotli size +1", &parquet.Brotli, 1, "I32", func(t *testing.T, data []byte) {
			_, locs := pageHeaders(t, data, 0, "I32")
			shiftUncompressedSize(t, data, locs[0], 1)
		}, []string{"BROTLI", "decompresses to"}},
		{"uncompressed size +1", &parquet.Uncompressed, 1, "I32", func(t *testing.T, data []byte) {
			_, locs := pageHeaders(t, data, 0, "I32")
			shiftUncompressedSize(t, data, locs[0], 1)
		}, []string{"UNCOMPRESSED", "the header says"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := writeCodec(t, n, tc.codec, tc.version)
			if tc.corrupt != nil {
				tc.corrupt(t, data)
			}
			c := memCatalog(t, "f", data, 0)
			tb, err := c.Table("f", false)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Load(context.Background(), tb, []string{tc.col}, nil)
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range append([]string{"memory:f", fmt.Sprintf("column %q", tc.col)}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, err)
				}
			}
			// The other columns still read (the streams too).
			rd, err := c.Open(tb)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			cs, err := rd.Stream(context.Background(), 0, tb.ColumnIndex("Str"))
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			_, err = cs.Next(context.Background(), 10)
			if (err != nil) != (tc.col == "Str" || tc.name == "lz4 garbage") {
				t.Errorf("stream of Str: %v", err)
			}
		})
	}
}

// pack packs values w bits wide from the least significant bit on.
func pack(values []uint64, w, perMini int) []byte {
	b := make([]byte, perMini*w/8)
	for i, x := range values {
		for k := range w {
			if x>>k&1 != 0 {
				off := i*w + k
				b[off/8] |= 1 << (off % 8)
			}
		}
	}
	return b
}

// TestDeltaInt32Plain decodes DELTA_BINARY_PACKED INT32 values: parquet-go's
// encoding of random values, and DuckDB's of UINTEGERs, whose first value
// is above 2^31-1 and whose deltas, computed in 64 bits, need 33 bits.
func TestDeltaInt32Plain(t *testing.T) {
	plain := func(xs ...uint32) []byte {
		b := []byte{0xaa} // the levels before the values
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint32(b, x)
		}
		return b
	}
	// DuckDB: 4290000000, 32704, 5032704 as UINTEGER.
	duck := binary.AppendUvarint(nil, 128)
	duck = binary.AppendUvarint(duck, 4)
	duck = binary.AppendUvarint(duck, 3)
	duck = binary.AppendVarint(duck, 4290000000)
	duck = binary.AppendVarint(duck, 32704-4290000000) // min delta
	duck = append(duck, 33, 0, 0, 0)
	duck = append(duck, pack([]uint64{0, 4294967296}, 33, 32)...)
	got, err := deltaInt32Plain([]byte{0xaa}, duck, 3)
	if want := plain(4290000000, 32704, 5032704); err != nil || !bytes.Equal(got, want) {
		t.Errorf("DuckDB's UINTEGERs: % x, %v; want % x", got, err, want)
	}
	// parquet-go's encoder, on values of every width, over several blocks.
	for _, n := range []int{1, 2, 33, 129, 1000} {
		vals := make([]int32, n)
		for i := range vals {
			vals[i] = int32(uint32(i) * 2654435761 >> (i % 32))
		}
		enc, err := new(delta.BinaryPackedEncoding).EncodeInt32(nil, vals)
		if err != nil {
			t.Fatal(err)
		}
		got, err := deltaInt32Plain([]byte{0xaa}, enc, n)
		want := []byte{0xaa}
		for _, v := range vals {
			want = binary.LittleEndian.AppendUint32(want, uint32(v))
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%d values: %v", n, err)
		}
		// Truncated, an error (or, cut in the last miniblock's padding,
		// the values), never a panic.
		for _, cut := range []int{0, 1, 3, len(enc) / 2, len(enc) - 1} {
			got, err := deltaInt32Plain([]byte{0xaa}, enc[:cut], n)
			if err == nil && !bytes.Equal(got, want) {
				t.Errorf("%d values cut to %d bytes: wrong values and no error", n, cut)
			}
			if err == nil && cut <= 3 {
				t.Errorf("%d values cut to %d bytes: no error", n, cut)
			}
		}
		if _, err := deltaInt32Plain(nil, enc, n-1); err == nil {
			t.Errorf("%d values in a page of %d: no error", n, n-1)
		}
	}
}

// TestVerifyChecksums: a page whose bytes no longer match its CRC fails a
// reader that verifies checksums with the mismatch named, while a reader
// that does not (the default) never reports one.
func TestVerifyChecksums(t *testing.T) {
	data := writeCodec(t, 1200, &parquet.Snappy, 1)
	_, locs := pageHeaders(t, data, 1, "I64")
	l := locs[len(locs)-1]
	data[l.pos+int64(l.header)+3] ^= 0x10
	c := memCatalog(t, "f", data, 0)
	tb, err := c.Table("f", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, verify := range []bool{false, true} {
		rd, err := c.Open(tb)
		if err != nil {
			t.Fatal(err)
		}
		rd.VerifyChecksums(verify)
		_, err = rd.RowGroup(context.Background(), 1, []int{tb.ColumnIndex("I64")})
		rd.Close()
		if got := err != nil && strings.Contains(err.Error(), "CRC mismatch"); got != verify {
			t.Errorf("verify %v: %v", verify, err)
		}
	}
}
