package agg

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"cachebook/engine/spill"
	"cachebook/engine/vec"
)

// directInput returns rows rows whose group is key(i), with the key sets
// a direct window serves (a string key alone, with and without NULLs,
// and with an integer key that has NULLs, in either order) and every
// aggregate with a fixed-width partial state.
func directInput(rows int, key func(i int) int) (sets map[string][]*vec.Vector, specs []Spec, args []*vec.Vector) {
	base := newPreAggInput(rows, key)
	sn := vec.NewVector(vec.String, rows)
	for i := range rows {
		if g := key(i); g%37 == 5 {
			sn.AppendNull()
		} else {
			sn.AppendStr([]byte(fmt.Sprintf("a longer key than sixteen bytes, %d", g)))
		}
	}
	sets = map[string][]*vec.Vector{
		"string":            {base.keys[1]},
		"string with NULLs": {sn},
		"int and string":    {base.keys[0], base.keys[1]},
		"string and int":    {sn, base.keys[0]},
	}
	for j, sp := range base.specs {
		if sp.In == vec.String && (sp.Kind == Min || sp.Kind == Max) {
			continue // a string partial state: not direct
		}
		specs = append(specs, sp)
		args = append(args, base.args[j])
	}
	return sets, specs, args
}

func typesOf(keys []*vec.Vector) []vec.Type {
	var ts []vec.Type
	for _, k := range keys {
		ts = append(ts, k.Type)
	}
	return ts
}

// TestPreAggDirectAgrees: a direct window (new groups written straight
// into the partitions, preagg_direct.go) gives naive's answer for every
// key set it serves and every aggregate with a fixed-width partial state,
// with windows that flush several times a morsel, the default and none, on
// one and several threads, with the generic and the tuned loops asked for.
func TestPreAggDirectAgrees(t *testing.T) {
	const rows = 12000
	orders := map[string]func(i int) int{
		"random": func(i int) int { return int(rand.New(rand.NewPCG(uint64(i), 5)).IntN(2500)) },
		"runs":   func(i int) int { return i / 9 % 700 },
	}
	for oname, key := range orders {
		sets, specs, args := directInput(rows, key)
		for sname, keys := range sets {
			keyTypes := typesOf(keys)
			if !usesDirect(keyTypes, specs) {
				t.Fatalf("%s: the test's keys and aggregates should take the direct window", sname)
			}
			in := preAggInput{keys: keys, args: args, specs: specs}
			ref, err := Aggregate(context.Background(), keyTypes, specs, Config{Strategy: Naive}, in.source(1000))
			if err != nil {
				t.Fatal(err)
			}
			want := rowsOf(ref)
			for _, window := range []int{64, 0, -1} {
				for _, threads := range []int{1, 2} {
					for _, generic := range []bool{false, true} {
						name := fmt.Sprintf("%s/%s/window=%d/threads=%d/generic=%v", oname, sname, window, threads, generic)
						cfg := Config{Strategy: Radix, Threads: threads, RadixBits: 3, PreAggGroups: window, RowsHint: rows, Generic: generic}
						out, err := Aggregate(context.Background(), keyTypes, specs, cfg, in.source(1000))
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						got := rowsOf(out)
						if len(got) != len(want) {
							t.Fatalf("%s: %d groups, want %d", name, len(got), len(want))
						}
						for i := range got {
							if got[i] != want[i] {
								t.Fatalf("%s: group %d\n got %s\nwant %s", name, i, got[i], want[i])
							}
						}
						st := out.PreAgg
						if window >= 0 && (st.Rows+st.Skipped != rows || st.Partial == 0) {
							t.Errorf("%s: %+v, want all %d rows folded or skipped", name, st, rows)
						}
					}
				}
			}
		}
	}
}

// TestUsesDirect: the direct window serves string keys whose partial
// states all have a fixed width, and nothing else.
func TestUsesDirect(t *testing.T) {
	cases := []struct {
		keys  []vec.Type
		specs []Spec
		want  bool
	}{
		{[]vec.Type{vec.String}, []Spec{{Kind: CountStar}}, true},
		{[]vec.Type{vec.Int64, vec.String}, []Spec{{Kind: Sum, In: vec.Float64}, {Kind: Max, In: vec.Int32}}, true},
		{[]vec.Type{vec.String}, []Spec{{Kind: Min, In: vec.String}}, false},
		{[]vec.Type{vec.Int64}, []Spec{{Kind: CountStar}}, false},
		{[]vec.Type{vec.Int64, vec.Float64}, []Spec{{Kind: Avg, In: vec.Int64}}, false},
	}
	for _, c := range cases {
		if got := usesDirect(c.keys, c.specs); got != c.want {
			t.Errorf("usesDirect(%v, %v) = %v, want %v", c.keys, c.specs, got, c.want)
		}
	}
}

