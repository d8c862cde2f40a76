package agg

// The observed pass's group sets (TraceAggregate): a real groupSet whose
// accesses are read back after each call.

import (
	"unsafe"

	"cachebook/engine/vec"
)

// tracedSet is a real groupSet whose accesses are reported.
type tracedSet struct {
	gs        *groupSet
	tr        *traceBuf
	w         int
	slots     int // buffer of the table's slots
	slotsData unsafe.Pointer
	keys      []tracedKey
	states    [][]tracedSlice // per spec, per word (State.Resize's arrays)
	hashes    tracedSlice     // groupSet.hashes
	gids      tracedSlice     // groupSet.gids (4-byte entries, counted as 8)
}

// tracedKey is a table's stored key column: its fixed-width values or
// string offsets (offs), and its string bytes (data).
type tracedKey struct {
	str        bool
	data, offs tracedSlice
	dataPtr    unsafe.Pointer
	offsPtr    unsafe.Pointer
}

func newTracedKeys(n int) []tracedKey {
	ks := make([]tracedKey, n)
	for i := range ks {
		ks[i].data.buf, ks[i].offs.buf = -1, -1
	}
	return ks
}

func (k *tracedKey) col() TraceCol {
	if k.str {
		return TraceCol{Buf: k.data.buf, OffBuf: k.offs.buf}
	}
	return TraceCol{Buf: k.data.buf}
}

func newTracedSet(gs *groupSet, tr *traceBuf, w int) *tracedSet {
	ts := &tracedSet{gs: gs, tr: tr, w: w, hashes: tracedSlice{buf: -1}, gids: tracedSlice{buf: -1}}
	ts.slots = tr.Alloc(w, int64(len(gs.table.slots))*16, false, true)
	ts.slotsData = unsafe.Pointer(unsafe.SliceData(gs.table.slots))
	ts.keys = newTracedKeys(len(gs.table.keys))
	ts.resetStates()
	ts.observeKeys()
	return ts
}

func (ts *tracedSet) resetStates() {
	ts.states = ts.states[:0]
	for _, st := range ts.gs.states {
		ts.states = append(ts.states, make([]tracedSlice, stateWords(st.spec)))
	}
}

// observeKeys follows the stored key columns' arrays: one that moved was
// grown (allocated and its contents copied) or replaced by an empty one.
func (ts *tracedSet) observeKeys() {
	for c, k := range ts.gs.table.keys {
		tk := &ts.keys[c]
		if k.Type == vec.String {
			tk.str = true
			observeArray(ts.tr, ts.w, &tk.offs, &tk.offsPtr, unsafe.Pointer(unsafe.SliceData(k.Offsets)), int64(cap(k.Offsets)), 4)
			observeArray(ts.tr, ts.w, &tk.data, &tk.dataPtr, unsafe.Pointer(unsafe.SliceData(k.Bytes)), int64(cap(k.Bytes)), 1)
			continue
		}
		p, c := unsafe.Pointer(unsafe.SliceData(k.I64)), cap(k.I64)
		if k.Type.IsFloat() {
			p, c = unsafe.Pointer(unsafe.SliceData(k.F64)), cap(k.F64)
		}
		observeArray(ts.tr, ts.w, &tk.data, &tk.dataPtr, p, int64(c), 8)
	}
}

// observeArray reports a move of the array s follows (now at p, of
// capacity c elements of elem bytes): a new buffer, with the len
// elements it held copied over.
func observeArray(tr *traceBuf, w int, s *tracedSlice, at *unsafe.Pointer, p unsafe.Pointer, c, elem int64) {
	if p == *at && s.buf >= 0 {
		return
	}
	*at = p
	nb := tr.Alloc(w, max(c, 1)*elem, false, true)
	if s.len > 0 && s.buf >= 0 && p != nil {
		tr.Range(w, s.buf, 0, s.len*elem, false)
		tr.Range(w, nb, 0, s.len*elem, true)
	}
	s.buf, s.cap = nb, c
	if p == nil {
		s.len = 0
	}
}

// reserve makes the hash and group-id scratch hold n rows.
func (ts *tracedSet) reserve(n int) {
	if ts.hashes.buf < 0 || ts.hashes.cap < int64(n) {
		ts.hashes = tracedSlice{buf: ts.tr.Alloc(ts.w, int64(n)*8, false, true), cap: int64(n)}
	}
	if ts.gids.buf < 0 || ts.gids.cap < int64(n) {
		ts.gids = tracedSlice{buf: ts.tr.Alloc(ts.w, int64(n)*4, false, true), cap: int64(n)}
	}
}

