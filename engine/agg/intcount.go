package agg

import (
	"fmt"
	"slices"
	"unsafe"

	"cachebook/engine/vec"
)

// The tuned path for the article's query shape: one integer key and only
// count(*) aggregates (SELECT UserID, count(*) FROM hits GROUP BY UserID).
// The key and its count share one 16-byte slot, so a probe touches one cache
// line and the update writes the same line; the radix scatter stages eight
// keys per partition (one cache line) before writing them out, so the 4096
// output streams are written a full line at a time, on amd64 with
// non-temporal stores that skip reading each line before overwriting it
// (the software write-combining buffers of the radix join literature);
// tables and partition buffers come from a huge-page arena on Linux.

// countFast reports whether the tuned path applies.
func countFast(keyTypes []vec.Type, specs []Spec) bool {
	if len(keyTypes) != 1 || len(specs) == 0 {
		return false
	}
	switch keyTypes[0] {
	case vec.String, vec.Float64, vec.Float32, vec.Null:
		return false
	}
	for _, s := range specs {
		if s.Kind != CountStar {
			return false
		}
	}
	return true
}

// countTable maps int64 keys to counts: slot i is slots[2i] (key) and
// slots[2i+1] (count, 0 for an empty slot).
type countTable struct {
	slots  []int64
	mask   uint64
	n      int
	growAt int
	arena  *Arena
	budget *Budget
}

func newCountTable(hint int, arena *Arena, budget *Budget) (*countTable, error) {
	size := tableSlots(hint)
	t := &countTable{arena: arena, budget: budget}
	return t, t.alloc(size)
}

func (t *countTable) alloc(size int) error {
	if err := t.budget.Grow(int64(size) * 16); err != nil {
		return fmt.Errorf("hash table of %d slots: %w", size, err)
	}
	s, err := t.arena.Int64s(2*size, true)
	if err != nil {
		return err
	}
	firstWrite(s)
	t.slots, t.mask, t.growAt = s, uint64(size-1), size*7/10
	return nil
}

// reset empties the table, keeping (and re-zeroing) only as much of its
// memory as hint groups need.
func (t *countTable) reset(hint int) error {
	size := tableSlots(hint)
	if 2*size > cap(t.slots) {
		t.budget.Grow(-int64(len(t.slots)) * 8)
		t.n = 0
		return t.alloc(size)
	}
	// Charged as used, as alloc charges: the worker gives back what
	// len(t.slots) says when it is done.
	if err := t.budget.Grow(int64(2*size-len(t.slots)) * 8); err != nil {
		return fmt.Errorf("hash table of %d slots: %w", size, err)
	}
	t.slots = t.slots[:2*size]
	clear(t.slots)
	t.mask, t.growAt, t.n = uint64(size-1), size*7/10, 0
	return nil
}

func (t *countTable) grow() error {
	old := t.slots
	if err := t.alloc(len(old)); err != nil { // len(old) int64s = twice the slots
		return err
	}
	t.budget.Grow(-int64(len(old)) * 8)
	for i := 0; i < len(old); i += 2 {
		if old[i+1] == 0 {
			continue
		}
		j := Mix64(uint64(old[i])) & t.mask
		for t.slots[2*j+1] != 0 {
			j = (j + 1) & t.mask
		}
		t.slots[2*j], t.slots[2*j+1] = old[i], old[i+1]
	}
	return nil
}

// add counts keys, whose hashes are Mix64 of the key.
func (t *countTable) add(keys []int64) error {
	for _, k := range keys {
		j := Mix64(uint64(k)) & t.mask
		for {
			s := t.slots[2*j : 2*j+2 : 2*j+2]
			if s[1] == 0 {
				if t.n >= t.growAt {
					if err := t.grow(); err != nil {
						return err
					}
					j = Mix64(uint64(k)) & t.mask
					continue
				}
				s[0], s[1] = k, 1
				t.n++
				break
			}
			if s[0] == k {
				s[1]++
				break
			}
			j = (j + 1) & t.mask
		}
	}
	return nil
}

// merge adds o's counts into t.
func (t *countTable) merge(o *countTable) error {
	s := o.slots
	for i := 0; i+1 < len(s); i += 2 {
		k, c := s[i], s[i+1]
		if c == 0 {
			continue
		}
		j := Mix64(uint64(k)) & t.mask
		for {
			d := t.slots[2*j : 2*j+2 : 2*j+2]
			if d[1] == 0 {
				if t.n >= t.growAt {
					if err := t.grow(); err != nil {
						return err
					}
					j = Mix64(uint64(k)) & t.mask
					continue
				}
				d[0], d[1] = k, c
				t.n++
				break
			}
			if d[0] == k {
				d[1] += c
				break
			}
			j = (j + 1) & t.mask
		}
	}
	return nil
}

