package agg

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"cachebook/engine/vec"
)

// ErrMemoryLimit is wrapped by every error caused by a query passing its
// memory budget.
var ErrMemoryLimit = errors.New("memory limit exceeded")

// Budget accounts the memory a query allocates for tables, states and
// partitions. Grow fails once the limit would be exceeded, so a query that
// would exhaust the machine fails with a clear error instead. It is safe for
// concurrent use.
type Budget struct {
	Limit int64 // bytes; <= 0 means unlimited
	// Parent, if not nil, is charged with everything charged here, and
	// its limit applies too: an operator's share of its statement's budget.
	Parent *Budget
	// Observe, if not nil, is told of every change that was granted (an
	// operator's statistics of its memory).
	Observe func(n int64)
	used    atomic.Int64
}

// Grow records n more bytes in use, or returns an error if that would pass
// the limit.
func (b *Budget) Grow(n int64) error {
	if b == nil {
		return nil
	}
	if b.Parent != nil {
		if err := b.Parent.Grow(n); err != nil {
			return err
		}
	}
	u := b.used.Add(n)
	if b.Limit > 0 && u > b.Limit {
		b.used.Add(-n)
		b.Parent.Grow(-n)
		return fmt.Errorf("query needs more than its memory limit of %s (already %s in use, %s more requested); raise it with SET memory_limit or use fewer groups: %w",
			FormatBytes(b.Limit), FormatBytes(u-n), FormatBytes(n), ErrMemoryLimit)
	}
	if b.Observe != nil {
		b.Observe(n)
	}
	return nil
}

// Used returns the bytes currently recorded.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// FormatBytes renders n with a binary unit, e.g. "512.0 MiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// slot is one open-addressing cell: 16 bytes, four to a cache line. For a
// single integer key, word holds the key itself (so a probe touches one line);
// otherwise it holds the full hash, checked before comparing stored keys.
// gid is the group id plus one; zero marks an empty cell.
type slot struct {
	word uint64
	gid  uint32
	_    uint32
}

// Table maps group keys to dense group ids 0..Len()-1 with linear probing
// over a power-of-two array of slots. The slot index comes from the low bits
// of the hash; radix partitioning uses the top bits, so within a partition
// slots still spread evenly. Keys of every group are kept in column vectors,
// in group-id order, which become the key columns of the output.
type Table struct {
	intKey  bool // single key stored in I64: compare the key inline
	slots   []slot
	mask    uint64
	n       int
	growAt  int
	nullGid int // intKey only: group id of the NULL key, or -1
	keys    []*vec.Vector
	budget  *Budget
	// keyBytes is the memory of the stored keys charged to the budget so
	// far; Group charges their growth after each batch.
	keyBytes int64
	// pack is the layout of packed keys (packed.go) while the table
	// runs a packed loop; words == 0 once it runs the generic one.
	// packInit is the layout it starts with again on restart.
	pack, packInit packLayout
}

// tableSlots returns the slots a hash table sized for hint groups starts
// with: 16, doubled while 70% of them is below hint (every table here
// grows at 70% full).
func tableSlots(hint int) int {
	size := 16
	for size*7/10 < hint {
		size *= 2
	}
	return size
}

// NewTable returns a table for keys of the given types, sized for about
// hint groups without growing.
func NewTable(keyTypes []vec.Type, hint int, budget *Budget) (*Table, error) {
	t := &Table{nullGid: -1, budget: budget}
	t.intKey = len(keyTypes) == 1 && keyTypes[0] != vec.String && !keyTypes[0].IsFloat() && keyTypes[0] != vec.Null
	t.packInit = packLayoutOf(keyTypes)
	t.pack = t.packInit
	for _, kt := range keyTypes {
		t.keys = append(t.keys, vec.NewVector(kt, 0))
	}
	if err := t.alloc(tableSlots(hint)); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Table) alloc(size int) error {
	if err := t.budget.Grow(int64(size) * 16); err != nil {
		return fmt.Errorf("hash table of %d slots: %w", size, err)
	}
	if t.slots != nil {
		t.budget.Grow(-int64(len(t.slots)) * 16)
	}
	t.slots = make([]slot, size)
	firstWrite(t.slots)
	t.mask = uint64(size - 1)
	t.growAt = size * 7 / 10
	return nil
}

