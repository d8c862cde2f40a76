package agg

import (
	"bytes"
	"fmt"
	"unsafe"

	"cachebook/engine/vec"
)

// Writing each new group once. With string keys, most of what a window
// table holds is its keys, and the old window copied each new key three
// times after the scan: into the table's key columns, from there into its
// partition at the flush, and from the partition into the final table. A
// direct window instead appends a new group's key to its partition's chunk
// the moment the group is made, and keeps only a slot (hash, group id and
// where the key's bytes are) and where the row is: a probe compares against
// the key in the partition. A flush then appends only the fixed-width
// partial states, to the rows already there, and clears the slots, so the
// keys cross memory once before the final table. A chunk's rows keep the
// order in which their groups were made, which is group-id order, so
// appending the partial states in group-id order lines them up with their
// keys. The partitions keep no hashes (the scatterer is hashless): whoever
// reads them, the aggregate phase or a spill, hashes the keys again, which
// costs less than writing and reading the hashes. DuckDB's radix aggregate
// keeps its rows in the partitioned data the same way and lets its hash
// table point at them.
//
// Before each batch the partitions the batch's rows hash to get room for
// all of them (reserveHashed), so that appending a group never allocates
// and a memory limit is met between batches, where the window can be
// flushed and the partitions spilled.

// usesDirect reports whether a pre-aggregation of these keys and
// aggregates writes its new groups straight into the partitions: where a
// key is a string (the keys are most of a window table then) and every
// partial state has a fixed width, so that a flush never allocates.
func usesDirect(keyTypes []vec.Type, specs []Spec) bool {
	str := false
	for _, t := range keyTypes {
		str = str || t == vec.String
	}
	if !str {
		return false
	}
	for _, sp := range specs {
		for _, t := range partialTypes(sp) {
			if t == vec.String {
				return false
			}
		}
	}
	return true
}

// defaultWindow returns the most groups a window table of these keys and
// aggregates holds when the configuration does not say.
func defaultWindow(keyTypes []vec.Type, specs []Spec) int {
	if usesDirect(keyTypes, specs) {
		return DefaultDirectGroups
	}
	return DefaultPreAggGroups
}

// prefetchMinSlots is the fewest slots whose window prefetches the slots
// its probes start at (see directWindow.group): a window of
// DefaultPreAggGroups groups fills twice as many, 1 MiB of slots, which
// the key bytes streaming into the partitions push out of the L2 cache
// between one probe of a slot and the next.
const prefetchMinSlots = 1 << 15

// keySlot is a slot of a direct window: the low half of its group's
// hash, the group's id plus one (0: an empty slot) and, for a single
// string key, a keyRef to the key's bytes in their chunk. A probe that
// finds its hash then compares the key straight from the slot, one miss
// instead of two through a per-group string header.
type keySlot struct {
	ref uint64 // keyRef of the group's key (single string keys)
	h32 uint32 // the hash's low 32 bits, which place it
	gid uint32
}

// A keyRef packs the address of a key's bytes, in its low 48 bits, with
// its length, in the high 16. A key of refLong bytes or more, or one whose
// address needs more bits, keeps only the length refLong and is compared
// through its chunk. The bytes lie in a chunk that the window's chunks
// keep alive, in a slab block that never moves, and a window is reset
// before its chunks are spilled or freed.
const (
	refLong     = 1<<16 - 1
	refAddrMask = 1<<48 - 1
)

// keyRef returns the keyRef of the key bytes b.
func keyRef(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	a := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	if len(b) >= refLong || a > refAddrMask {
		return refLong << 48
	}
	return a | uint64(len(b))<<48
}

// directWindow is the hash table of a direct window: slots holding each
// group's hash, id and key, and for each group the chunk and row its key
// went to.
type directWindow struct {
	slots  []keySlot
	mask   uint64
	n      int
	growAt int
	chunks []*chunk // per group, the chunk holding its row
	rows   []uint32 // per group, its row in that chunk
	// nullGid is the group of the NULL key of a single string key, or -1.
	nullGid int
	// repeating says most rows of the last batch repeated the row
	// before's key: the next batch's probes go unprefetched.
	repeating bool
	gids      []uint32 // a batch's group ids
	budget    *Budget
	// charged is the memory of slots, chunks and rows charged so far.
	charged int64
}