// emit appends every group to keys and counts. Every slot is copied to
// the next free place and the place advances only past a group: half the
// slots are empty, at random, so a branch on each mispredicted about every
// other slot.
func (t *countTable) emit(keys, counts *vec.Vector) {
	s := t.slots
	o := len(keys.I64)
	// Room for the groups and one slot more: an empty slot after the last
	// group is still written, one place past it.
	k := slices.Grow(keys.I64, t.n+1)[:o+t.n+1]
	c := slices.Grow(counts.I64, t.n+1)[:o+t.n+1]
	for i := 0; i+1 < len(s); i += 2 {
		k[o], c[o] = s[i], s[i+1]
		inc := 0
		if s[i+1] != 0 {
			inc = 1
		}
		o += inc
	}
	keys.I64, counts.I64 = k[:o], c[:o]
	keys.Len, counts.Len = o, o
}

// nonNull returns the non-NULL keys of k and the number of NULLs.
func nonNull(k *vec.Vector) ([]int64, int64) {
	var nulls int64
	buf := make([]int64, 0, k.Len)
	for i, v := range k.I64[:k.Len] {
		if k.Valid[i] {
			buf = append(buf, v)
		} else {
			nulls++
		}
	}
	return buf, nulls
}

// wcLine is the number of keys staged per partition: one 64-byte line.
const wcLine = 8

// countScatter is one worker's partitions for the tuned radix path.
type countScatter struct {
	wc    []int64 // nparts × wcLine staged keys
	fill  []uint8
	parts [][]int64
	nulls int64
}

func newCountScatter(bits int, rowsHint int64, arena *Arena) (*countScatter, error) {
	np := 1 << bits
	s := &countScatter{wc: make([]int64, np*wcLine), fill: make([]uint8, np), parts: make([][]int64, np)}
	// One slab, carved into per-partition buffers with room for an even
	// share plus slack; a partition that overflows continues on the heap.
	per := (int(rowsHint/int64(np))*5/4 + 2*wcLine) &^ (wcLine - 1) // whole lines
	slab, err := arena.Int64s(per*np, false)
	if err != nil {
		return nil, err
	}
	for p := range s.parts {
		s.parts[p] = slab[p*per : p*per : (p+1)*per]
	}
	return s, nil
}

func (s *countScatter) scatter(keys []int64, shift uint) {
	wc, fill, parts := s.wc, s.fill, s.parts
	for _, k := range keys {
		p := uint32(Mix64(uint64(k)) >> shift)
		if shift == 64 {
			p = 0
		}
		f := fill[p]
		wc[int(p)*wcLine+int(f)] = k
		f++
		if f == wcLine {
			line := wc[int(p)*wcLine : int(p)*wcLine+wcLine]
			d := parts[p]
			if n := len(d); cap(d)-n >= wcLine && lineAligned(d, n) {
				storeLine((*[wcLine]int64)(d[n:n+wcLine]), (*[wcLine]int64)(line))
				parts[p] = d[:n+wcLine]
			} else {
				parts[p] = append(d, line...)
			}
			f = 0
		}
		fill[p] = f
	}
}

// lineAligned reports whether element n of d starts a 64-byte line. The
// partitions start on lines (the slab is page-aligned and each partition's
// share a multiple of wcLine keys) and grow a line at a time, so every
// full line lands on one; a partition that overflowed onto the heap may
// not.
func lineAligned(d []int64, n int) bool {
	return (uintptr(unsafe.Pointer(unsafe.SliceData(d)))+uintptr(n)*8)&63 == 0
}

// flush moves the staged keys into the partitions and orders the lines
// stored around the cache before whatever the worker does next: the
// workers that aggregate the partitions read them.
func (s *countScatter) flush() {
	for p, f := range s.fill {
		s.parts[p] = append(s.parts[p], s.wc[p*wcLine:p*wcLine+int(f)]...)
		s.fill[p] = 0
	}
	storeFence()
}

// partitionEstimate sizes each radix partition's hash table from the
// partitions one worker has already aggregated. The radix bits spread the
// groups evenly, so groups per row carry over from one partition to the
// next; a worker's first partition, with nothing to go on, is sized for a
// quarter of its rows. Sizing every partition for a quarter of its rows
// made tables of unique keys grow twice per partition.
type partitionEstimate struct {
	rows, groups int
}

// hint returns the groups to size a table for before it takes n rows.
func (e *partitionEstimate) hint(n int) int {
	if e.rows == 0 {
		return n / 4
	}
	g := int(float64(e.groups) / float64(e.rows) * float64(n))
	return min(g+g/8, n) // an eighth spare: partitions differ a little
}

// saw records that a partition of n rows had groups groups.
func (e *partitionEstimate) saw(n, groups int) {
	e.rows += n
	e.groups += groups
}

// CountFast reports whether Aggregate runs the tuned single-integer-key
// count(*) loop for these keys and aggregates (ChooseLoop, unless told
// generic), so that a plan can show which loop runs.
func CountFast(keyTypes []vec.Type, specs []Spec) bool { return countFast(keyTypes, specs) }
