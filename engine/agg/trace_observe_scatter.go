package agg

// The observed pass's partitions (TraceAggregate): a real scatterer whose
// accesses are read back after each scatter, its chunks in their slab
// blocks.

import (
	"unsafe"

	"cachebook/engine/vec"
)

// tracedScatterer is a real scatterer whose accesses are reported.
type tracedScatterer struct {
	sc                      *scatterer
	tr                      *traceBuf
	w                       int
	count, cur, parts, need int // buffers: per-partition counts, current chunks, headers, string bytes
	hashes, pidx            tracedSlice
	start                   []int
	blocks                  []tracedBlock // the slab's blocks seen, in order
}

func (o *observer) newTracedScatterer(sc *scatterer, w int) *tracedScatterer {
	np := int64(len(sc.parts))
	return &tracedScatterer{sc: sc, tr: o.tr, w: w,
		count: o.tr.Alloc(w, np*4, false, true), cur: o.tr.Alloc(w, np*8, false, true),
		parts: o.tr.Alloc(w, np*(sliceHeader+8), false, true), need: o.tr.Alloc(w, np*8, false, true),
		hashes: tracedSlice{buf: -1}, pidx: tracedSlice{buf: -1}, start: make([]int, np)}
}

// hash is scatterer.scatter's hashing, reported.
func (ts *tracedScatterer) hash(h *Hasher, in Input, cols []TraceCol) []uint64 {
	sc := ts.sc
	if cap(sc.hashes) < in.N {
		sc.hashes = make([]uint64, in.N)
	}
	hs := sc.hashes[:in.N]
	h.Hash(in.Keys, in.N, hs)
	if ts.hashes.buf < 0 || ts.hashes.cap < int64(in.N) {
		ts.hashes = tracedSlice{buf: ts.tr.Alloc(ts.w, int64(in.N)*8, false, true), cap: int64(in.N)}
	}
	reportHash(ts.tr, ts.w, in.Keys, cols, in.N, ts.hashes.buf)
	return hs
}

// observedChunk is where a chunk's hashes and each column's data (and a
// string column's offsets) lie: in the slab blocks they were carved from.
type observedChunk struct {
	self, colArr int // the chunk struct and its cols array
	hashes       TraceCol
	cols         []TraceCol // per column; Buf -1 if unused
	vecs         []int      // per column: its vec.Vector struct; -1 if unused
}

// colsOf returns columns lo..hi-1 of the chunk as trace columns.
func (tc *observedChunk) colsOf(lo, hi int) []TraceCol { return tc.cols[lo:hi] }

// report reports scatterHashed of in (columns read from cols), hashes
// read from hbuf at hoff, after the call: per row its partition and
// count, per string column the bytes each partition needs, per partition
// its chunk (a new one allocated), then the hashes and each column
// appended to the rows' chunks (with the loads of the row's chunk and
// vector structs on the way).
func (ts *tracedScatterer) report(o *observer, in Input, cols []TraceCol, hbuf int, hoff int64) {
	tr, w, sc := o.tr, ts.w, ts.sc
	n := in.N
	if ts.pidx.buf < 0 || ts.pidx.cap < int64(n) {
		ts.pidx = tracedSlice{buf: tr.Alloc(w, int64(n)*4, false, true), cap: int64(n)}
	}
	pidx := sc.pidx[:n]
	for i, p := range pidx {
		tr.Access(w, hbuf, hoff+int64(i)*8, 8, false)
		tr.Access(w, ts.pidx.buf, int64(i)*4, 4, true)
		tr.Access(w, ts.count, int64(p)*4, 4, false)
		tr.Access(w, ts.count, int64(p)*4, 4, true)
	}
	all := append(append([]*vec.Vector(nil), in.Keys...), in.Args...)
	for c, v := range all {
		if v == nil || sc.strCol[c] < 0 {
			continue
		}
		for i, p := range pidx {
			tr.Access(w, cols[c].OffBuf, cols[c].OffOff+int64(i)*4, 8, false)
			tr.Access(w, ts.pidx.buf, int64(i)*4, 4, false)
			tr.Access(w, ts.need, int64(p)*8, 8, false)
			tr.Access(w, ts.need, int64(p)*8, 8, true)
		}
	}
	k := make([]int, len(sc.parts))
	for _, p := range pidx {
		k[p]++
	}
	for p := range sc.parts {
		tr.Access(w, ts.count, int64(p)*4, 4, false)
		if k[p] == 0 {
			continue
		}
		tr.Access(w, ts.cur, int64(p)*8, 8, false)
		c := sc.cur[p]
		if o.chunks[c] == nil {
			ts.noteBlock()
			o.chunks[c] = ts.newObservedChunk(c)
		}
		ts.start[p] = c.n - k[p]
		tr.Access(w, ts.parts, int64(p)*(sliceHeader+8), 8, true)
		tr.Access(w, ts.count, int64(p)*4, 4, true)
	}
	pos := append([]int(nil), ts.start...)
	for i, p := range pidx {
		tc := o.chunks[sc.cur[p]]
		tr.Access(w, hbuf, hoff+int64(i)*8, 8, false)
		tr.Access(w, ts.pidx.buf, int64(i)*4, 4, false)
		tr.Access(w, ts.cur, int64(p)*8, 8, false)
		tr.Access(w, tc.self, 0, sliceHeader, false)
		tr.Access(w, tc.hashes.Buf, tc.hashes.Off+int64(pos[p])*8, 8, true)
		tr.Access(w, tc.self, 8, 8, true)
		pos[p]++
	}
	for c, v := range all {
		if v == nil || !sc.colUsed[c] {
			continue
		}
		copy(pos, ts.start)
		for i, p := range pidx {
			ch := sc.cur[p]
			tc := o.chunks[ch]
			tr.Access(w, ts.pidx.buf, int64(i)*4, 4, false)
			tr.Access(w, ts.cur, int64(p)*8, 8, false)
			tr.Access(w, tc.self, sliceHeader, sliceHeader, false)
			tr.Access(w, tc.colArr, int64(c)*8, 8, false)
			tr.Access(w, tc.vecs[c], 0, vectorStructBytes/2, false)
			readValue(tr, w, v, cols[c], i)
			if v.Type == vec.String {
				d := ch.cols[c]
				dc := tc.cols[c]
				if l := int64(v.Offsets[i+1] - v.Offsets[i]); l > 0 {
					tr.Range(w, dc.Buf, dc.Off+int64(d.Offsets[pos[p]]), l, true)
				}
				tr.Access(w, dc.OffBuf, dc.OffOff+int64(pos[p]+1)*4, 4, true)
			} else {
				tr.Access(w, tc.cols[c].Buf, tc.cols[c].Off+int64(pos[p])*8, 8, true)
			}
			tr.Access(w, tc.vecs[c], 0, 32, true)
			pos[p]++
		}
	}
}