// TestPreAggDirectSpills: under a limit far below its partitions, a
// direct window's partitions spill (the window's groups going out with
// their partial states) and every group still comes out once with naive's
// aggregates, on one and two workers.
func TestPreAggDirectSpills(t *testing.T) {
	const rows, morsel = 120000, 500                                         // morsels below the window: a spill may come mid-window
	sets, specs, args := directInput(rows, func(i int) int { return i / 3 }) // folding pays: no pause
	keys := sets["string and int"]
	keyTypes := typesOf(keys)
	in := preAggInput{keys: keys, args: args, specs: specs}
	ref, err := Aggregate(context.Background(), keyTypes, specs, Config{Strategy: Naive}, in.source(morsel))
	if err != nil {
		t.Fatal(err)
	}
	want := rowsOf(ref)
	for _, threads := range []int{1, 2} {
		dir := t.TempDir()
		var space *spill.Space
		cfg := Config{Strategy: Radix, RadixBits: 4, Threads: threads, Budget: &Budget{Limit: 16 << 20}, SpillAt: 4 << 20, RowsHint: rows,
			Spill: func() (*spill.Space, error) {
				var err error
				space, err = spill.Open(dir, 0)
				return space, err
			}}
		ag, err := New(keyTypes, specs, Generic, cfg)
		if err != nil {
			t.Fatal(err)
		}
		src := in.source(morsel)
		for w := range threads {
			for taken := 0; ; taken++ {
				m, ok, err := src(w)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				if err := ag.Sink(w, m); err != nil {
					t.Fatalf("threads %d: %v", threads, err)
				}
				if threads > 1 && w == 0 && taken == rows/morsel/2 {
					break // the rest to the next worker
				}
			}
			if err := ag.Flush(w); err != nil {
				t.Fatal(err)
			}
		}
		if err := ag.Finalize(context.Background()); err != nil {
			t.Fatal(err)
		}
		out := &Output{}
		for {
			p, ok, err := ag.Next(context.Background(), 0)
			if err != nil {
				t.Fatalf("threads %d: %v", threads, err)
			}
			if !ok {
				break
			}
			if out.Keys == nil {
				out.Keys, out.Aggs = p.Keys, p.Aggs
			} else {
				for c, k := range p.Keys {
					out.Keys[c].AppendVector(k)
				}
				for c, a := range p.Aggs {
					out.Aggs[c].AppendVector(a)
				}
			}
			out.Groups += p.Groups
			cfg.Budget.Grow(-p.Bytes)
		}
		r := ag.(*radix)
		st, pre := r.SpillStats(), r.Stats().PreAgg
		if r.pres[0].dw == nil {
			t.Fatalf("threads %d: pre-aggregation did not take the direct window", threads)
		}
		ag.Close()
		if err := space.Close(); err != nil {
			t.Fatal(err)
		}
		if st.Partitions == 0 || pre.Rows == 0 {
			t.Errorf("threads %d: spill %+v, pre-aggregation %+v: want both", threads, st, pre)
		}
		if got := rowsOf(out); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("threads %d: %d groups differ from naive's %d", threads, len(got), len(want))
		}
		if u := cfg.Budget.Used(); u != 0 {
			t.Errorf("threads %d: %d bytes still charged after Close", threads, u)
		}
	}
}

