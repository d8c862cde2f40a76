package agg

import (
	"cmp"
	"slices"

	"cachebook/engine/vec"
)

// Packed keys: a GROUP BY of several fixed-width integer columns (BOOLEAN,
// SMALLINT, INTEGER, BIGINT, UBIGINT, DATE, TIMESTAMP, ...) whose widths
// sum to at most 128 bits is hashed as one or two 64-bit words into which
// the columns are packed, each at a bit offset of its own. One word hashes
// with a single Mix64, a bijection, so the hash is the key itself: the
// table compares it inline like a single integer key and never reads the
// stored keys. Two words hash with two Mix64 and are compared column by
// column after the hashes match.
//
// A column's width is its type's: 16 bits for SMALLINT, 32 for INTEGER and
// DATE, 1 for BOOLEAN, 64 otherwise. Each column gets a NULL bit where the
// words have room for one per column; otherwise the layout has none. The
// hash of a row is a function of its values only, whatever they are, but
// the packing is only injective for values within their type's width and
// NULLs with a bit of their own: a table that meets a batch with a value
// out of range (a DATE beyond INTEGER, say) or a NULL it has no bit for
// turns to the generic loop for good (Table.demote), which compares the
// stored keys and so never relies on the packing.

// maxPackCols is the most key columns a packed layout holds.
const maxPackCols = 8

// packLayout places the key columns in one or two words. The zero value
// (words == 0) means the keys cannot be packed.
type packLayout struct {
	words int // 1 or 2; 0: not packable
	cols  int
	nulls bool // every column has a NULL bit
	bits  int  // value bits used, without NULL bits
	col   [maxPackCols]packCol
}

// packCol is where one column goes.
type packCol struct {
	word  uint8 // 0 or 1
	shift uint8 // of the value
	width uint8 // bits: 1, 16, 32 or 64
	null  uint8 // shift of the NULL bit in word nullWord (if nulls)
	nword uint8
}

// packWidth returns the bits a key of type t takes packed, or 0 where it
// cannot be packed.
func packWidth(t vec.Type) int {
	switch t {
	case vec.Bool:
		return 1
	case vec.Int16:
		return 16
	case vec.Int32, vec.Date:
		return 32
	case vec.Int64, vec.UInt64, vec.Timestamp, vec.TimestampNS, vec.Interval:
		return 64
	}
	return 0
}

// packLayoutOf returns the layout of keys of types types: packable where
// there are 2 to maxPackCols of them, all of fixed width, placed widest
// first into as few words (at most two) as hold them without splitting a
// column.
func packLayoutOf(types []vec.Type) packLayout {
	var l packLayout
	if len(types) < 2 || len(types) > maxPackCols {
		return l
	}
	order := make([]int, 0, maxPackCols)
	for c, t := range types {
		w := packWidth(t)
		if w == 0 {
			return l
		}
		order = append(order, c)
		l.bits += w
		l.col[c].width = uint8(w)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(l.col[b].width, l.col[a].width)
	})
	var used [2]int
	for _, c := range order {
		w := int(l.col[c].width)
		switch {
		case used[0]+w <= 64:
			l.col[c].word, l.col[c].shift = 0, uint8(used[0])
			used[0] += w
		case used[1]+w <= 64:
			l.col[c].word, l.col[c].shift = 1, uint8(used[1])
			used[1] += w
		default:
			return packLayout{}
		}
	}
	l.words, l.cols = 1, len(types)
	if used[1] > 0 {
		l.words = 2
	}
	// NULL bits, one per column, where the words used have room.
	free := 64 - used[0]
	if l.words == 2 {
		free += 64 - used[1]
	}
	if free >= len(types) {
		l.nulls = true
		for c := range types {
			w := 0
			if used[0] == 64 {
				w = 1
			}
			l.col[c].nword, l.col[c].null = uint8(w), uint8(used[w])
			used[w]++
		}
	}
	return l
}

// packLayoutOfKeys is packLayoutOf for the types of key vectors, without
// allocating where there are too many keys to pack.
func packLayoutOfKeys(keys []*vec.Vector) packLayout {
	if len(keys) < 2 || len(keys) > maxPackCols {
		return packLayout{}
	}
	var types [maxPackCols]vec.Type
	for c, k := range keys {
		types[c] = k.Type
	}
	return packLayoutOf(types[:len(keys)])
}

// mask returns the low width bits.
func (pc packCol) mask() uint64 {
	if pc.width == 64 {
		return ^uint64(0)
	}
	return 1<<pc.width - 1
}

// pack fills w0 (and w1 with two words) with the packed keys of rows
// [lo, lo+len(w0)). Out-of-range values are truncated: the result is still
// a function of the values, which is all a hash needs.
func (l *packLayout) pack(keys []*vec.Vector, lo int, w0, w1 []uint64) {
	n := len(w0)
	clear(w0)
	if l.words == 2 {
		w1 = w1[:n]
		clear(w1)
	}
	for c, k := range keys {
		pc := l.col[c]
		dst := w0
		if pc.word == 1 {
			dst = w1
		}
		ks := k.I64[lo : lo+n]
		m, sh := pc.mask(), pc.shift
		if k.Valid == nil {
			for i, v := range ks {
				dst[i] |= (uint64(v) & m) << sh
			}
			continue
		}
		nd := w0
		if pc.nword == 1 {
			nd = w1
		}
		valid := k.Valid[lo : lo+n]
		for i, v := range ks {
			if valid[i] {
				dst[i] |= (uint64(v) & m) << sh
			} else if l.nulls {
				nd[i] |= 1 << pc.null
			}
		}
	}
}

