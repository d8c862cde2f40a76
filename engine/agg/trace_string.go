package agg

import (
	"context"
	"fmt"

	"cachebook/engine/vec"
)

// Tracing the generic naive path with one string key: Hasher.Hash reads
// each row's offsets and bytes and writes its hash; Table.Group probes
// 16-byte slots holding the full hash and, on a hash match, compares the
// row's bytes with the group's stored key (its offsets and bytes in the
// table's key vector); a new group appends its bytes and offset to that
// vector (grown as append grows a slice). States are as for integer keys.

// StringTraceable reports whether TraceGenericString models an
// aggregation: one string key and aggregates other than count(DISTINCT)
// over non-string input.
func StringTraceable(keyTypes []vec.Type, specs []Spec) bool {
	if len(keyTypes) != 1 || keyTypes[0] != vec.String {
		return false
	}
	for _, s := range specs {
		if s.Kind == CountDistinct || (s.HasInput() && s.In == vec.String) {
			return false
		}
	}
	return true
}

// TraceStringMorsel is one morsel of a string key column, as a
// vec.Vector holds it: Keys.Offsets (4 bytes a row, one more than rows)
// in buffer OffBuf at OffOff, Keys.Bytes in BytesBuf at BytesOff (where
// the morsel's first byte, Keys.Offsets[0], lies). ArgBufs are the
// aggregates' input columns (-1 for count(*)), 8 bytes a row from ArgOff.
type TraceStringMorsel struct {
	Keys     *vec.Vector
	OffBuf   int
	OffOff   int64
	BytesBuf int
	BytesOff int64
	ArgBufs  []int
	ArgOff   int64
}

// tracedBytes is a slice of elem-byte elements grown by append.
type tracedBytes struct {
	buf      int
	len, cap int64 // elements
	elem     int64
}

func (s *tracedBytes) appendN(tr *traceBuf, w int, n int64) {
	if s.len+n > s.cap {
		c := growCap(s.cap, s.len+n, s.elem)
		nb := tr.Alloc(w, c*s.elem, false, false)
		if s.len > 0 {
			tr.Range(w, s.buf, 0, s.len*s.elem, false)
			tr.Range(w, nb, 0, s.len*s.elem, true)
		}
		s.buf, s.cap = nb, c
	}
	if n > 0 {
		tr.Range(w, s.buf, s.len*s.elem, n*s.elem, true)
	}
	s.len += n
}

// TraceGenericString runs the generic naive GROUP BY over one string key
// (see StringTraceable), reporting its accesses to tracer, and returns the
// number of groups. NULL keys are grouped as the real table groups them.
// A budget, if not nil, bounds the traced table.
func TraceGenericString(ctx context.Context, specs []Spec, morsels []TraceStringMorsel, tracer Tracer, budget *Budget) (int, error) {
	tr := newTraceBuf(tracer)
	defer tr.flush()
	if !StringTraceable([]vec.Type{vec.String}, specs) {
		return 0, fmt.Errorf("trace: this aggregation's shape is not traced")
	}
	t, err := NewTable([]vec.Type{vec.String}, 0, budget)
	if err != nil {
		return 0, err
	}
	tr.Phase(0, "aggregate")
	g := &tracedGeneric{t: t, tr: tr, buf: tr.Alloc(0, int64(len(t.slots))*16, false, true)}
	for _, sp := range specs {
		g.states = append(g.states, make([]tracedSlice, stateWords(sp)))
	}
	keyBytes := tracedBytes{elem: 1}
	keyOffs := tracedBytes{elem: 4, buf: tr.Alloc(0, 4, false, true), len: 1, cap: 1} // NewVector's Offsets: [0]
	hasher := NewHasher()
	var hashes []uint64
	var gids []uint32
	for mi, m := range morsels {
		if mi%64 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		k := m.Keys
		n := k.Len
		g.reserve(n)
		hashes = append(hashes[:0], make([]uint64, n)...)
		gids = append(gids[:0], make([]uint32, n)...)
		// Hasher.Hash: offsets, bytes, hash out.
		base := int64(0)
		if n > 0 {
			base = int64(k.Offsets[0])
		}
		for i := 0; i < n; i++ {
			tr.Access(0, m.OffBuf, m.OffOff+int64(i)*4, 8, false)
			if l := int64(k.Offsets[i+1] - k.Offsets[i]); l > 0 {
				tr.Range(0, m.BytesBuf, m.BytesOff+int64(k.Offsets[i])-base, l, false)
			}
			tr.Access(0, g.hashes, int64(i)*8, 8, true)
		}
		hasher.Hash([]*vec.Vector{k}, n, hashes)
		// Table.groupGeneric.
		for i := 0; i < n; i++ {
			tr.Access(0, g.hashes, int64(i)*8, 8, false)
			h := hashes[i]
			j := h & t.mask
			for {
				off := int64(j) * 16
				tr.Access(0, g.buf, off+8, 4, false)
				s := &t.slots[j]
				if s.gid == 0 {
					if t.n >= t.growAt {
						if err := g.growHashed(); err != nil {
							return 0, err
						}
						j = h & t.mask
						continue
					}
					s.word = h
					t.keys[0].AppendFrom(k, i)
					t.n++
					s.gid = uint32(t.n)
					tr.Access(0, g.buf, off, 16, true)
					if !k.IsNull(i) {
						l := int64(k.Offsets[i+1] - k.Offsets[i])
						tr.Access(0, m.OffBuf, m.OffOff+int64(i)*4, 8, false)
						if l > 0 {
							tr.Range(0, m.BytesBuf, m.BytesOff+int64(k.Offsets[i])-base, l, false)
						}
						keyBytes.appendN(tr, 0, l)
					}
					keyOffs.appendN(tr, 0, 1)
					gids[i] = s.gid - 1
					break
				}
				tr.Access(0, g.buf, off, 8, false)
				if s.word == h {
					gid := int(s.gid - 1)
					stored := t.keys[0]
					if !k.IsNull(i) && !stored.IsNull(gid) {
						tr.Access(0, keyOffs.buf, int64(gid)*4, 8, false)
						tr.Access(0, m.OffBuf, m.OffOff+int64(i)*4, 8, false)
						if l := int64(stored.Offsets[gid+1] - stored.Offsets[gid]); l > 0 {
							tr.Range(0, keyBytes.buf, int64(stored.Offsets[gid]), l, false)
						}
						if l := int64(k.Offsets[i+1] - k.Offsets[i]); l > 0 {
							tr.Range(0, m.BytesBuf, m.BytesOff+int64(k.Offsets[i])-base, l, false)
						}
					}
					if t.equal([]*vec.Vector{k}, i, gid) {
						gids[i] = s.gid - 1
						break
					}
				}
				j = (j + 1) & t.mask
			}
			tr.Access(0, g.gids, int64(i)*4, 4, true)
		}
		if err := g.resizeStates(specs); err != nil {
			return 0, err
		}
		g.updateStates(specs, gids, TraceMorsel{Off: m.ArgOff, ArgBufs: m.ArgBufs})
	}
	for si := range specs {
		for _, w := range g.states[si] {
			out := tr.Alloc(0, w.len*8, false, true)
			tr.Range(0, w.buf, 0, w.len*8, false)
			tr.Range(0, out, 0, w.len*8, true)
		}
	}
	return t.n, nil
}

// growHashed is Table.grow for a table whose slots hold full hashes,
// reported.
func (g *tracedGeneric) growHashed() error {
	return g.growBy(func(word uint64) uint64 { return word })
}