// newObservedChunk returns the trace buffers of chunk c, whose arrays lie
// in ts's slab blocks.
func (ts *tracedScatterer) newObservedChunk(c *chunk) *observedChunk {
	tr, w := ts.tr, ts.w
	tc := &observedChunk{self: tr.Alloc(w, chunkStructBytes, false, true), colArr: tr.Alloc(w, int64(len(c.cols))*8, false, true)}
	tc.hashes.Buf, tc.hashes.Off = ts.at(unsafe.Pointer(unsafe.SliceData(c.hashes)), int64(cap(c.hashes))*8)
	for _, col := range c.cols {
		tcol, v := TraceCol{Buf: -1}, -1
		if col != nil {
			v = tr.Alloc(w, vectorStructBytes, false, true)
			switch {
			case col.Type == vec.String:
				tcol.OffBuf, tcol.OffOff = ts.at(unsafe.Pointer(unsafe.SliceData(col.Offsets)), int64(cap(col.Offsets))*4)
				tcol.Buf, tcol.Off = ts.at(unsafe.Pointer(unsafe.SliceData(col.Bytes)), int64(cap(col.Bytes)))
			case col.Type.IsFloat():
				tcol.Buf, tcol.Off = ts.at(unsafe.Pointer(unsafe.SliceData(col.F64)), int64(cap(col.F64))*8)
			default:
				tcol.Buf, tcol.Off = ts.at(unsafe.Pointer(unsafe.SliceData(col.I64)), int64(cap(col.I64))*8)
			}
		}
		tc.cols, tc.vecs = append(tc.cols, tcol), append(tc.vecs, v)
	}
	return tc
}

// Sizes of the structs a chunk's appends read and write: a chunk (three
// slice headers: hashes, cols, keys/args) and a vec.Vector (type, length,
// four slice headers).
const (
	chunkStructBytes  = 4 * sliceHeader
	vectorStructBytes = 16 + 5*sliceHeader
)

// tracedBlock is a slab block of a traced scatterer and its trace buffer.
type tracedBlock struct {
	base, end uintptr
	buf       int
}

// noteBlock records the slab's current block, if new.
func (ts *tracedScatterer) noteBlock() {
	b := ts.sc.slabs[0].block
	if len(b) == 0 {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if k := len(ts.blocks); k > 0 && ts.blocks[k-1].base == base {
		return
	}
	ts.blocks = append(ts.blocks, tracedBlock{base: base, end: base + uintptr(len(b)), buf: ts.tr.Alloc(ts.w, int64(len(b)), false, false)})
}

// at returns the trace buffer and offset of an array of n bytes at p,
// carved from one of the slab's blocks; an array in a block the pass did
// not see (a scatter opened several) gets a buffer of its own.
func (ts *tracedScatterer) at(p unsafe.Pointer, n int64) (buf int, off int64) {
	a := uintptr(p)
	for i := len(ts.blocks) - 1; i >= 0 && i >= len(ts.blocks)-4; i-- {
		if b := ts.blocks[i]; a >= b.base && a < b.end {
			return b.buf, int64(a - b.base)
		}
	}
	return ts.tr.Alloc(ts.w, max(n, 1), false, false), 0
}