// hash fills out[:n] with the hashes of the packed keys: Mix64 of the one
// word, or of the first word's Mix64 xor the second.
func (l *packLayout) hash(keys []*vec.Vector, n int, out []uint64) {
	out = out[:n]
	if l.words == 1 {
		l.pack(keys, 0, out, nil)
		for i, w := range out {
			out[i] = Mix64(w)
		}
		return
	}
	var w1 [256]uint64
	for lo := 0; lo < n; lo += len(w1) {
		m := min(len(w1), n-lo)
		w0 := out[lo : lo+m]
		l.pack(keys, lo, w0, w1[:m])
		for i, w := range w0 {
			w0[i] = Mix64(Mix64(w) ^ w1[i])
		}
	}
}

// injective reports whether packing rows [0, n) of keys with l loses
// nothing: every value within its column's width (sign-extended for the
// signed types) and NULLs only where the layout has bits for them.
func (l *packLayout) injective(keys []*vec.Vector, n int) bool {
	for c, k := range keys {
		pc := l.col[c]
		if k.Valid != nil && !l.nulls {
			for _, ok := range k.Valid[:n] {
				if !ok {
					return false
				}
			}
		}
		if pc.width == 64 {
			continue
		}
		ks := k.I64[:n]
		var bad bool
		switch pc.width {
		case 1:
			for _, v := range ks {
				bad = bad || uint64(v) > 1
			}
		case 16:
			for _, v := range ks {
				bad = bad || int64(int16(v)) != v
			}
		case 32:
			for _, v := range ks {
				bad = bad || int64(int32(v)) != v
			}
		}
		if bad {
			// A NULL's value is not read: it may hold anything.
			if k.Valid == nil {
				return false
			}
			for i, v := range ks {
				if k.Valid[i] && !fits(v, int(pc.width)) {
					return false
				}
			}
		}
	}
	return true
}

// fits reports whether v is within a signed (or, for 1 bit, 0/1) integer
// of width bits.
func fits(v int64, width int) bool {
	switch width {
	case 1:
		return uint64(v) <= 1
	case 16:
		return int64(int16(v)) == v
	case 32:
		return int64(int32(v)) == v
	}
	return true
}

// packable reports whether the table can group a batch of keys with its
// packed loop: the batch's key types are the table's (so the Hasher
// packed them with the same layout) and packing its rows is injective.
func (t *Table) packable(keys []*vec.Vector, n int) bool {
	if len(keys) != len(t.keys) {
		return false
	}
	for c, k := range keys {
		if k.Type != t.keys[c].Type {
			return false
		}
	}
	return t.pack.injective(keys, n)
}

// groupPacked1 is Group for keys packed into one word. Its hash, Mix64 of
// the word, is a bijection: equal hashes are equal keys, so a probe
// compares the slot's word and never reads the stored keys.
func (t *Table) groupPacked1(keys []*vec.Vector, hashes []uint64, n int, gids []uint32) error {
	hashes = hashes[:n]
	gids = gids[:n]
	for i, h := range hashes {
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
			if s.word == h {
				gids[i] = s.gid - 1
				break
			}
			j = (j + 1) & t.mask
		}
	}
	return nil
}

// groupPacked2 is Group for keys packed into two words: a probe whose
// hash matches compares the integer columns, with no type switch.
func (t *Table) groupPacked2(keys []*vec.Vector, hashes []uint64, n int, gids []uint32) error {
	hashes = hashes[:n]
	gids = gids[:n]
	// Without NULLs in the batch or the stored keys (none is stored
	// while the batch has none) the values alone are compared.
	noNulls := true
	for c, k := range keys {
		noNulls = noNulls && k.Valid == nil && t.keys[c].Valid == nil
	}
	for i, h := range hashes {
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
			if s.word == h && (noNulls && t.equalValues(keys, i, int(s.gid-1)) || !noNulls && t.equalInts(keys, i, int(s.gid-1))) {
				gids[i] = s.gid - 1
				break
			}
			j = (j + 1) & t.mask
		}
	}
	return nil
}

// equalValues is equal for integer key columns without NULLs.
func (t *Table) equalValues(keys []*vec.Vector, i, g int) bool {
	for c, k := range keys {
		if k.I64[i] != t.keys[c].I64[g] {
			return false
		}
	}
	return true
}

// equalInts is equal for integer key columns.
func (t *Table) equalInts(keys []*vec.Vector, i, g int) bool {
	for c, k := range keys {
		s := t.keys[c]
		kn := k.Valid != nil && !k.Valid[i]
		sn := s.Valid != nil && !s.Valid[g]
		if kn != sn || !kn && k.I64[i] != s.I64[g] {
			return false
		}
	}
	return true
}

// PackedKeys returns the bytes and words keys of keyTypes take packed
// (packed.go), or words == 0 where they are not packed. NULL bits are not
// counted in the bytes.
func PackedKeys(keyTypes []vec.Type) (bytes, words int) {
	l := packLayoutOf(keyTypes)
	if l.words == 0 {
		return 0, 0
	}
	return (l.bits + 7) / 8, l.words
}