// hash is Hasher.Hash into the set's hash scratch, reported.
func (ts *tracedSet) hash(h *Hasher, in Input, cols []TraceCol) []uint64 {
	ts.reserve(in.N)
	if cap(ts.gs.hashes) < in.N {
		ts.gs.hashes = make([]uint64, in.N)
	}
	hs := ts.gs.hashes[:in.N]
	h.Hash(in.Keys, in.N, hs)
	reportHash(ts.tr, ts.w, in.Keys, cols, in.N, ts.hashes.buf)
	return hs
}

// reportHash reports Hasher.Hash of n rows of keys (read from cols) into
// buffer out: column by column, each row's key read, its hash written
// (read first, from the second column on).
func reportHash(tr *traceBuf, w int, keys []*vec.Vector, cols []TraceCol, n, out int) {
	for c, k := range keys {
		for i := 0; i < n; i++ {
			readValue(tr, w, k, cols[c], i)
			if c > 0 {
				tr.Access(w, out, int64(i)*8, 8, false)
			}
			tr.Access(w, out, int64(i)*8, 8, true)
		}
	}
}

// readValue reports the read of value i of v, read from col.
func readValue(tr *traceBuf, w int, v *vec.Vector, col TraceCol, i int) {
	if col.Buf < 0 {
		return
	}
	if v.Type != vec.String {
		tr.Access(w, col.Buf, col.Off+int64(i)*8, 8, false)
		return
	}
	tr.Access(w, col.OffBuf, col.OffOff+int64(i)*4, 8, false)
	if l := int64(v.Offsets[i+1] - v.Offsets[i]); l > 0 && !v.IsNull(i) {
		tr.Range(w, col.Buf, col.Off+int64(v.Offsets[i]), l, false)
	}
}

// add is groupSet.add for n rows whose hashes hs were read from hbuf at
// hoff, reported.
func (ts *tracedSet) add(keys, args []*vec.Vector, kcols, acols []TraceCol, hs []uint64, hbuf int, hoff int64, n int) error {
	gids, err := ts.group(keys, kcols, hs, hbuf, hoff, n)
	if err != nil {
		return err
	}
	for j, st := range ts.gs.states {
		if err := st.Update(gids, args[j], n); err != nil {
			return err
		}
		var col TraceCol
		if j < len(acols) && args[j] != nil {
			col = acols[j]
		} else {
			col.Buf = -1
		}
		ts.reportState(j, gids, []TraceCol{col}, n)
	}
	return nil
}

// merge is groupSet.merge, reported; partial holds every aggregate's
// partial columns in turn, read from pcols.
func (ts *tracedSet) merge(keys, partial []*vec.Vector, kcols, pcols []TraceCol, hs []uint64, hbuf int, hoff int64, n int) error {
	gids, err := ts.group(keys, kcols, hs, hbuf, hoff, n)
	if err != nil {
		return err
	}
	for j, st := range ts.gs.states {
		k := len(partialTypes(st.spec))
		if err := st.Merge(gids, partial[:k], n); err != nil {
			return err
		}
		ts.reportState(j, gids, pcols[:k], n)
		partial, pcols = partial[k:], pcols[k:]
	}
	return nil
}

// reportState reports state j's update of n rows: per row its group id
// and inputs read, then each of its words read and written.
func (ts *tracedSet) reportState(j int, gids []uint32, cols []TraceCol, n int) {
	tr, w := ts.tr, ts.w
	words := ts.states[j]
	for i, g := range gids[:n] {
		tr.Access(w, ts.gids.buf, int64(i)*4, 4, false)
		for _, c := range cols {
			if c.Buf >= 0 {
				tr.Access(w, c.Buf, c.Off+int64(i)*8, 8, false)
			}
		}
		for x := range words {
			tr.Access(w, words[x].buf, int64(g)*8, 8, false)
			tr.Access(w, words[x].buf, int64(g)*8, 8, true)
		}
	}
}

