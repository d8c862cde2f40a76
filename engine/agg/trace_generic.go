package agg

import (
	"context"
	"fmt"

	"cachebook/engine/vec"
)

// Tracing the generic naive path (naive with Config.Generic, or any shape
// the tuned count path does not take): one hash table of 16-byte slots
// (Table, single integer key compared inline), a per-morsel hash and group
// id array, the key column of the groups and one flat state array per
// aggregate word (State), grown as Resize grows them.

// GenericTraceable reports whether TraceGeneric models an aggregation: one
// integer key and aggregates other than count(DISTINCT) over non-string
// input.
func GenericTraceable(keyTypes []vec.Type, specs []Spec) bool {
	if len(keyTypes) != 1 {
		return false
	}
	switch keyTypes[0] {
	case vec.String, vec.Float64, vec.Float32, vec.Null:
		return false
	}
	for _, s := range specs {
		if s.Kind == CountDistinct || (s.HasInput() && s.In == vec.String) {
			return false
		}
	}
	return true
}

// stateWords returns how many flat arrays of one word per group a state
// keeps (State.Resize): the count, plus two for an integer sum (128-bit),
// one for a float sum or a min/max.
func stateWords(s Spec) int {
	switch s.Kind {
	case Sum, Avg:
		if s.In.IsFloat() {
			return 2
		}
		return 3
	case Min, Max:
		return 2
	}
	return 1
}

// tracedGeneric is a real Table with its accesses, and its states',
// reported.
type tracedGeneric struct {
	t            *Table
	tr           *traceBuf
	w            int // the worker making the accesses
	buf          int // slots
	keys         tracedSlice
	states       [][]tracedSlice // per spec, per word
	hashes, gids int
	hcap         int
}

// tracedSlice is a []int64 grown by append (keys) or by extend (states).
type tracedSlice struct {
	buf      int
	len, cap int64
}

func (s *tracedSlice) appendOne(tr *traceBuf, w int) {
	if s.len == s.cap {
		c := growCap(s.cap, s.len+1, 8)
		nb := tr.Alloc(w, c*8, false, false)
		if s.len > 0 {
			tr.Range(w, s.buf, 0, s.len*8, false)
			tr.Range(w, nb, 0, s.len*8, true)
		}
		s.buf, s.cap = nb, c
	}
	tr.Access(w, s.buf, s.len*8, 8, true)
	s.len++
}

// extendTo is extend(a, n, c): copy into a new array of capacity c when
// it does not fit, then zero the new entries.
func (s *tracedSlice) extendTo(tr *traceBuf, w int, n, c int64) {
	if c > s.cap {
		nb := tr.Alloc(w, c*8, false, true)
		if s.len > 0 {
			tr.Range(w, s.buf, 0, s.len*8, false)
			tr.Range(w, nb, 0, s.len*8, true)
		}
		s.buf, s.cap = nb, c
	}
	if n > s.len {
		tr.Range(w, s.buf, s.len*8, (n-s.len)*8, true)
		s.len = n
	}
}

// add is groupSet.addHashing's hashing and Table.Group for one morsel
// (Hasher.Hash reads the keys and writes the hashes; the probe reads the
// key and its hash and writes the group id), reported.
func (g *tracedGeneric) add(in TraceMorsel) error {
	tr := g.tr
	n := len(in.Keys)
	g.reserve(n)
	for i := range in.Keys {
		tr.Access(g.w, in.Buf, in.Off+int64(i)*8, 8, false)
		tr.Access(g.w, g.hashes, int64(i)*8, 8, true)
	}
	return g.group(in.Keys, in.Buf, in.Off, g.hashes, 0)
}

// reserve makes the hash and group-id arrays hold n rows.
func (g *tracedGeneric) reserve(n int) {
	if g.hcap < n {
		g.hcap = n
		g.hashes = g.tr.Alloc(g.w, int64(n)*8, false, true)
		g.gids = g.tr.Alloc(g.w, int64(n)*4, false, true)
	}
}

// group is Table.Group (groupInt) for keys read from keyBuf at keyOff with
// their hashes read from hashBuf at hashOff, reported.
func (g *tracedGeneric) group(keys []int64, keyBuf int, keyOff int64, hashBuf int, hashOff int64) error {
	tr, t := g.tr, g.t
	g.reserve(len(keys))
	for i, key := range keys {
		tr.Access(g.w, keyBuf, keyOff+int64(i)*8, 8, false)
		tr.Access(g.w, hashBuf, hashOff+int64(i)*8, 8, false)
		h := Mix64(uint64(key))
		j := h & t.mask
		for {
			off := int64(j) * 16
			tr.Access(g.w, g.buf, off+8, 4, false)
			s := &t.slots[j]
			if s.gid == 0 {
				if t.n >= t.growAt {
					if err := g.grow(); err != nil {
						return err
					}
					j = h & t.mask
					continue
				}
				s.word = uint64(key)
				t.n++
				s.gid = uint32(t.n)
				tr.Access(g.w, g.buf, off, 16, true)
				t.keys[0].AppendInt(key)
				g.keys.appendOne(tr, g.w)
				break
			}
			tr.Access(g.w, g.buf, off, 8, false)
			if s.word == uint64(key) {
				break
			}
			j = (j + 1) & t.mask
		}
		tr.Access(g.w, g.gids, int64(i)*4, 4, true)
	}
	return nil
}