// restart empties the table for about hint groups of its own after its
// keys went out as output (Keys), charge and all, so that unlike reset it
// cannot reuse their memory. Like countTable.reset it keeps (and zeroes
// again) as much of its slots as they need, charged as they are used: a
// radix worker that aggregates one partition after another does not fault
// a fresh array in for each (GROUP BY URL over 20M rows: 256 tables of up
// to 1 MiB). A larger table gets fresh, already zeroed slots.
func (t *Table) restart(hint int) error {
	if size := tableSlots(hint); size > cap(t.slots) {
		if err := t.alloc(size); err != nil {
			return err
		}
	} else {
		if err := t.budget.Grow(int64(size-len(t.slots)) * 16); err != nil {
			return fmt.Errorf("hash table of %d slots: %w", size, err)
		}
		t.slots = t.slots[:size]
		clear(t.slots)
		t.mask, t.growAt = uint64(size-1), size*7/10
	}
	keys := make([]*vec.Vector, len(t.keys)) // the old slice went out too
	for i, k := range t.keys {
		keys[i] = vec.NewVector(k.Type, 0)
	}
	t.keys, t.keyBytes = keys, 0
	t.n, t.nullGid = 0, -1
	t.pack = t.packInit
	return nil
}

// release returns the table's slots and keys to its budget, once it is
// done with.
func (t *Table) release() {
	t.budget.Grow(-(int64(len(t.slots))*16 + t.keyBytes))
	t.slots, t.keys, t.keyBytes = nil, nil, 0
}

// Len returns the number of groups.
func (t *Table) Len() int { return t.n }

// Keys returns the key columns, one value per group in group-id order.
func (t *Table) Keys() []*vec.Vector { return t.keys }

// Slots returns the table's capacity in slots.
func (t *Table) Slots() int { return len(t.slots) }

func (t *Table) grow() error {
	old := t.slots
	if err := t.alloc(len(old) * 2); err != nil {
		return err
	}
	for _, s := range old {
		if s.gid == 0 {
			continue
		}
		h := s.word
		if t.intKey {
			h = Mix64(s.word)
		}
		j := h & t.mask
		for t.slots[j].gid != 0 {
			j = (j + 1) & t.mask
		}
		t.slots[j] = s
	}
	return nil
}

// Group finds or creates the group of each of the n rows of keys, whose
// hashes (from Hasher.Hash) are given, and writes the group ids to gids.
func (t *Table) Group(keys []*vec.Vector, hashes []uint64, n int, gids []uint32) error {
	var err error
	switch {
	case t.intKey:
		err = t.groupInt(keys[0], hashes, n, gids)
	case t.pack.words > 0 && t.packable(keys, n):
		if t.pack.words == 1 {
			err = t.groupPacked1(keys, hashes, n, gids)
		} else {
			err = t.groupPacked2(keys, hashes, n, gids)
		}
	default:
		t.pack = packLayout{} // for good, until restart
		if len(keys) == 1 && keys[0].Type == vec.String && keys[0].Valid == nil && t.keys[0].Valid == nil {
			err = t.groupString(keys[0], hashes, n, gids)
			break
		}
		err = t.groupGeneric(keys, hashes, n, gids)
	}
	if err != nil {
		return err
	}
	return t.chargeKeys(t.n)
}

// chargeKeys charges the growth of the stored keys since the last call:
// with string keys or several key columns they, not the slots, are most of
// a table's memory. groups is the number of groups they have room for, for
// the error.
func (t *Table) chargeKeys(groups int) error {
	var b int64
	for _, k := range t.keys {
		b += capBytes(k)
	}
	if b <= t.keyBytes {
		return nil
	}
	if err := t.budget.Grow(b - t.keyBytes); err != nil {
		return fmt.Errorf("GROUP BY keys of %d groups: %w", groups, err)
	}
	t.keyBytes = b
	return nil
}

// Reserve makes room for rows more groups' keys and, for each string key
// column c, strBytes[c] more bytes of key data (strBytes may be nil), so
// that a table whose size is known ahead does not grow its key columns by
// doubling: each doubling copies the keys into fresh memory and leaves the
// old copy to the collector. The room is charged to the budget.
func (t *Table) Reserve(rows int, strBytes []int64) error {
	for c, k := range t.keys {
		switch {
		case k.Type.IsFloat():
			k.F64 = growNoZero(k.F64, rows)
		case k.Type == vec.String:
			k.Offsets = growNoZero(k.Offsets, rows)
			if c < len(strBytes) && strBytes[c] > 0 {
				k.Bytes = growNoZero(k.Bytes, int(strBytes[c]))
			}
		default:
			k.I64 = growNoZero(k.I64, rows)
		}
	}
	return t.chargeKeys(t.n + rows)
}

// capBytes is the memory v's arrays hold, used or not.
func capBytes(v *vec.Vector) int64 {
	return int64(cap(v.I64))*8 + int64(cap(v.F64))*8 + int64(cap(v.Bytes)) + int64(cap(v.Offsets))*4 + int64(cap(v.Valid))
}