func newDirectWindow(hint int, budget *Budget) (*directWindow, error) {
	dw := &directWindow{budget: budget, nullGid: -1}
	if err := dw.alloc(tableSlots(hint)); err != nil {
		return nil, err
	}
	dw.chunks = make([]*chunk, 0, hint)
	dw.rows = make([]uint32, 0, hint)
	return dw, dw.charge()
}

// alloc gives the window size slots, moving its groups into them.
func (dw *directWindow) alloc(size int) error {
	old := dw.slots
	dw.slots = make([]keySlot, size)
	dw.mask = uint64(size - 1)
	dw.growAt = size * 7 / 10
	for _, s := range old {
		if s.gid == 0 {
			continue
		}
		j := uint64(s.h32) & dw.mask
		for dw.slots[j].gid != 0 {
			j = (j + 1) & dw.mask
		}
		dw.slots[j] = s
	}
	return nil
}

// keyIs reports whether v is the key of group g, whose slot holds ref.
func (dw *directWindow) keyIs(ref uint64, v []byte, g uint32) bool {
	n := int(ref >> 48)
	if n == refLong {
		return string(v) == string(dw.chunks[g].keys[0].Str(int(dw.rows[g])))
	}
	if n != len(v) {
		return false
	}
	if n == 0 {
		return int(g) != dw.nullGid // "" is not the NULL key's group
	}
	addr := uintptr(ref & refAddrMask)
	return string(v) == unsafe.String((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), n)
}

// bytes is the memory the window holds.
func (dw *directWindow) bytes() int64 {
	return int64(len(dw.slots))*16 + int64(cap(dw.chunks))*8 + int64(cap(dw.rows))*4 + int64(cap(dw.gids))*4
}

// charge charges the window's growth since the last call.
func (dw *directWindow) charge() error {
	b := dw.bytes()
	if b <= dw.charged {
		return nil
	}
	if err := dw.budget.Grow(b - dw.charged); err != nil {
		return fmt.Errorf("pre-aggregation table of %d groups: %w", dw.n, err)
	}
	dw.charged = b
	return nil
}

// reset empties the window, keeping its memory.
func (dw *directWindow) reset() {
	clear(dw.slots)
	dw.n, dw.nullGid = 0, -1
	clear(dw.chunks) // no pointers into chunks spilled or freed
	dw.chunks, dw.rows = dw.chunks[:0], dw.rows[:0]
}