// group is groupSet.group, reported. The table groups the rows in pieces
// that cannot grow it midway (at most as many rows as it has room for
// groups, or one row when it is full), so that each piece's probes can be
// read back from the slots it leaves.
func (ts *tracedSet) group(keys []*vec.Vector, kcols []TraceCol, hs []uint64, hbuf int, hoff int64, n int) ([]uint32, error) {
	gs, t := ts.gs, ts.gs.table
	if cap(gs.gids) < n {
		gs.gids = make([]uint32, n)
	}
	gids := gs.gids[:n]
	ts.reserve(n)
	sub := make([]*vec.Vector, len(keys))
	for lo := 0; lo < n; {
		m := n - lo
		if room := t.growAt - t.n; room < m {
			m = max(room, 1)
		}
		for c, k := range keys {
			sub[c] = k
			if lo > 0 || m < n {
				sub[c] = k.Slice(lo, lo+m)
			}
		}
		old, n0 := t.slots, t.n
		if err := t.Group(sub, hs[lo:lo+m], m, gids[lo:lo+m]); err != nil {
			return nil, err
		}
		if unsafe.SliceData(t.slots) != unsafe.SliceData(old) {
			ts.reportGrow(old)
		}
		ts.reportGroup(keys, kcols, hs, hbuf, hoff, gids, lo, lo+m, n0)
		lo += m
	}
	for _, st := range gs.states {
		if err := st.Resize(t.Len()); err != nil {
			return nil, err
		}
	}
	ts.observeStates()
	return gids, nil
}

// reportGrow reports Table.grow from the slots old: each old slot read,
// each group's walk to its new slot and the write there.
func (ts *tracedSet) reportGrow(old []slot) {
	t, tr, w := ts.gs.table, ts.tr, ts.w
	oldBuf := ts.slots
	ts.slots = tr.Alloc(w, int64(len(t.slots))*16, false, true)
	ts.slotsData = unsafe.Pointer(unsafe.SliceData(t.slots))
	for i, s := range old {
		tr.Access(w, oldBuf, int64(i)*16, 16, false)
		if s.gid == 0 {
			continue
		}
		h := s.word
		if t.intKey {
			h = Mix64(s.word)
		}
		j := h & t.mask
		for {
			tr.Access(w, ts.slots, int64(j)*16+8, 4, false)
			if t.slots[j].gid == s.gid {
				break
			}
			j = (j + 1) & t.mask
		}
		tr.Access(w, ts.slots, int64(j)*16, 16, true)
	}
}

// reportGroup reports the probes of rows lo..hi-1, grouped by a call of
// Table.Group that found the table with n0 groups and did not grow it.
func (ts *tracedSet) reportGroup(keys []*vec.Vector, kcols []TraceCol, hs []uint64, hbuf int, hoff int64, gids []uint32, lo, hi, n0 int) {
	t, tr, w := ts.gs.table, ts.tr, ts.w
	ts.observeKeys() // key columns that grew for the new groups
	next := uint32(n0)
	for i := lo; i < hi; i++ {
		g := gids[i]
		made := g == next
		if made {
			next++
		}
		tr.Access(w, hbuf, hoff+int64(i)*8, 8, false)
		if t.intKey {
			readValue(tr, w, keys[0], kcols[0], i)
			if keys[0].IsNull(i) {
				if made {
					ts.reportKeyAppend(keys, kcols, i, int(g))
				}
				tr.Access(w, ts.gids.buf, int64(i)*4, 4, true)
				continue
			}
		}
		j := hs[i] & t.mask
		for {
			off := int64(j) * 16
			tr.Access(w, ts.slots, off+8, 4, false)
			s := t.slots[j]
			if s.gid == g+1 {
				if made {
					tr.Access(w, ts.slots, off, 16, true)
					ts.reportKeyAppend(keys, kcols, i, int(g))
				} else {
					tr.Access(w, ts.slots, off, 8, false)
					// Keys packed into one word are compared in
					// the slot: its word is their hash, a
					// bijection.
					if !t.intKey && t.pack.words != 1 {
						ts.reportCompare(keys, kcols, i, int(g))
					}
				}
				break
			}
			tr.Access(w, ts.slots, off, 8, false)
			if !t.intKey && s.word == hs[i] {
				ts.reportCompare(keys, kcols, i, int(s.gid-1))
			}
			j = (j + 1) & t.mask
		}
		tr.Access(w, ts.gids.buf, int64(i)*4, 4, true)
	}
}

