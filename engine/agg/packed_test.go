package agg

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"cachebook/engine/spill"
	"cachebook/engine/vec"
)

func TestPackLayout(t *testing.T) {
	tests := []struct {
		types []vec.Type
		words int
		nulls bool
		bits  int
	}{
		{[]vec.Type{vec.Int64}, 0, false, 0}, // one key: the integer loop
		{[]vec.Type{vec.Int16, vec.Int16}, 1, true, 32},
		{[]vec.Type{vec.Int16, vec.Int32}, 1, true, 48},
		{[]vec.Type{vec.Int32, vec.Int32}, 1, false, 64},
		{[]vec.Type{vec.Bool, vec.Int32, vec.Int16}, 1, true, 49},
		{[]vec.Type{vec.Int32, vec.Int64}, 2, true, 96},
		{[]vec.Type{vec.Int64, vec.Date}, 2, true, 96},
		{[]vec.Type{vec.Int64, vec.Int32}, 2, true, 96},
		{[]vec.Type{vec.Timestamp, vec.UInt64}, 2, false, 128},
		{[]vec.Type{vec.Int32, vec.Int32, vec.Int32}, 2, true, 96},
		{[]vec.Type{vec.Int32, vec.Int64, vec.Int32}, 2, false, 128},
		{[]vec.Type{vec.Int64, vec.Int64, vec.Bool}, 0, false, 0},
		{[]vec.Type{vec.Int32, vec.Int32, vec.Int32, vec.Int32, vec.Int16}, 0, false, 0},
		{[]vec.Type{vec.Int64, vec.String}, 0, false, 0},
		{[]vec.Type{vec.Int64, vec.Float64}, 0, false, 0},
		{[]vec.Type{vec.Int16, vec.Null}, 0, false, 0},
	}
	for _, tt := range tests {
		l := packLayoutOf(tt.types)
		if l.words != tt.words || l.nulls != tt.nulls || (l.words > 0 && l.bits != tt.bits) {
			t.Errorf("%v: words %d nulls %v bits %d, want %d %v %d", tt.types, l.words, l.nulls, l.bits, tt.words, tt.nulls, tt.bits)
			continue
		}
		// No two fields (values and NULL bits) share a bit, and none
		// passes the words used.
		var used [2]uint64
		claim := func(word int, m uint64, what string) {
			if word >= l.words || used[word]&m != 0 {
				t.Errorf("%v: %s overlaps or lies outside the words", tt.types, what)
			}
			used[word] |= m
		}
		for c := 0; c < l.cols; c++ {
			pc := l.col[c]
			claim(int(pc.word), pc.mask()<<pc.shift, fmt.Sprintf("column %d", c))
			if l.nulls {
				claim(int(pc.nword), 1<<pc.null, fmt.Sprintf("NULL bit %d", c))
			}
		}
	}
}

// keyRow is one row of GROUP BY keys; nil is NULL.
type keyRow []*int64

func iv(v int64) *int64 { return &v }

func (r keyRow) String() string {
	var b strings.Builder
	for _, v := range r {
		if v == nil {
			b.WriteString("NULL|")
		} else {
			fmt.Fprintf(&b, "%d|", *v)
		}
	}
	return b.String()
}