// KeyBytes returns the memory of the stored keys charged to the budget.
// Whoever takes the keys (Keys) as its output takes over that charge.
func (t *Table) KeyBytes() int64 { return t.keyBytes }

func (t *Table) groupInt(k *vec.Vector, hashes []uint64, n int, gids []uint32) error {
	ks := k.I64[:n]
	hashes = hashes[:n]
	gids = gids[:n]
	for i, key := range ks {
		if k.Valid != nil && !k.Valid[i] {
			if t.nullGid < 0 {
				t.nullGid = t.n
				t.keys[0].AppendNull()
				t.n++
			}
			gids[i] = uint32(t.nullGid)
			continue
		}
		j := hashes[i] & t.mask
		for {
			s := &t.slots[j]
			if s.gid == 0 {
				if t.n >= t.growAt {
					if err := t.grow(); err != nil {
						return err
					}
					j = hashes[i] & t.mask
					continue
				}
				s.word = uint64(key)
				t.n++
				s.gid = uint32(t.n)
				t.keys[0].AppendInt(key)
				gids[i] = s.gid - 1
				break
			}
			if s.word == uint64(key) {
				gids[i] = s.gid - 1
				break
			}
			j = (j + 1) & t.mask
		}
	}
	return nil
}

func (t *Table) groupGeneric(keys []*vec.Vector, hashes []uint64, n int, gids []uint32) error {
	for i := 0; i < n; i++ {
		h := hashes[i]
		j := h & t.mask
		for {
			s := &t.slots[j]
			if s.gid == 0 {
				if t.n >= t.growAt {
					if err := t.grow(); err != nil {
						return err
					}
					j = h & t.mask
					continue
				}
				s.word = h
				for c, k := range keys {
					t.keys[c].AppendFrom(k, i)
				}
				t.n++
				s.gid = uint32(t.n)
				gids[i] = s.gid - 1
				break
			}
			if s.word == h && t.equal(keys, i, int(s.gid-1)) {
				gids[i] = s.gid - 1
				break
			}
			j = (j + 1) & t.mask
		}
	}
	return nil
}

// groupString is groupGeneric for a single string key where neither the
// rows nor the stored keys hold a NULL: the aggregate phase of GROUP BY
// URL. A probe there walks three dependent loads, the slot, the stored
// key's offset and its bytes. It prefetches the slots of the rows two
// blocks ahead, and only the slots: a partition's keys were just written
// and mostly stay cached, and finding a key's address to prefetch it means
// loading its slot, which stalls on the slots not yet arrived.
func (t *Table) groupString(k *vec.Vector, hashes []uint64, n int, gids []uint32) error {
	d := t.keys[0]
	hashes, gids = hashes[:n], gids[:n]
	for i := 0; i < n; i++ {
		if i%prefetchBlock == 0 {
			prefetchAhead((*pairSlot)(unsafe.Pointer(&t.slots[0])), hashes, i, t.mask)
		}
		h := hashes[i]
		v := k.Bytes[k.Offsets[i]:k.Offsets[i+1]]
		j := h & t.mask
		for {
			s := &t.slots[j]
			if s.gid == 0 {
				if t.n >= t.growAt {
					if err := t.grow(); err != nil {
						return err
					}
					j = h & t.mask
					continue
				}
				s.word = h
				d.Bytes = append(d.Bytes, v...)
				d.Offsets = append(d.Offsets, uint32(len(d.Bytes)))
				d.Len++
				t.n++
				s.gid = uint32(t.n)
				gids[i] = s.gid - 1
				break
			}
			if s.word == h {
				g := s.gid - 1
				if string(v) == string(d.Bytes[d.Offsets[g]:d.Offsets[g+1]]) {
					gids[i] = g
					break
				}
			}
			j = (j + 1) & t.mask
		}
	}
	return nil
}

// equal compares row i of keys with the stored keys of group g. NULL equals
// NULL, as GROUP BY requires.
func (t *Table) equal(keys []*vec.Vector, i, g int) bool {
	for c, k := range keys {
		s := t.keys[c]
		rn, sn := k.IsNull(i), s.IsNull(g)
		if rn || sn {
			if rn != sn {
				return false
			}
			continue
		}
		switch k.Type {
		case vec.String:
			if !bytes.Equal(k.Str(i), s.Str(g)) {
				return false
			}
		case vec.Float64, vec.Float32:
			if FloatBits(k.F64[i]) != FloatBits(s.F64[g]) {
				return false
			}
		default:
			if k.I64[i] != s.I64[g] {
				return false
			}
		}
	}
	return true
}
