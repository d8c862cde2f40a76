package agg

import (
	"fmt"
	"unsafe"

	"cachebook/engine/vec"
)

// slabFirst and slabBlock bound the size of the blocks a slab carves chunks
// from: the first is small, so that a query over a few thousand rows does
// not take (and, off huge pages, zero) 32 MiB; each next block doubles, up
// to a multiple of the huge-page size large enough that the tail left
// unused when a chunk does not fit is a small fraction.
const (
	slabFirst = 256 << 10
	slabBlock = 32 << 20
)

// slab bump-allocates chunk buffers from large arena blocks, so that the
// radix partitions of a query fault in a few hundred huge pages (or reuse a
// previous query's mappings) instead of growing one Go slice per partition,
// which copies the data on every doubling and, on this kind of machine, pays
// a page fault for every 4 KiB the heap grows by.
type slab struct {
	arena  *Arena
	budget *Budget // charged for each block before it is allocated (nil: none)
	block  []byte
	off    int
	next   int   // size of the next block
	total  int64 // bytes of the blocks allocated so far
	// maxBlock, if positive, bounds the blocks below slabBlock (a
	// spilling aggregation's share of a small limit).
	maxBlock int
	// first, if positive, is the size of the first block, below
	// slabFirst (one of several slabs of a scatterer).
	first int
	// own says the arena is the slab's alone: a spill frees it.
	own bool
}

// alloc returns n bytes, 64-byte aligned within the block (blocks are
// page-aligned mappings or large Go allocations), so they may be viewed as
// wider integers.
func (s *slab) alloc(n int) ([]byte, error) {
	n = (n + 63) &^ 63
	if s.off+n > len(s.block) {
		top := slabBlock
		if s.maxBlock > 0 {
			top = s.maxBlock
		}
		first := slabFirst
		if s.first > 0 {
			first = s.first
		}
		s.next = min(max(s.next*2, first), top)
		size := max(n, s.next)
		// Charged first: a block that would pass the memory limit is
		// never mapped, let alone touched.
		if err := s.budget.Grow(int64(size)); err != nil {
			return nil, err
		}
		b, err := s.arena.Bytes(size, false)
		if err != nil {
			s.budget.Grow(-int64(size))
			return nil, fmt.Errorf("radix partition buffers: %w", err)
		}
		s.block, s.off = b, 0
		s.total += int64(size)
	}
	b := s.block[s.off : s.off+n : s.off+n]
	s.off += n
	return b, nil
}

// word is a fixed-size element type that raw buffers are viewed as.
type word interface {
	uint32 | uint64 | int64 | float64
}