// keyVectors returns the rows as key vectors of types, each row repeated
// copies times, shuffled.
func keyVectors(types []vec.Type, rows []keyRow, copies int, rng *rand.Rand) []*vec.Vector {
	var all []keyRow
	for range copies {
		all = append(all, rows...)
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	keys := make([]*vec.Vector, len(types))
	for c, ty := range types {
		keys[c] = vec.NewVector(ty, len(all))
		for _, r := range all {
			if r[c] == nil {
				keys[c].AppendNull()
			} else {
				keys[c].AppendInt(*r[c])
			}
		}
	}
	return keys
}

// packedCases are key shapes with rows that a faulty packing merges:
// neighbours across a field boundary ((1, 256) and (257, 0) with a shift
// of 8), sign bits spilling into the next field, extremes, and NULLs next
// to zeros in every column.
func packedCases() []struct {
	name  string
	types []vec.Type
	rows  []keyRow
	words int  // the layout's
	stays bool // the table keeps its packed loop
} {
	ext := func(lo, hi int64) []keyRow {
		vals := []int64{lo, lo + 1, -256, -1, 0, 1, 255, 256, 257, hi - 1, hi}
		var rows []keyRow
		for _, a := range vals {
			for _, b := range vals {
				rows = append(rows, keyRow{iv(a), iv(b)})
			}
			rows = append(rows, keyRow{iv(a), nil}, keyRow{nil, iv(a)})
		}
		return append(rows, keyRow{nil, nil})
	}
	type tc = struct {
		name  string
		types []vec.Type
		rows  []keyRow
		words int
		stays bool
	}
	cases := []tc{
		{"int16 int16", []vec.Type{vec.Int16, vec.Int16}, ext(math.MinInt16, math.MaxInt16), 1, true},
		{"int16 int32", []vec.Type{vec.Int16, vec.Int32}, ext(math.MinInt16, math.MaxInt16), 1, true},
		{"int32 int64", []vec.Type{vec.Int32, vec.Int64}, ext(math.MinInt32, math.MaxInt32), 2, true},
		{"int64 date", []vec.Type{vec.Int64, vec.Date}, ext(math.MinInt32, math.MaxInt32), 2, true},
		// No room for NULL bits: a NULL turns the table generic.
		{"int32 int32", []vec.Type{vec.Int32, vec.Int32}, ext(math.MinInt32, math.MaxInt32), 1, false},
		{"int64 int64", []vec.Type{vec.Int64, vec.Int64}, ext(math.MinInt64, math.MaxInt64), 2, false},
		{"uint64 timestamp", []vec.Type{vec.UInt64, vec.Timestamp}, ext(math.MinInt64, math.MaxInt64), 2, false},
	}
	// Without NULLs, the layouts without NULL bits keep the packed loop.
	for _, c := range cases[4:] {
		c.name += " not null"
		c.rows = slices.DeleteFunc(slices.Clone(c.rows), func(r keyRow) bool { return r[0] == nil || r[1] == nil })
		c.stays = true
		cases = append(cases, c)
	}
	var bools []keyRow
	for _, a := range []*int64{nil, iv(0), iv(1)} {
		for _, b := range []*int64{nil, iv(0), iv(1)} {
			for _, c := range []*int64{nil, iv(-32768), iv(0), iv(1), iv(2), iv(32767)} {
				bools = append(bools, keyRow{a, b, c})
			}
		}
	}
	cases = append(cases, tc{"bool bool int16", []vec.Type{vec.Bool, vec.Bool, vec.Int16}, bools, 1, true})
	// Values beyond their type's width (a DATE past INTEGER) pack to the
	// same bits as others: the table must turn generic, not merge them.
	wide := []keyRow{{iv(5), iv(1)}, {iv(5 + 1<<32), iv(1)}, {iv(-1), iv(1)}, {iv(1<<32 - 1), iv(1)}, {iv(1 << 16), iv(1 << 16)}, {iv(0), iv(1<<32 + 1<<16)}}
	cases = append(cases, tc{"date int32 out of range", []vec.Type{vec.Date, vec.Int32}, wide, 1, false})
	cases = append(cases, tc{"int16 int16 out of range", []vec.Type{vec.Int16, vec.Int16}, wide, 1, false})
	return cases
}

// TestPackedTable groups the rows of every case straight in a Table, a
// batch at a time: each distinct row is one group, with its own key, and
// the table keeps the packed loop exactly where packing is injective.
func TestPackedTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := NewHasher()
	for _, tc := range packedCases() {
		t.Run(tc.name, func(t *testing.T) {
			if l := packLayoutOf(tc.types); l.words != tc.words {
				t.Fatalf("layout of %d words, want %d", l.words, tc.words)
			}
			keys := keyVectors(tc.types, tc.rows, 3, rng)
			n := keys[0].Len
			tab, err := NewTable(tc.types, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			gids := make([]uint32, n)
			hashes := make([]uint64, n)
			const batch = 100
			for lo := 0; lo < n; lo += batch {
				hi := min(lo+batch, n)
				var sub []*vec.Vector
				for _, k := range keys {
					sub = append(sub, k.Slice(lo, hi))
				}
				h.Hash(sub, hi-lo, hashes)
				if err := tab.Group(sub, hashes, hi-lo, gids[lo:hi]); err != nil {
					t.Fatal(err)
				}
			}
			if got := tab.pack.words > 0; got != tc.stays {
				t.Errorf("packed loop kept: %v, want %v", got, tc.stays)
			}
			if tab.Len() != len(tc.rows) {
				t.Errorf("%d groups, want %d", tab.Len(), len(tc.rows))
			}
			// Every row's group holds that row's key.
			for i := range n {
				want := keyRow(nil)
				got := keyRow(nil)
				for c, k := range keys {
					want = append(want, valueOf(k, i))
					got = append(got, valueOf(tab.Keys()[c], int(gids[i])))
				}
				if want.String() != got.String() {
					t.Fatalf("row %d (%s) went to group %d of key %s", i, want, gids[i], got)
				}
			}
		})
	}
}

func valueOf(v *vec.Vector, i int) *int64 {
	if v.IsNull(i) {
		return nil
	}
	return iv(v.I64[i])
}

// TestPackedStrategies runs every case through each strategy (naive,
// radix on one and two threads with pre-aggregation, and radix spilling
// to disk) and checks each group's count(*).
func TestPackedStrategies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const copies = 5
	for _, tc := range packedCases() {
		keys := keyVectors(tc.types, tc.rows, copies, rng)
		want := map[string]int64{}
		for _, r := range tc.rows {
			want[r.String()] = copies
		}
		for _, cfg := range []Config{
			{Strategy: Naive},
			{Strategy: Radix, RadixBits: 3, Threads: 1, PreAggGroups: 16},
			{Strategy: Radix, RadixBits: 4, Threads: 2},
			{Strategy: Radix, RadixBits: 4, Threads: 2, PlainKeys: true},
		} {
			out, err := Aggregate(context.Background(), tc.types, []Spec{{Kind: CountStar}}, cfg, dealt(keys, []*vec.Vector{nil}, 64, cfg.threads()))
			if err != nil {
				t.Fatalf("%s %+v: %v", tc.name, cfg, err)
			}
			checkCounts(t, fmt.Sprintf("%s strategy %d threads %d", tc.name, cfg.Strategy, cfg.Threads), out.Keys, out.Aggs[0], out.Groups, want)
		}
	}
}