// reportKeyAppend reports the append of row i's keys as group g's.
func (ts *tracedSet) reportKeyAppend(keys []*vec.Vector, kcols []TraceCol, i, g int) {
	tr, w := ts.tr, ts.w
	for c, k := range keys {
		tk := &ts.keys[c]
		readValue(tr, w, k, kcols[c], i)
		stored := ts.gs.table.keys[c]
		if !tk.str {
			tr.Access(w, tk.data.buf, int64(g)*8, 8, true)
			tk.data.len = max(tk.data.len, int64(g)+1)
			continue
		}
		tr.Access(w, tk.offs.buf, int64(g+1)*4, 4, true)
		if l := int64(stored.Offsets[g+1] - stored.Offsets[g]); l > 0 {
			tr.Range(w, tk.data.buf, int64(stored.Offsets[g]), l, true)
		}
		tk.offs.len = max(tk.offs.len, int64(g)+2)
		tk.data.len = max(tk.data.len, int64(stored.Offsets[g+1]))
	}
}

// reportCompare reports Table.equal of row i with group g: column by
// column, both values read, up to the first that differs.
func (ts *tracedSet) reportCompare(keys []*vec.Vector, kcols []TraceCol, i, g int) {
	tr, w := ts.tr, ts.w
	for c, k := range keys {
		s := ts.gs.table.keys[c]
		readValue(tr, w, k, kcols[c], i)
		readValue(tr, w, s, ts.keys[c].col(), g)
		if !equalKey(k, i, s, g) {
			return
		}
	}
}

// equalKey is Table.equal for one column: value i of k against value g
// of stored.
func equalKey(k *vec.Vector, i int, stored *vec.Vector, g int) bool {
	rn, sn := k.IsNull(i), stored.IsNull(g)
	if rn || sn {
		return rn == sn
	}
	switch k.Type {
	case vec.String:
		return string(k.Str(i)) == string(stored.Str(g))
	case vec.Float64, vec.Float32:
		return FloatBits(k.F64[i]) == FloatBits(stored.F64[g])
	}
	return k.I64[i] == stored.I64[g]
}

// observeStates follows the states' arrays after Resize: each that moved
// was copied into a new one; new groups' entries are zeroed.
func (ts *tracedSet) observeStates() {
	for j, st := range ts.gs.states {
		words := ts.states[j]
		n, c := int64(len(st.cnt)), int64(cap(st.cnt))
		for x := range words {
			words[x].extendTo(ts.tr, ts.w, n, c)
		}
	}
}

// finalize is groupSet.finalize, reported: each state's arrays copied
// out.
func (ts *tracedSet) finalize(specs []Spec) {
	for j := range ts.gs.states {
		for _, w := range ts.states[j] {
			out := ts.tr.Alloc(ts.w, max(w.len, 1)*8, false, true)
			ts.tr.Range(ts.w, w.buf, 0, w.len*8, false)
			ts.tr.Range(ts.w, out, 0, w.len*8, true)
		}
	}
	if _, err := ts.gs.finalize(); err != nil {
		panic(err) // finalize fails only for count(DISTINCT), which is not traced
	}
}

// reset is what preAgg.flush does to the window table, reported: its
// slots cleared, its keys and states emptied in place.
func (ts *tracedSet) reset() {
	ts.tr.Range(ts.w, ts.slots, 0, int64(len(ts.gs.table.slots))*16, true)
	for c := range ts.keys {
		ts.keys[c].data.len, ts.keys[c].offs.len = 0, 0
	}
	for _, words := range ts.states {
		for x := range words {
			words[x].len = 0
		}
	}
}

// restart is groupSet.restart, reported: slots kept are cleared, a larger
// table is fresh; keys and states start again empty.
func (ts *tracedSet) restart(specs []Spec, hint int, cfg Config) error {
	if err := ts.gs.restart(specs, hint, cfg); err != nil {
		return err
	}
	t := ts.gs.table
	if p := unsafe.Pointer(unsafe.SliceData(t.slots)); p != ts.slotsData {
		ts.slots, ts.slotsData = ts.tr.Alloc(ts.w, int64(len(t.slots))*16, false, true), p
	} else {
		ts.tr.Range(ts.w, ts.slots, 0, int64(len(t.slots))*16, true)
	}
	ts.keys = newTracedKeys(len(t.keys))
	ts.resetStates()
	ts.observeKeys()
	return nil
}
