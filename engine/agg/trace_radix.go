package agg

import (
	"context"
	"fmt"

	"cachebook/engine/vec"
)

// Tracing the generic radix and parallel paths (radix without the tuned
// count path): a real scatterer (same partitions, chunk sizes and
// appends) whose work is reported per morsel in the order scatter does it
// (hash, partition index and count, the per-partition pass over every
// partition, the hashes, then each column), then per partition a traced
// generic table and states fed from the chunks, as radix aggregates.
// Chunk buffers get trace buffers of their real capacity; the chunk and
// partition structs themselves are modelled as one pointer array
// (cur), one header array (parts) and the count array.

// tracedChunk is the trace buffers of a chunk: its struct (the hashes and
// cols slice headers), its cols array of vector pointers, each column's
// vec.Vector struct and the hashes' and columns' data.
type tracedChunk struct {
	self, colArr int
	hashes       int
	cols, vecs   []int // per column (keys, then aggregate inputs); -1 if unused
}

// Sizes of the structs a chunk's appends read and write: a chunk (three
// slice headers: hashes, cols, keys/args) and a vec.Vector (type, length,
// four slice headers).
const (
	chunkStructBytes  = 4 * sliceHeader
	vectorStructBytes = 16 + 5*sliceHeader
)

// TraceGenericRadix runs the generic radix GROUP BY (one integer key, see
// GenericTraceable) over morsels as radix runs it for cfg, reporting its
// accesses to tracer, and returns the number of groups. Workers, morsels and
// partitions are dealt as in TraceCount.
func TraceGenericRadix(ctx context.Context, cfg TraceConfig, keyType vec.Type, specs []Spec, morsels []TraceMorsel, tracer Tracer) (int, error) {
	tr := newTraceBuf(tracer)
	defer tr.flush()
	keyTypes := []vec.Type{keyType}
	if !GenericTraceable(keyTypes, specs) {
		return 0, fmt.Errorf("trace: this aggregation's shape is not traced")
	}
	threads := max(cfg.Threads, 1)
	bits := cfg.RadixBits
	if bits < 0 || bits > 16 {
		return 0, fmt.Errorf("radix_bits must be between 0 and 16, got %d", bits)
	}
	np := 1 << bits
	rowsHint := cfg.RowsHint
	if threads > 1 {
		rowsHint = rowsHint * 3 / 2 / int64(threads)
	}
	worker := func(slot int) int {
		if threads == 1 {
			return 0
		}
		return slot + 1
	}
	h := NewHasher()
	chunks := map[*chunk]*tracedChunk{}
	scs := make([]*scatterer, threads)
	for slot := range scs {
		w := worker(slot)
		tr.Phase(w, "partition")
		sc := newScatterer(bits, keyTypes, specs, rowsHint, nil)
		scs[slot] = sc
		countBuf := tr.Alloc(w, int64(np)*4, false, true)
		curBuf := tr.Alloc(w, int64(np)*8, false, true)
		partsBuf := tr.Alloc(w, int64(np)*(sliceHeader+8), false, true)
		hsBuf, pidxBuf, hcap := -1, -1, 0
		pos := make([]int, np)
		for mi := slot; mi < len(morsels); mi += threads {
			if mi%64 == 0 {
				if err := ctx.Err(); err != nil {
					return 0, err
				}
			}
			m := morsels[mi]
			n := len(m.Keys)
			if n == 0 {
				continue
			}
			in := Input{Keys: []*vec.Vector{{Type: keyType, I64: m.Keys, Len: n}}, N: n}
			for _, sp := range specs {
				var a *vec.Vector
				if sp.HasInput() {
					a = &vec.Vector{Type: sp.In, Len: n}
					if sp.In.IsFloat() {
						a.F64 = make([]float64, n)
					} else {
						a.I64 = make([]int64, n)
					}
				}
				in.Args = append(in.Args, a)
			}
			if err := sc.scatter(h, in); err != nil {
				return 0, err
			}
			pidx := sc.pidx[:n]
			if hcap < n {
				hsBuf, pidxBuf, hcap = tr.Alloc(w, int64(n)*8, false, true), tr.Alloc(w, int64(n)*4, false, true), n
			}
			// Hasher.Hash, then the partition index and count per row.
			for i := 0; i < n; i++ {
				tr.Access(w, m.Buf, m.Off+int64(i)*8, 8, false)
				tr.Access(w, hsBuf, int64(i)*8, 8, true)
			}
			k := make(map[uint32]int)
			for i, p := range pidx {
				tr.Access(w, hsBuf, int64(i)*8, 8, false)
				tr.Access(w, pidxBuf, int64(i)*4, 4, true)
				tr.Access(w, countBuf, int64(p)*4, 4, false)
				tr.Access(w, countBuf, int64(p)*4, 4, true)
				k[p]++
			}
			// Every partition: its count; those reached, their chunk
			// (opened if it had no room: a new chunk), rows and count.
			for p := 0; p < np; p++ {
				tr.Access(w, countBuf, int64(p)*4, 4, false)
				kp := k[uint32(p)]
				if kp == 0 {
					continue
				}
				tr.Access(w, curBuf, int64(p)*8, 8, false)
				c := sc.cur[p]
				if chunks[c] == nil {
					tc := &tracedChunk{self: tr.Alloc(w, chunkStructBytes, false, true), hashes: tr.Alloc(w, int64(cap(c.hashes))*8, false, false),
						colArr: tr.Alloc(w, int64(len(c.cols))*8, false, true)}
					for _, col := range c.cols {
						b, v := -1, -1
						if col != nil {
							v = tr.Alloc(w, vectorStructBytes, false, true)
							b = tr.Alloc(w, int64(max(cap(col.I64), cap(col.F64)))*8, false, false)
						}
						tc.cols, tc.vecs = append(tc.cols, b), append(tc.vecs, v)
					}
					chunks[c] = tc
				}
				pos[p] = len(c.hashes) - kp
				tr.Access(w, partsBuf, int64(p)*(sliceHeader+8), 8, true)
				tr.Access(w, countBuf, int64(p)*4, 4, true)
			}
			// The hashes, then each column, appended to their chunks.
			start := append([]int(nil), pos...)
			for i, p := range pidx {
				tc := chunks[sc.cur[p]]
				tr.Access(w, hsBuf, int64(i)*8, 8, false)
				tr.Access(w, pidxBuf, int64(i)*4, 4, false)
				tr.Access(w, curBuf, int64(p)*8, 8, false)
				tr.Access(w, tc.self, 0, sliceHeader, false) // c.hashes = append(c.hashes, x)
				tr.Access(w, tc.hashes, int64(pos[p])*8, 8, true)
				tr.Access(w, tc.self, 8, 8, true)
				pos[p]++
			}
			for col := range sc.colTypes {
				if !sc.colUsed[col] {
					continue
				}
				src, srcOff := m.Buf, m.Off
				if col >= 1 {
					if col-1 >= len(m.ArgBufs) || m.ArgBufs[col-1] < 0 {
						continue
					}
					src = m.ArgBufs[col-1]
				}
				copy(pos, start)
				for i, p := range pidx {
					tc := chunks[sc.cur[p]]
					tr.Access(w, pidxBuf, int64(i)*4, 4, false)
					tr.Access(w, curBuf, int64(p)*8, 8, false)
					tr.Access(w, tc.self, sliceHeader, sliceHeader, false) // ch.cols[c]
					tr.Access(w, tc.colArr, int64(col)*8, 8, false)
					tr.Access(w, tc.vecs[col], 0, vectorStructBytes/2, false) // d.I64, d.Len
					tr.Access(w, src, srcOff+int64(i)*8, 8, false)
					tr.Access(w, tc.cols[col], int64(pos[p])*8, 8, true)
					tr.Access(w, tc.vecs[col], 0, 32, true)
					pos[p]++
				}
			}
		}
	}
	groups := 0
	for slot := 0; slot < threads; slot++ {
		w := worker(slot)
		tr.Phase(w, "aggregate")
		for p := slot; p < np; p += threads {
			if p%64 == 0 {
				if err := ctx.Err(); err != nil {
					return 0, err
				}
			}
			n := 0
			for _, sc := range scs {
				n += sc.parts[p].rows
			}
			if n == 0 {
				continue
			}
			t, err := NewTable(keyTypes, n/2, cfg.Budget)
			if err != nil {
				return 0, err
			}
			g := &tracedGeneric{t: t, tr: tr, w: w, buf: tr.Alloc(w, int64(len(t.slots))*16, false, true)}
			for _, sp := range specs {
				g.states = append(g.states, make([]tracedSlice, stateWords(sp)))
			}
			var gids []uint32
			for _, sc := range scs {
				for _, c := range sc.parts[p].chunks {
					tc := chunks[c]
					keys := c.cols[0].I64[:len(c.hashes)]
					if err := g.group(keys, tc.cols[0], 0, tc.hashes, 0); err != nil {
						return 0, err
					}
					gids = gids[:0]
					for _, key := range keys {
						gids = append(gids, g.gidOf(key))
					}
					if err := g.resizeStates(specs); err != nil {
						return 0, err
					}
					args := make([]int, len(specs))
					for si := range specs {
						args[si] = tc.cols[1+si]
					}
					g.updateStates(specs, gids, TraceMorsel{ArgBufs: args})
				}
			}
			groups += t.n
			for si := range specs {
				for _, st := range g.states[si] {
					out := tr.Alloc(w, st.len*8, false, true)
					tr.Range(w, st.buf, 0, st.len*8, false)
					tr.Range(w, out, 0, st.len*8, true)
				}
			}
		}
	}
	return groups, nil
}