// group finds or makes the group of each of the n rows of keys, whose
// hashes are hs, and returns their ids; a new group's key is appended to
// the current chunk of its partition in s, which
// reserveHashed gave room for them.
func (dw *directWindow) group(s *scatterer, keys []*vec.Vector, hs []uint64, n int) ([]uint32, error) {
	if cap(dw.gids) < n {
		dw.gids = make([]uint32, n)
		if err := dw.charge(); err != nil {
			return nil, err
		}
	}
	gids := dw.gids[:n]
	shift := s.shift
	var str *vec.Vector // the only key, a string without NULLs
	if len(keys) == 1 && keys[0].Type == vec.String && keys[0].Valid == nil {
		str = keys[0]
	}
	made := 0
	var written int64
	var strBytes [8]int64 // the new groups' bytes per key column (the first 8)
	// The slots hold keyRefs for a single string key, with or without
	// NULLs, and the window keeps one kind of key for its life.
	refs := len(keys) == 1 && keys[0].Type == vec.String
	hs = hs[:n]
	// A probe walks two dependent loads, each a likely miss once the
	// window outgrows the L2 cache: the slot, then the key's bytes. Row
	// by row the slot misses hardly overlap; prefetched two blocks ahead
	// they do. That pays where probes miss the caches: not in a window
	// small enough that its slots stay cached, nor for rows that mostly
	// repeat the row before and take no probe (SearchPhrase, mostly
	// empty). The key bytes are not prefetched: finding their address
	// loads the slot, which stalls where it has not arrived yet, and that
	// cost more than it saved.
	pf := len(dw.slots) >= prefetchMinSlots && !dw.repeating
	repeats := 0
	for i := 0; i < n; i++ {
		if pf && i%prefetchBlock == 0 {
			prefetchAhead((*pairSlot)(unsafe.Pointer(&dw.slots[0])), hs, i, dw.mask)
		}
		if str != nil && i > 0 {
			// A row whose key repeats the row before's joins its group
			// without a probe: most rows of a column that is mostly one
			// value (SearchPhrase, mostly empty), and runs in clustered
			// data. The lengths differ for most other rows.
			a, b, c := str.Offsets[i-1], str.Offsets[i], str.Offsets[i+1]
			if c-b == b-a && string(str.Bytes[b:c]) == string(str.Bytes[a:b]) {
				gids[i] = gids[i-1]
				repeats++
				continue
			}
		}
		h := hs[i]
		h32 := uint32(h)
		j := h & dw.mask
		for {
			sl := &dw.slots[j]
			if sl.gid == 0 {
				if dw.n >= dw.growAt {
					if err := dw.alloc(len(dw.slots) * 2); err != nil {
						return nil, err
					}
					if err := dw.charge(); err != nil {
						return nil, err
					}
					j = h & dw.mask
					continue
				}
				p := uint32(h >> shift)
				if shift == 64 {
					p = 0
				}
				c := s.cur[p]
				dw.chunks = append(dw.chunks, c)
				dw.rows = append(dw.rows, uint32(c.n))
				c.n++
				if str != nil {
					d := c.keys[0]
					v := str.Bytes[str.Offsets[i]:str.Offsets[i+1]]
					at := len(d.Bytes)
					d.Bytes = append(d.Bytes, v...)
					d.Offsets = append(d.Offsets, uint32(len(d.Bytes)))
					sl.ref = keyRef(d.Bytes[at:])
					if d.Valid != nil {
						d.Valid = append(d.Valid, true)
					}
					d.Len++
					written += int64(len(v)) + 4
					strBytes[0] += int64(len(v))
				} else {
					if refs {
						// The ref serves the next batch without NULLs.
						d := keys[0]
						sl.ref = 0
						if d.IsNull(i) {
							dw.nullGid = dw.n
						} else {
							at := len(c.keys[0].Bytes)
							sl.ref = keyRef(c.keys[0].Bytes[at : at+len(d.Str(i))])
						}
					}
					for col, k := range keys {
						c.keys[col].AppendFrom(k, i)
						if k.Type == vec.String {
							b := int64(len(k.Str(i)))
							written += b + 4
							if col < len(strBytes) {
								strBytes[col] += b
							}
						} else {
							written += 8
						}
					}
				}
				s.parts[p].rows++
				made++
				sl.h32 = h32
				dw.n++
				sl.gid = uint32(dw.n)
				gids[i] = sl.gid - 1
				break
			}
			if sl.h32 == h32 {
				g := sl.gid - 1
				if str != nil {
					if dw.keyIs(sl.ref, str.Bytes[str.Offsets[i]:str.Offsets[i+1]], g) {
						gids[i] = g
						break
					}
				} else if rowEqual(keys, i, dw.chunks[g].keys, int(dw.rows[g])) {
					gids[i] = g
					break
				}
			}
			j = (j + 1) & dw.mask
		}
	}
	dw.repeating = 2*repeats > n
	s.rows += int64(made)
	s.written += written
	for c := range min(len(keys), len(strBytes)) {
		if sc := s.strCol[c]; sc >= 0 {
			s.seen[sc] += strBytes[c] // for sizing the next chunks
		}
	}
	if err := dw.charge(); err != nil {
		return nil, err
	}
	return gids, nil
}