// updateStates reports State.Update's accesses to the group states, for
// the group ids of a morsel's rows (in row order).
func (g *tracedGeneric) updateStates(specs []Spec, gidsOf []uint32, in TraceMorsel) {
	tr := g.tr
	for si, sp := range specs {
		words := g.states[si]
		for i, gid := range gidsOf {
			tr.Access(g.w, g.gids, int64(i)*4, 4, false)
			if sp.HasInput() && si < len(in.ArgBufs) && in.ArgBufs[si] >= 0 {
				tr.Access(g.w, in.ArgBufs[si], in.Off+int64(i)*8, 8, false)
			}
			for w := range words {
				tr.Access(g.w, words[w].buf, int64(gid)*8, 8, false)
				tr.Access(g.w, words[w].buf, int64(gid)*8, 8, true)
			}
		}
	}
}

// grow is Table.grow, reported.
func (g *tracedGeneric) grow() error { return g.growBy(Mix64) }

// growBy doubles the table and reinserts every slot, reporting the reads
// of the old slots and the probes and writes into the new ones; hash gives
// a slot's hash from its stored word (the key, or the full hash itself).
func (g *tracedGeneric) growBy(hash func(uint64) uint64) error {
	t := g.t
	old, oldBuf := t.slots, g.buf
	if err := t.alloc(len(old) * 2); err != nil {
		return err
	}
	g.buf = g.tr.Alloc(g.w, int64(len(t.slots))*16, false, true)
	for i, s := range old {
		g.tr.Access(g.w, oldBuf, int64(i)*16, 16, false)
		if s.gid == 0 {
			continue
		}
		j := hash(s.word) & t.mask
		for {
			g.tr.Access(g.w, g.buf, int64(j)*16+8, 4, false)
			if t.slots[j].gid == 0 {
				break
			}
			j = (j + 1) & t.mask
		}
		t.slots[j] = s
		g.tr.Access(g.w, g.buf, int64(j)*16, 16, true)
	}
	return nil
}

// TraceGeneric runs the generic naive GROUP BY (one integer key; see
// GenericTraceable) over morsels, reporting its accesses to tracer, and
// returns the number of groups. Each morsel's ArgBufs name the buffers of
// the aggregates' input columns (-1 for count(*)), read at the keys'
// offsets.
// A budget, if not nil, bounds the traced table as a query's is bounded.
func TraceGeneric(ctx context.Context, keyType vec.Type, specs []Spec, morsels []TraceMorsel, tracer Tracer, budget *Budget) (int, error) {
	tr := newTraceBuf(tracer)
	defer tr.flush()
	if !GenericTraceable([]vec.Type{keyType}, specs) {
		return 0, fmt.Errorf("trace: this aggregation's shape is not traced")
	}
	t, err := NewTable([]vec.Type{keyType}, 0, budget)
	if err != nil {
		return 0, err
	}
	tr.Phase(0, "aggregate")
	g := &tracedGeneric{t: t, tr: tr, buf: tr.Alloc(0, int64(len(t.slots))*16, false, true)}
	for _, sp := range specs {
		g.states = append(g.states, make([]tracedSlice, stateWords(sp)))
	}
	gids := make([]uint32, 0)
	for mi, m := range morsels {
		if mi%64 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		if err := g.add(m); err != nil {
			return 0, err
		}
		// The group ids of the morsel, from the table just built.
		gids = gids[:0]
		for _, k := range m.Keys {
			gids = append(gids, g.gidOf(k))
		}
		if err := g.resizeStates(specs); err != nil {
			return 0, err
		}
		g.updateStates(specs, gids, m)
	}
	// Finalize: each state's count (and value) array is copied out.
	for si := range specs {
		for _, w := range g.states[si] {
			out := tr.Alloc(0, w.len*8, false, true)
			tr.Range(0, w.buf, 0, w.len*8, false)
			tr.Range(0, out, 0, w.len*8, true)
		}
	}
	return t.n, nil
}

// gidOf returns the group id of key (the table holds it).
func (g *tracedGeneric) gidOf(k int64) uint32 {
	t := g.t
	j := Mix64(uint64(k)) & t.mask
	for t.slots[j].word != uint64(k) || t.slots[j].gid == 0 {
		j = (j + 1) & t.mask
	}
	return t.slots[j].gid - 1
}

func (g *tracedGeneric) resizeStates(specs []Spec) error {
	ng := int64(g.t.n)
	for si := range specs {
		words := g.states[si]
		if ng <= words[0].len {
			continue
		}
		c := words[0].cap
		if c < ng {
			c = max(2*c, ng)
		}
		for w := range words {
			words[w].extendTo(g.tr, g.w, ng, c)
		}
	}
	return nil
}