// TestDirectWindowPrefetch: a direct window finds the same group for the
// same key and a new one for each new key whether its probes are
// prefetched (a window past prefetchMinSlots whose rows mostly differ
// from the row before) or not (a small window, or rows that mostly repeat
// the row before), and it judges the batches' repeats.
func TestDirectWindowPrefetch(t *testing.T) {
	const batch, batches = 2048, 6
	tests := []struct {
		name      string
		hint      int // groups the window is sized for
		groups    int // distinct keys
		run       int // rows each key repeats for
		repeating bool
	}{
		{"small window, random", 1000, 3000, 1, false},
		{"large window, random", prefetchMinSlots / 2, 3000, 1, false},
		{"large window, runs", prefetchMinSlots / 2, 3000, 4, true},
		{"large window, many groups", prefetchMinSlots / 2, 50000, 1, false},
		{"grown window, many groups", 4 * prefetchMinSlots, 50000, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dw, err := newDirectWindow(tc.hint, nil)
			if err != nil {
				t.Fatal(err)
			}
			if big := len(dw.slots) >= prefetchMinSlots; big != (tc.hint > 1000) {
				t.Fatalf("%d slots for %d groups", len(dw.slots), tc.hint)
			}
			s := newScatterer(3, []vec.Type{vec.String}, []Spec{{Kind: CountStar}}, 0, nil)
			h := NewHasher()
			r := rand.New(rand.NewPCG(7, uint64(tc.groups)))
			gidOf := map[string]uint32{}
			key := 0
			for b := range batches {
				keys := vec.NewVector(vec.String, batch)
				for i := range batch {
					if i%tc.run == 0 {
						key = r.IntN(tc.groups)
					}
					keys.AppendStr([]byte(fmt.Sprintf("a key longer than sixteen bytes %d", key)))
				}
				hs := make([]uint64, batch)
				h.Hash([]*vec.Vector{keys}, batch, hs)
				if err := s.reserveHashed([]*vec.Vector{keys}, hs); err != nil {
					t.Fatal(err)
				}
				gids, err := dw.group(s, []*vec.Vector{keys}, hs, batch)
				if err != nil {
					t.Fatal(err)
				}
				for i, g := range gids {
					k := string(keys.Str(i))
					want, ok := gidOf[k]
					if !ok {
						want = uint32(len(gidOf))
						gidOf[k] = want
					}
					if g != want {
						t.Fatalf("batch %d row %d (%s): group %d, want %d", b, i, k, g, want)
					}
				}
				if dw.repeating != tc.repeating {
					t.Fatalf("batch %d: repeating %v, want %v", b, dw.repeating, tc.repeating)
				}
			}
		})
	}
}

// TestDirectWindowKeyRefs: a direct window compares a single string key
// through the keyRef in its slot, and through its chunk where the key is
// too long to pack; NULL, the empty string and keys sharing a long prefix
// stay apart, also after the window grows and in batches with and without
// NULLs. All rows get one hash, so that every probe compares keys.
func TestDirectWindowKeyRefs(t *testing.T) {
	long := strings.Repeat("u", refLong+10)
	tests := []struct {
		name string
		keys []string // "<null>" is NULL
	}{
		{"empty and NULL", []string{"<null>", "", "", "a", "<null>", "a", ""}},
		{"long keys", []string{long + "1", long + "2", long + "1", long, long + "2", "x"}},
		{"length differs", []string{"ab", "abc", "a", "abc", "ab", "abcd"}},
		{"growth", func() []string {
			var ks []string
			for i := range 3000 {
				ks = append(ks, fmt.Sprintf("k%d", i%2000))
			}
			return ks
		}()},
	}
	for _, tc := range tests {
		for _, nulls := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nulls=%v", tc.name, nulls), func(t *testing.T) {
				dw, err := newDirectWindow(16, nil)
				if err != nil {
					t.Fatal(err)
				}
				s := newScatterer(2, []vec.Type{vec.String}, []Spec{{Kind: CountStar}}, 0, nil)
				gidOf := map[string]uint32{}
				// Two batches: the first with NULLs where nulls says so,
				// the second the same keys without NULLs (NULL as "n").
				for b := range 2 {
					keys := vec.NewVector(vec.String, len(tc.keys))
					withNulls := nulls && b == 0
					var names []string
					for _, k := range tc.keys {
						switch {
						case k == "<null>" && withNulls:
							keys.AppendNull()
						case k == "<null>":
							k = "n"
							fallthrough
						default:
							keys.AppendStr([]byte(k))
						}
						names = append(names, k)
					}
					hs := make([]uint64, keys.Len)
					for i := range hs {
						hs[i] = 0x9e3779b97f4a7c15
					}
					if err := s.reserveHashed([]*vec.Vector{keys}, hs); err != nil {
						t.Fatal(err)
					}
					gids, err := dw.group(s, []*vec.Vector{keys}, hs, keys.Len)
					if err != nil {
						t.Fatal(err)
					}
					for i, g := range gids {
						want, ok := gidOf[names[i]]
						if !ok {
							want = uint32(len(gidOf))
							gidOf[names[i]] = want
						}
						if g != want {
							t.Fatalf("batch %d row %d (%.20q): group %d, want %d", b, i, names[i], g, want)
						}
					}
				}
				if dw.n != len(gidOf) {
					t.Errorf("%d groups, want %d", dw.n, len(gidOf))
				}
			})
		}
	}
}