// rowEqual compares row i of keys with row r of the stored columns. NULL
// equals NULL, as GROUP BY requires.
func rowEqual(keys []*vec.Vector, i int, stored []*vec.Vector, r int) bool {
	for c, k := range keys {
		s := stored[c]
		rn, sn := k.IsNull(i), s.IsNull(r)
		if rn || sn {
			if rn != sn {
				return false
			}
			continue
		}
		switch k.Type {
		case vec.String:
			if !bytes.Equal(k.Str(i), s.Str(r)) {
				return false
			}
		case vec.Float64, vec.Float32:
			if FloatBits(k.F64[i]) != FloatBits(s.F64[r]) {
				return false
			}
		default:
			if k.I64[i] != s.I64[r] {
				return false
			}
		}
	}
	return true
}

// reserveHashed makes room, in the current chunk of every partition the
// rows of keys (whose hashes are hs) reach, for all of those rows, so that
// a direct window may append any of them as a new group without
// allocating; it first charges what earlier appends wrote beyond the
// blocks. A failure (ErrMemoryLimit) leaves the chunks as they were, but
// for empty new ones.
func (s *scatterer) reserveHashed(keys []*vec.Vector, hs []uint64) error {
	if err := s.settle(); err != nil {
		return err
	}
	n := len(hs)
	if n == 0 {
		return nil
	}
	blocks := s.blocks()
	s.countNeeds(keys, s.partitionsOf(hs))
	var err error
	for p, k := range s.count {
		if k != 0 && err == nil && !s.fits(s.cur[p], p, int(k)) {
			err = s.open(p, int(k), 0)
		}
	}
	clear(s.count)
	for _, need := range s.need {
		clear(need)
	}
	s.bytes += s.blocks() - blocks // charged by the slabs
	return err
}

// settle charges what appends wrote beyond the blocks the slab charged
// (validity slices live on the heap).
func (s *scatterer) settle() error {
	grown := max(s.written, s.blocks())
	if grown <= s.bytes {
		return nil
	}
	if err := s.budget().Grow(grown - s.bytes); err != nil {
		return err
	}
	s.bytes = grown
	return nil
}

// addDirect folds a batch of m rows, whose hashes are hs, into a direct
// window, first making room in their partitions for every row to be a
// new group.
func (pa *preAgg) addDirect(keys, args []*vec.Vector, hs []uint64, m int) error {
	reserve := pa.part.reserveHashed
	if pa.reserve != nil {
		reserve = pa.reserve
	}
	if err := reserve(keys, hs); err != nil {
		return err
	}
	dw := pa.dw
	gids, err := dw.group(pa.part, keys, hs, m)
	if err != nil {
		return err
	}
	for j, st := range pa.gs.states {
		if err := st.Resize(dw.n); err != nil {
			return err
		}
		if err := st.Update(gids, args[j], m); err != nil {
			return err
		}
	}
	return nil
}

// flushDirect appends the partial states of a direct window's groups to
// their rows, in group-id order, which is each chunk's row order. The
// chunks were sized for the rows, so this never allocates.
func (pa *preAgg) flushDirect(groups int) {
	dw := pa.dw
	col := 0
	chunks := dw.chunks[:groups]
	for _, st := range pa.gs.states {
		for _, pv := range st.partial(groups) {
			if pv.Type.IsFloat() {
				for g, c := range chunks {
					d := c.args[col]
					d.F64 = append(d.F64, pv.F64[g])
					d.Len++
				}
			} else {
				for g, c := range chunks {
					d := c.args[col]
					d.I64 = append(d.I64, pv.I64[g])
					d.Len++
				}
			}
			col++
		}
	}
	pa.part.written += int64(groups) * int64(col) * 8
}

// emptyDirect writes a direct window's partial states into its rows and
// empties the window, without judging it (its partitions are about to be
// spilled, and its rows of window so far count toward the next judgement).
func (pa *preAgg) emptyDirect() {
	groups := pa.dw.n
	if groups == 0 {
		return
	}
	pa.flushDirect(groups)
	pa.stats.Partial += int64(groups)
	pa.stats.Flushes++
	pa.dw.reset()
	for _, st := range pa.gs.states {
		st.reset()
	}
}