// viewAs returns the n values of T that the aligned buffer b (at least n
// values long) holds.
func viewAs[T word](b []byte, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// sliceOf returns an empty slice with room for n values of T, carved
// from s.
func sliceOf[T word](s *slab, n int) ([]T, error) {
	var zero T
	b, err := s.alloc(n * int(unsafe.Sizeof(zero)))
	if err != nil {
		return nil, err
	}
	return viewAs[T](b, n)[:0], nil
}

// vector returns an empty vector of type t with room for rows values and,
// for strings, strBytes bytes of payload.
func (s *slab) vector(t vec.Type, rows, strBytes int) (*vec.Vector, error) {
	v := &vec.Vector{Type: t}
	var err error
	switch {
	case t.IsFloat():
		v.F64, err = sliceOf[float64](s, rows)
	case t == vec.String:
		if v.Offsets, err = sliceOf[uint32](s, rows+1); err == nil {
			v.Offsets = append(v.Offsets, 0)
			v.Bytes, err = s.alloc(strBytes)
			v.Bytes = v.Bytes[:0]
		}
	default:
		v.I64, err = sliceOf[int64](s, rows)
	}
	return v, err
}

// chunk holds rows of one partition: their hashes, keys and aggregate
// inputs, column by column. Its buffers are sized when it is opened and
// appends never outgrow them (a column with NULLs keeps its validity on
// the heap).
type chunk struct {
	hashes []uint64      // nil in a hashless scatterer's chunks
	cols   []*vec.Vector // the key columns, then one per aggregate (nil without input)
	keys   []*vec.Vector // cols[:number of keys]
	args   []*vec.Vector // the rest of cols
	// n is the chunk's rows and size the most it has room for.
	n, size int
}

// partition is one worker's rows for one radix partition, as a list of
// chunks; the last is the one being filled.
type partition struct {
	chunks []*chunk
	rows   int
}

// scatterer is one worker's set of 2^bits partitions.
type scatterer struct {
	parts    []partition
	cur      []*chunk // the chunk being filled, per partition
	shift    uint
	nkeys    int
	colTypes []vec.Type // the key types, then the aggregates' input types
	colUsed  []bool     // false for an aggregate without an input column
	expect   int        // rows one partition is expected to receive
	// judged says expect comes from the rows expected, not a guess:
	// a partition's chunks then fill its share.
	judged bool
	// slabs are the slabs chunks are carved from: one, or one per group
	// of partitions (partition p's is slabs[p>>gshift]), each with an
	// arena of its own, so that a group can spill and give back its
	// memory while the others stay.
	slabs  []slab
	gshift uint
	// spillKind is the kind of spill file the rows go to: 0 for raw
	// rows, 1 for partial states (a pre-aggregation's partitions).
	spillKind int
	// rehash, if set, makes the scatterer hashless: its chunks keep
	// no hashes, and whoever reads their rows hashes the keys again
	// with rehash, the hasher that chose their partitions. A direct
	// window's partitions are hashless: a URL's row is then its bytes,
	// offset and partial states, a seventh smaller, and hashing the
	// keys once more costs less than writing and reading the hashes.
	rehash *Hasher

	hashes  []uint64
	pidx    []uint32
	inCols  []*vec.Vector // a morsel's keys, then its aggregate inputs
	count   []int32       // rows per partition in the current morsel
	need    [][]int64     // string bytes per partition in the current morsel, per string column
	strCol  []int         // index into need for each key then arg column, or -1
	seen    []int64       // string bytes scattered so far, per string column
	rows    int64         // rows scattered so far
	bytes   int64         // the memory held and charged to the budget: max(written, blocks())
	written int64         // estimate of the bytes written
}

// newScatterer returns a worker's partitions. rowsHint is the number of
// rows the worker is expected to scatter (0 if unknown): a partition's
// first chunk has room for its share plus slack, so that uniform keys fill
// one chunk per partition, and a skewed partition gets further chunks of
// growing size.
func newScatterer(bits int, keyTypes []vec.Type, specs []Spec, rowsHint int64, arena *Arena) *scatterer {
	cols := append([]vec.Type(nil), keyTypes...)
	used := make([]bool, len(keyTypes), len(keyTypes)+len(specs))
	for i := range used {
		used[i] = true
	}
	for _, sp := range specs {
		cols = append(cols, sp.In)
		used = append(used, sp.HasInput())
	}
	return newScatterCols(bits, len(keyTypes), cols, used, rowsHint, arena)
}

// newScatterCols returns a worker's partitions for rows of the columns
// cols, the first nkeys of them the keys; used is false for a column that
// is never given (count(*) has no input).
func newScatterCols(bits, nkeys int, cols []vec.Type, used []bool, rowsHint int64, arena *Arena) *scatterer {
	np := 1 << bits
	s := &scatterer{
		parts: make([]partition, np), cur: make([]*chunk, np), shift: uint(64 - bits),
		nkeys: nkeys, count: make([]int32, np), slabs: []slab{{arena: arena}}, gshift: uint(bits),
		colTypes: cols, colUsed: used,
	}
	s.expect = int(rowsHint>>bits)*9/8 + 64
	s.judged = rowsHint > 0
	for c, t := range s.colTypes {
		if t == vec.String && s.colUsed[c] {
			s.strCol = append(s.strCol, len(s.need))
			s.need = append(s.need, make([]int64, np))
			s.seen = append(s.seen, 0)
		} else {
			s.strCol = append(s.strCol, -1)
		}
	}
	return s
}

// slabOf returns the slab partition p's chunks are carved from.
func (s *scatterer) slabOf(p int) *slab { return &s.slabs[p>>s.gshift] }

// blocks returns the bytes of the blocks the slabs allocated.
func (s *scatterer) blocks() int64 {
	var n int64
	for i := range s.slabs {
		n += s.slabs[i].total
	}
	return n
}

// budget returns the budget the slabs charge.
func (s *scatterer) budget() *Budget { return s.slabs[0].budget }

// useBudget makes the slabs charge b for their blocks, each block at most
// maxBlock bytes (0: slabBlock).
func (s *scatterer) useBudget(b *Budget, maxBlock int) {
	for i := range s.slabs {
		s.slabs[i].budget, s.slabs[i].maxBlock = b, maxBlock
	}
}

// splitSlabs carves each group of partitions, 2^gbits groups (at most
// one per partition), from a slab of its own with an arena from newArena,
// so that a group can be spilled and its memory given back alone. The
// scatterer must be empty.
func (s *scatterer) splitSlabs(gbits int, newArena func() *Arena) {
	bits := 64 - int(s.shift)
	gbits = min(gbits, bits)
	b, top := s.budget(), s.slabs[0].maxBlock
	s.slabs = make([]slab, 1<<gbits)
	for i := range s.slabs {
		s.slabs[i] = slab{arena: newArena(), budget: b, maxBlock: top, own: true, first: max(32<<10, slabFirst>>gbits)}
	}
	s.gshift = uint(bits - gbits)
}

// groupParts returns the partitions [lo, hi) of group m.
func (s *scatterer) groupParts(m int) (lo, hi int) {
	lo, hi = m<<s.gshift, (m+1)<<s.gshift
	return min(lo, len(s.parts)), min(hi, len(s.parts))
}

// free gives back the arenas the slabs own.
func (s *scatterer) free() {
	for i := range s.slabs {
		if s.slabs[i].own {
			s.slabs[i].arena.Free()
		}
	}
}

// open starts a new chunk for partition p with room for at least rows rows
// and, per string column, need bytes of payload. morsel is the rows of the
// morsel being scattered, already counted in seen but not yet in s.rows.
func (s *scatterer) open(p, rows, morsel int) error {
	part := &s.parts[p]
	n := s.expect
	switch {
	case len(part.chunks) == 0:
	case !s.judged:
		// No share known yet: grow geometrically.
		n = max(s.expect/4, min(part.rows, 1<<20))
	case part.rows < s.expect:
		// Short of its share: room for half the rest of it, not another
		// share, which would be mostly empty and yet charged. Half,
		// because the share is judged again as the rows come (the first
		// windows of a pre-aggregation fold the least).
		n = max((s.expect-part.rows)/2, s.expect/8)
	default:
		// A partition past its share is skewed, or the share was judged
		// high: grow by a quarter, so that the last chunk, about half
		// empty, is a small part of the partition.
		n = max(s.expect/8, min(part.rows/4, 1<<20))
	}
	sl := s.slabOf(p)
	if sl.maxBlock > 0 {
		// Under a spilling limit a chunk takes at most a sixteenth of a
		// block, however many rows its partition is expected to get.
		rowBytes := int64(8 + 8*len(s.colTypes))
		if seen := s.rows + int64(morsel); seen > 0 {
			for _, b := range s.seen {
				rowBytes += b / seen
			}
		}
		n = min(n, int(max(64, int64(sl.maxBlock/16)/rowBytes)))
	}
	n = max(n, rows)
	strBytes := func(col int) int {
		sc := s.strCol[col]
		if sc < 0 {
			return 0
		}
		// The string bytes per row seen so far, this morsel's included
		// (on the first morsel a guess of 16 bytes would reserve, at
		// 100M rows, 1.6 GB for a column of mostly empty strings).
		b := 16 * n
		if seen := s.rows + int64(morsel); seen > 0 {
			b = int(s.seen[sc]*int64(n)/seen)*9/8 + 64
		}
		return max(b, int(s.need[sc][p]))
	}
	c := &chunk{size: n}
	var err error
	if s.rehash == nil {
		if c.hashes, err = sliceOf[uint64](sl, n); err != nil {
			return err
		}
	}
	c.cols = make([]*vec.Vector, len(s.colTypes))
	for i, t := range s.colTypes {
		if s.colUsed[i] {
			if c.cols[i], err = sl.vector(t, n, strBytes(i)); err != nil {
				return err
			}
		}
	}
	c.keys, c.args = c.cols[:s.nkeys], c.cols[s.nkeys:]
	part.chunks = append(part.chunks, c)
	s.cur[p] = c
	return nil
}

// fits reports whether chunk c has room for rows more rows of partition p.
func (s *scatterer) fits(c *chunk, p, rows int) bool {
	if c == nil || c.size-c.n < rows {
		return false
	}
	for i, v := range c.cols {
		if sc := s.strCol[i]; sc >= 0 && int64(cap(v.Bytes)-len(v.Bytes)) < s.need[sc][p] {
			return false
		}
	}
	return true
}

// scatter appends each row of in to the partition chosen by the top bits of
// its hash, charging the memory it takes to the slab's budget.
func (s *scatterer) scatter(h *Hasher, in Input) error {
	if cap(s.hashes) < in.N {
		s.hashes = make([]uint64, in.N)
	}
	hs := s.hashes[:in.N]
	h.Hash(in.Keys, in.N, hs)
	return s.scatterHashed(in, hs)
}

// partitionsOf returns the partition of each row whose hash hs holds
// (in s.pidx) and counts the rows per partition in s.count.
func (s *scatterer) partitionsOf(hs []uint64) []uint32 {
	if cap(s.pidx) < len(hs) {
		s.pidx = make([]uint32, len(hs))
	}
	pidx := s.pidx[:len(hs)]
	shift := s.shift
	for i, x := range hs {
		p := uint32(x >> shift)
		if shift == 64 {
			p = 0
		}
		pidx[i] = p
		s.count[p]++
	}
	return pidx
}

// countNeeds adds, for each string column of cols (the keys, then the
// aggregates' inputs, as strCol indexes them), its rows' bytes to the
// need of their partitions pidx.
func (s *scatterer) countNeeds(cols []*vec.Vector, pidx []uint32) {
	for c, v := range cols {
		if sc := s.strCol[c]; sc >= 0 && v != nil {
			need := s.need[sc]
			for i, p := range pidx {
				need[p] += int64(v.Offsets[i+1] - v.Offsets[i])
			}
		}
	}
}

// scatterHashed is scatter for rows whose hashes hs are already known.
func (s *scatterer) scatterHashed(in Input, hs []uint64) error {
	n := in.N
	blocks := s.blocks()
	pidx := s.partitionsOf(hs)
	s.inCols = append(append(s.inCols[:0], in.Keys...), in.Args...)
	s.countNeeds(s.inCols, pidx)
	for c, v := range s.inCols {
		if sc := s.strCol[c]; sc >= 0 && v != nil {
			s.seen[sc] += int64(v.Offsets[n] - v.Offsets[0])
		}
	}
	// Make room in every partition this morsel reaches, then append.
	// A failure here leaves the partitions as they were, but for empty
	// chunks, so that the morsel may be scattered again after a spill.
	for p, k := range s.count {
		if k != 0 && !s.fits(s.cur[p], p, int(k)) {
			if err := s.open(p, int(k), n); err != nil {
				s.bytes += s.blocks() - blocks // charged by the slabs
				clear(s.count)
				for _, need := range s.need {
					clear(need)
				}
				return err
			}
		}
	}
	for p, k := range s.count {
		if k == 0 {
			continue
		}
		s.parts[p].rows += int(k)
		s.cur[p].n += int(k)
		s.count[p] = 0
		for _, need := range s.need {
			need[p] = 0
		}
	}
	s.rows += int64(n)
	if s.rehash == nil {
		for i, x := range hs {
			c := s.cur[pidx[i]]
			c.hashes = append(c.hashes, x)
		}
		s.written += int64(n) * 8
	}
	for c, v := range s.inCols {
		if v != nil {
			s.written += scatterColumn(s.cur, pidx, v, c)
		}
	}
	// The memory held is the slab's blocks (chunks are sized ahead of
	// their rows, blocks ahead of their chunks), or what was written when
	// that is more (validity slices live on the heap). The slab charged
	// its new blocks as it took them; the rest is charged here.
	total := s.blocks()
	grown := max(s.written, total)
	charged := s.bytes + total - blocks
	if err := s.budget().Grow(grown - charged); err != nil {
		s.bytes = charged
		return err
	}
	s.bytes = grown
	return nil
}

// scatterColumn appends src's rows to column c of their partitions'
// current chunks and returns an estimate of the bytes written. A
// destination column that received NULLs from an earlier morsel has a
// validity slice that must grow with it, even when src has no NULLs.
func scatterColumn(cur []*chunk, pidx []uint32, src *vec.Vector, c int) int64 {
	if src.Valid != nil || src.Type == vec.Null {
		for i, p := range pidx {
			cur[p].cols[c].AppendFrom(src, i)
		}
		return int64(len(pidx)) * 9
	}
	switch src.Type {
	case vec.String:
		var b int64
		for i, p := range pidx {
			d := cur[p].cols[c]
			v := src.Bytes[src.Offsets[i]:src.Offsets[i+1]]
			d.Bytes = append(d.Bytes, v...)
			d.Offsets = append(d.Offsets, uint32(len(d.Bytes)))
			if d.Valid != nil {
				d.Valid = append(d.Valid, true)
			}
			d.Len++
			b += int64(len(v)) + 4
		}
		return b
	case vec.Float64, vec.Float32:
		for i, p := range pidx {
			d := cur[p].cols[c]
			d.F64 = append(d.F64, src.F64[i])
			if d.Valid != nil {
				d.Valid = append(d.Valid, true)
			}
			d.Len++
		}
	default:
		for i, p := range pidx {
			d := cur[p].cols[c]
			d.I64 = append(d.I64, src.I64[i])
			if d.Valid != nil {
				d.Valid = append(d.Valid, true)
			}
			d.Len++
		}
	}
	return int64(len(pidx)) * 8
}
