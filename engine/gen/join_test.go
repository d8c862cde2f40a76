package gen_test

import (
	"bytes"
	"io"
	"slices"
	"testing"

	"cachebook/engine/gen"

	"github.com/parquet-go/parquet-go"
)

func TestParts(t *testing.T) {
	for _, c := range []struct {
		rows, group, n int
		want           [][2]int
	}{
		{100, 10, 1, [][2]int{{0, 100}}},
		{100, 10, 2, [][2]int{{0, 50}, {50, 100}}},
		{95, 10, 2, [][2]int{{0, 50}, {50, 95}}},
		{95, 10, 3, [][2]int{{0, 30}, {30, 60}, {60, 95}}},
		{25, 10, 5, [][2]int{{0, 10}, {10, 20}, {20, 25}}}, // no more parts than row groups
		{5, 10, 2, [][2]int{{0, 5}}},
		{4_000_000, 0, 2, [][2]int{{0, 2 << 20}, {2 << 20, 4_000_000}}},
		{7, 10, 0, [][2]int{{0, 7}}},
	} {
		if got := gen.Parts(c.rows, c.group, c.n); !slices.Equal(got, c.want) {
			t.Errorf("Parts(%d, %d, %d) = %v, want %v", c.rows, c.group, c.n, got, c.want)
		}
	}
}

// TestJoin checks that parts generated apart and joined make the file
// Write makes of the whole table, byte for byte, for parts on row group
// boundaries, and a file with the same rows for parts that are not.
func TestJoin(t *testing.T) {
	for _, c := range []struct {
		name  string
		o     gen.Options
		parts [][2]int
		same  bool // byte for byte
	}{
		{"two", gen.Options{Rows: 12000, Seed: 3, RowGroupRows: 2500}, gen.Parts(12000, 2500, 2), true},
		{"three", gen.Options{Rows: 12000, Seed: 3, RowGroupRows: 2500}, gen.Parts(12000, 2500, 3), true},
		{"one", gen.Options{Rows: 12000, Seed: 3, RowGroupRows: 2500}, gen.Parts(12000, 2500, 1), true},
		{"clustered", gen.Options{Rows: 8000, Seed: 5, Order: "clustered", RowGroupRows: 2000}, gen.Parts(8000, 2000, 2), true},
		{"unaligned", gen.Options{Rows: 8000, Seed: 5, RowGroupRows: 3000}, [][2]int{{0, 2500}, {2500, 8000}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			whole := write(t, c.o)
			var parts []io.ReaderAt
			var sizes []int64
			for _, p := range c.parts {
				o := c.o
				o.From, o.To = p[0], p[1]
				b := write(t, o)
				parts = append(parts, bytes.NewReader(b))
				sizes = append(sizes, int64(len(b)))
			}
			spans, err := gen.Join(parts, sizes)
			if err != nil {
				t.Fatal(err)
			}
			var joined bytes.Buffer
			if err := gen.WriteSpans(&joined, parts, spans); err != nil {
				t.Fatal(err)
			}
			if int64(joined.Len()) != gen.Spans(spans) {
				t.Fatalf("wrote %d bytes, spans say %d", joined.Len(), gen.Spans(spans))
			}
			if c.same && !bytes.Equal(joined.Bytes(), whole) {
				t.Fatalf("joined file (%d bytes) differs from the whole table's (%d bytes)", joined.Len(), len(whole))
			}
			want, got := readHits(t, whole), readHits(t, joined.Bytes())
			if len(got) != len(want) {
				t.Fatalf("joined file has %d rows, want %d", len(got), len(want))
			}
			for i := range want {
				if !hitEqual(got[i], want[i]) {
					t.Fatalf("row %d differs:\n got %+v\nwant %+v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestJoinErrors(t *testing.T) {
	good := write(t, gen.Options{Rows: 1000, Seed: 1})
	for _, c := range []struct {
		name  string
		parts [][]byte
	}{
		{"none", nil},
		{"short", [][]byte{good, []byte("PAR1")}},
		{"no magic", [][]byte{good, append([]byte("XXXX"), good[4:]...)}},
		{"bad footer", [][]byte{good, append(append([]byte{}, good[:len(good)-8]...), 0xff, 0xff, 0, 0, 'P', 'A', 'R', '1')}},
	} {
		var parts []io.ReaderAt
		var sizes []int64
		for _, p := range c.parts {
			parts = append(parts, bytes.NewReader(p))
			sizes = append(sizes, int64(len(p)))
		}
		if _, err := gen.Join(parts, sizes); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

// readHits reads every row of a generated file, checking its page index
// on the way (parquet-go reads it when it opens the file).
func readHits(t *testing.T, b []byte) []gen.Hit {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)), parquet.SkipPageIndex(false))
	if err != nil {
		t.Fatal(err)
	}
	for _, rg := range f.RowGroups() {
		for _, c := range rg.ColumnChunks() {
			oi, err := c.OffsetIndex()
			if err != nil {
				t.Fatal(err)
			}
			if oi.NumPages() == 0 {
				t.Fatal("a column chunk with no pages in its offset index")
			}
			if _, err := c.ColumnIndex(); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows, err := parquet.Read[gen.Hit](bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func hitEqual(a, b gen.Hit) bool {
	return bytes.Equal(a.Title, b.Title) && bytes.Equal(a.URL, b.URL) && bytes.Equal(a.Referer, b.Referer) &&
		bytes.Equal(a.MobilePhoneModel, b.MobilePhoneModel) && bytes.Equal(a.SearchPhrase, b.SearchPhrase) &&
		a.WatchID == b.WatchID && a.EventTime == b.EventTime && a.EventDate == b.EventDate && a.CounterID == b.CounterID &&
		a.ClientIP == b.ClientIP && a.RegionID == b.RegionID && a.UserID == b.UserID && a.IsRefresh == b.IsRefresh &&
		a.ResolutionWidth == b.ResolutionWidth && a.MobilePhone == b.MobilePhone && a.TraficSourceID == b.TraficSourceID &&
		a.SearchEngineID == b.SearchEngineID && a.AdvEngineID == b.AdvEngineID && a.WindowClientWidth == b.WindowClientWidth &&
		a.WindowClientHeight == b.WindowClientHeight && a.IsLink == b.IsLink && a.IsDownload == b.IsDownload &&
		a.DontCountHits == b.DontCountHits && a.RefererHash == b.RefererHash && a.URLHash == b.URLHash
}