func checkCounts(t *testing.T, name string, keys []*vec.Vector, counts *vec.Vector, groups int, want map[string]int64) {
	t.Helper()
	got := map[string]int64{}
	for g := range groups {
		var r keyRow
		for _, k := range keys {
			r = append(r, valueOf(k, g))
		}
		if _, dup := got[r.String()]; dup {
			t.Errorf("%s: group %s twice", name, r)
		}
		got[r.String()] = counts.I64[g]
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d groups, want %d", name, len(got), len(want))
	}
	for k, c := range want {
		if got[k] != c {
			t.Errorf("%s: group %s counted %d, want %d", name, k, got[k], c)
		}
	}
}

// TestPackedSpill: a radix aggregation of packed keys (one and two words)
// far beyond its budget spills its partitions and splits them again on
// further hash bits; every group still comes out once with its count.
func TestPackedSpill(t *testing.T) {
	const groups, morsel = 1 << 17, 1 << 12
	for _, types := range [][]vec.Type{{vec.Int16, vec.Int32}, {vec.Int32, vec.Int64}} {
		for _, threads := range []int{1, 2} {
			name := fmt.Sprintf("%v threads %d", types, threads)
			var space *spill.Space
			cfg := Config{Strategy: Radix, RadixBits: 0, Threads: threads, Budget: &Budget{Limit: 1 << 20}, SpillAt: 3 << 17, PreAggGroups: -1,
				Spill: func() (*spill.Space, error) {
					var err error
					space, err = spill.Open(t.TempDir(), 0)
					return space, err
				}}
			ag, err := New(types, []Spec{{Kind: CountStar}}, Generic, cfg)
			if err != nil {
				t.Fatal(err)
			}
			// Group i is (i / 1000 - 60, i % 1000 * 1e6 - 5e8), twice.
			for w := range threads {
				for lo := w * morsel; lo < 2*groups; lo += threads * morsel {
					a, b := vec.NewVector(types[0], morsel), vec.NewVector(types[1], morsel)
					for i := lo; i < lo+morsel; i++ {
						g := int64(i % groups)
						a.AppendInt(g/1000 - 60)
						b.AppendInt(g%1000*1e6 - 5e8)
					}
					if err := ag.Sink(w, Input{Keys: []*vec.Vector{a, b}, Args: []*vec.Vector{nil}, N: morsel}); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
				}
				if err := ag.Flush(w); err != nil {
					t.Fatal(err)
				}
			}
			if err := ag.Finalize(context.Background()); err != nil {
				t.Fatal(err)
			}
			seen := make([]bool, groups)
			n := 0
			for {
				p, ok, err := ag.Next(context.Background(), 0)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !ok {
					break
				}
				for i := range p.Groups {
					a, b, c := p.Keys[0].I64[i], p.Keys[1].I64[i], p.Aggs[0].I64[i]
					g := (a+60)*1000 + (b+5e8)/1e6
					if (b+5e8)%1e6 != 0 || g < 0 || g >= groups || seen[g] || c != 2 {
						t.Fatalf("%s: group (%d, %d) (count %d) out of place", name, a, b, c)
					}
					seen[g] = true
				}
				n += p.Groups
				cfg.Budget.Grow(-p.Bytes)
			}
			st := ag.(*radix).SpillStats()
			ag.Close()
			if n != groups {
				t.Errorf("%s: %d groups, want %d", name, n, groups)
			}
			if st.Depth < 1 {
				t.Errorf("%s: did not spill (%+v)", name, st)
			}
			if err := space.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// BenchmarkGroupKeys hashes and groups two integer keys a batch at a time
// in a table of 64Ki groups (within the L2 cache, like a radix
// partition's), packed and generic.
func BenchmarkGroupKeys(b *testing.B) {
	const rows, groups, batch = 1 << 20, 1 << 16, 2048
	for _, types := range [][]vec.Type{{vec.Int16, vec.Int16}, {vec.Int16, vec.Int32}, {vec.Int32, vec.Int64}, {vec.Int64, vec.Date}} {
		rng := rand.New(rand.NewPCG(5, 6))
		a, c := vec.NewVector(types[0], rows), vec.NewVector(types[1], rows)
		for range rows {
			g := rng.Int64N(groups)
			a.AppendInt(g % 256)
			c.AppendInt(g / 256 * 7)
		}
		for _, packed := range []bool{false, true} {
			b.Run(fmt.Sprintf("%v packed=%v", types, packed), func(b *testing.B) {
				h := NewHasher()
				hashes, gids := make([]uint64, batch), make([]uint32, batch)
				for b.Loop() {
					tab, err := NewTable(types, groups, nil)
					if err != nil {
						b.Fatal(err)
					}
					if !packed {
						tab.packInit, tab.pack = packLayout{}, packLayout{}
					}
					for lo := 0; lo < rows; lo += batch {
						keys := []*vec.Vector{a.Slice(lo, lo+batch), c.Slice(lo, lo+batch)}
						if packed {
							h.Hash(keys, batch, hashes)
						} else {
							h.hashColumns(keys, batch, hashes)
						}
						if err := tab.Group(keys, hashes, batch, gids); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
			})
		}
	}
}

// TestPackedHashValidity: a row hashes the same whether its vectors carry
// a validity slice or not, and a NULL hashes apart from a zero.
func TestPackedHashValidity(t *testing.T) {
	h := NewHasher()
	for _, types := range [][]vec.Type{{vec.Int16, vec.Int32}, {vec.Int32, vec.Int64}} {
		const n = 600 // more than one chunk of the two-word hash
		plain := []*vec.Vector{vec.NewVector(types[0], n), vec.NewVector(types[1], n)}
		valid := []*vec.Vector{vec.NewVector(types[0], n), vec.NewVector(types[1], n)}
		for i := range n {
			for c := range 2 {
				plain[c].AppendInt(int64(i*(c+1) - 300))
				valid[c].AppendInt(int64(i*(c+1) - 300))
			}
		}
		valid[1].Valid = make([]bool, n)
		for i := range valid[1].Valid {
			valid[1].Valid[i] = true
		}
		a, b := make([]uint64, n), make([]uint64, n)
		h.Hash(plain, n, a)
		h.Hash(valid, n, b)
		if !slices.Equal(a, b) {
			t.Errorf("%v: hashes differ with an all-valid validity slice", types)
		}
		valid[1].Valid[0] = false
		valid[1].I64[0] = 0
		plain[1].I64[0] = 0
		h.Hash(plain, 1, a)
		h.Hash(valid, 1, b)
		if a[0] == b[0] {
			t.Errorf("%v: a NULL hashes as a zero", types)
		}
	}
}

// TestPlainKeys: Config.PlainKeys (SET generic_agg) runs the generic loop
// with per-column hashes where the keys could be packed.
func TestPlainKeys(t *testing.T) {
	types := []vec.Type{vec.Int16, vec.Int32}
	gs, err := newGroupSet(types, []Spec{{Kind: CountStar}}, 0, Config{PlainKeys: true})
	if err != nil {
		t.Fatal(err)
	}
	if gs.table.pack.words != 0 {
		t.Errorf("table packs its keys despite PlainKeys")
	}
	keys := []*vec.Vector{vec.NewVector(types[0], 3), vec.NewVector(types[1], 3)}
	for i := range 3 {
		keys[0].AppendInt(int64(i))
		keys[1].AppendInt(int64(-i))
	}
	h := NewHasher()
	a, b := make([]uint64, 3), make([]uint64, 3)
	h.plainKeys().Hash(keys, 3, a)
	h.hashColumns(keys, 3, b)
	if !slices.Equal(a, b) {
		t.Errorf("plain hashes %x, want the per-column %x", a, b)
	}
	h.Hash(keys, 3, b)
	if slices.Equal(a, b) {
		t.Errorf("packed and plain hashes agree: the test shows nothing")
	}
}
