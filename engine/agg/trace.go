package agg

import (
	"context"
	"fmt"

	"cachebook/engine/vec"
)

// Tracing: a separate pass over the tuned count(*) path (countNaive,
// countRadix) that builds the same tables and partitions with the same
// types and constants and reports every memory access it makes to the
// tables, the write-combining buffers and the partition buffers, so that a
// cache model (engine/cachesim/trace) sees the address stream of the real
// run. The real operators are untouched: tracing costs nothing when off.
// TestTraceSlotsMatch pins that the traced tables put every key in the
// slot the real table uses.

// Tracer receives the memory accesses of a traced run. Buffers are
// numbered by Alloc; an access names the worker that makes it, a buffer
// and a byte offset into it. A traced pass collects its accesses and
// ranges and reports them a batch at a time (BatchTracer, or a call each
// otherwise), always in order with each other and with Phase, and before
// it returns; Alloc is called when the buffer is made.
type Tracer interface {
	// Alloc reports a new buffer of bytes bytes, on huge pages when huge
	// (the engine's arena maps it so), zeroed when zeroed (by the
	// allocator, which the trace may treat as free: fresh pages are zero).
	Alloc(worker int, bytes int64, huge, zeroed bool) (buf int)
	// Access reports a read or write of size bytes at off in buf.
	Access(worker, buf int, off int64, size int, write bool)
	// Range reports size bytes read or written sequentially from off.
	Range(worker, buf int, off, size int64, write bool)
	// Phase reports that worker starts phase ("partition", "aggregate").
	Phase(worker int, name string)
}

// TraceMorsel is one morsel of non-NULL keys for TraceCount, with the
// buffer and offset its key column is read from.
type TraceMorsel struct {
	Keys []int64
	Buf  int
	Off  int64
}

// TraceConfig is the part of Config a traced run follows.
type TraceConfig struct {
	Strategy  Strategy
	Threads   int
	RadixBits int
	HugePages bool
	RowsHint  int64
	// Budget, if set, bounds the traced tables as a query's are bounded.
	Budget *Budget
}

// CountSlotBytes is the size of a slot of the tuned count table: key and
// count, four slots to a 64-byte line.
const CountSlotBytes = 16

// WriteCombineKeys is the number of keys the radix scatter stages per
// partition before writing them out (one 64-byte line).
const WriteCombineKeys = wcLine

// RadixPartition returns the partition of a key's hash with bits radix
// bits: its top bits.
func RadixPartition(hash uint64, bits int) int {
	if bits == 0 {
		return 0
	}
	return int(hash >> uint(64-bits))
}

// traceHugeMin is the Linux arena's hugeMin (pinned by a Linux test): the
// smallest allocation that an arena with huge pages maps itself.
const traceHugeMin = 2 << 20

// hugeAlloc reports whether an arena with huge pages maps n bytes itself
// (Arena.Int64s and Arena.Bytes) rather than taking them from Go's heap.
func hugeAlloc(huge bool, n int64) bool { return huge && n >= traceHugeMin }

// tracedTable is a real countTable whose accesses are reported.
type tracedTable struct {
	*countTable
	tr   *traceBuf
	w    int
	buf  int
	huge bool
	// probes is scratch for add and grow: per key of a chunk, how it
	// probed (probeInsert, probeGrow).
	probes []uint32
	// touched keeps the sum of the slots probe and grow touch ahead (so
	// that the loads are not dropped).
	touched int64
}

func newTracedTable(hint int, huge bool, host *Arena, tr *traceBuf, w int, budget *Budget) (*tracedTable, error) {
	t, err := newCountTable(hint, host, budget)
	if err != nil {
		return nil, err
	}
	n := int64(len(t.slots)) * 8
	return &tracedTable{countTable: t, tr: tr, w: w, huge: huge, buf: tr.Alloc(w, n, hugeAlloc(huge, n), true)}, nil
}

// probeChunk is how many keys (or old slots, when growing) a traced table
// runs against its slots before it reports their accesses: the probes run
// in a loop as tight as the real table's, so that their cache misses on
// the host overlap as the real run's do, and the reporting loop after them
// touches no slots.
const probeChunk = 2048

// touchSlots is the table size (int64s: two per slot, 8 MiB) from which
// probe and grow touch a chunk's slots ahead; smaller tables stay in the
// host's caches, where touching is only more work.
const touchSlots = 1 << 20

// A probe record (tracedTable.probes) per key: the slots visited << 2 |
// probeInsert if the key was inserted in the last, probeGrow if the table
// must grow before it can be (the key is probed again after the growth).
const (
	probeInsert = 1
	probeGrow   = 2
)

// add is countTable.add with its accesses reported: a probe reads the
// slot's count, then its key; a hit increments the count, an insert writes
// both. Each chunk of keys first runs through the table, recording how
// many slots each visited, then its accesses are reported in order.
func (t *tracedTable) add(keys []int64, in TraceMorsel, from int) error {
	reread := true // the next key's read is reported (not after a growth)
	for lo := 0; lo < len(keys); {
		hi := min(lo+probeChunk, len(keys))
		n, grow := t.probe(keys[lo:hi])
		t.report(keys[lo:lo+n], in, from+lo, reread)
		reread = true
		lo += n
		if grow {
			if err := t.grow(); err != nil {
				return err
			}
			// The key that found the table full is probed again,
			// without reading it again, as countTable.add does.
			lo--
			reread = false
		}
	}
	return nil
}

// probe runs keys through the table as countTable.add does, recording
// each key's probes in t.probes, up to the first key that finds the table
// full: it returns the keys recorded (that one included) and whether the
// table must grow.
func (t *tracedTable) probe(keys []int64) (n int, grow bool) {
	if cap(t.probes) < len(keys) {
		t.probes = make([]uint32, probeChunk)
	}
	probes := t.probes[:len(keys)]
	slots, mask := t.slots, t.mask
	// First touch every key's first slot, in a loop of independent loads
	// whose host cache misses overlap, so that the probes below mostly hit
	// the host's caches (the real table's loop gets this overlap from the
	// CPU running ahead of it; the traced loop does more per key).
	if len(slots) >= touchSlots {
		var sum int64
		for _, k := range keys {
			sum += slots[2*(Mix64(uint64(k))&mask)+1]
		}
		t.touched += sum
	}
	for i, k := range keys {
		j := Mix64(uint64(k)) & mask
		for l := uint32(1); ; l++ {
			s := slots[2*j : 2*j+2 : 2*j+2]
			if s[1] == 0 {
				if t.n >= t.growAt {
					probes[i] = l<<2 | probeGrow
					return i + 1, true
				}
				s[0], s[1] = k, 1
				t.n++
				probes[i] = l<<2 | probeInsert
				break
			}
			if s[0] == k {
				s[1]++
				probes[i] = l << 2
				break
			}
			j = (j + 1) & mask
		}
	}
	return len(keys), false
}

// report reports the accesses of keys, probed by probe (t.probes), the
// first key's read only if reread; keys are rows from.. of in.
func (t *tracedTable) report(keys []int64, in TraceMorsel, from int, reread bool) {
	tr, w, buf, mask := t.tr, t.w, int32(t.buf), t.mask
	kbuf := int32(in.Buf)
	for i, k := range keys {
		p := t.probes[i]
		read := i > 0 || reread
		l := int(p >> 2)
		if l >= traceRoom/3 {
			t.reportLong(k, p, in, from+i, read)
			continue
		}
		// A key read, then per slot visited its count read and, but for
		// the last, its key read; the last is an insert (a write), a hit
		// (key read, count write) or, before a growth, nothing more.
		n := 2*l - 1
		switch {
		case p&probeInsert != 0:
			n++
		case p&probeGrow == 0:
			n += 2
		}
		if read {
			n++
		}
		d := tr.reserve(w, n)
		x := 0
		if read {
			d[0] = TraceAccess{Off: in.Off + int64(from+i)*8, Buf: kbuf, Size: 8}
			x = 1
		}
		j := Mix64(uint64(k)) & mask
		for ; l > 1; l-- {
			off := int64(j) * CountSlotBytes
			d[x] = TraceAccess{Off: off + 8, Buf: buf, Size: 8}
			d[x+1] = TraceAccess{Off: off, Buf: buf, Size: 8}
			x += 2
			j = (j + 1) & mask
		}
		off := int64(j) * CountSlotBytes
		d[x] = TraceAccess{Off: off + 8, Buf: buf, Size: 8}
		switch {
		case p&probeInsert != 0:
			d[x+1] = TraceAccess{Off: off, Buf: buf, Size: 16, Write: true}
		case p&probeGrow == 0:
			d[x+1] = TraceAccess{Off: off, Buf: buf, Size: 8}
			d[x+2] = TraceAccess{Off: off + 8, Buf: buf, Size: 8, Write: true}
		}
	}
}

// reportLong is report for one key whose probe visited too many slots to
// make room for at once.
func (t *tracedTable) reportLong(k int64, p uint32, in TraceMorsel, row int, read bool) {
	tr, w, buf, mask := t.tr, t.w, t.buf, t.mask
	if read {
		tr.Access(w, in.Buf, in.Off+int64(row)*8, 8, false)
	}
	j := Mix64(uint64(k)) & mask
	for l := p >> 2; ; l-- {
		off := int64(j) * CountSlotBytes
		tr.Access(w, buf, off+8, 8, false)
		if l == 1 {
			switch {
			case p&probeInsert != 0:
				tr.Access(w, buf, off, 16, true)
			case p&probeGrow == 0:
				tr.Access(w, buf, off, 8, false)
				tr.Access(w, buf, off+8, 8, true)
			}
			return
		}
		tr.Access(w, buf, off, 8, false)
		j = (j + 1) & mask
	}
}

// grow is countTable.grow, reported: the old array is read in order and
// each entry written to its slot in the new one (in chunks: reinserted,
// then reported, as add does).
func (t *tracedTable) grow() error {
	old, oldBuf := t.slots, t.buf
	if err := t.countTable.alloc(len(old)); err != nil {
		return err
	}
	n := int64(len(t.slots)) * 8
	t.buf = t.tr.Alloc(t.w, n, hugeAlloc(t.huge, n), true)
	if cap(t.probes) < probeChunk {
		t.probes = make([]uint32, probeChunk)
	}
	probes := t.probes[:probeChunk]
	slots, mask := t.slots, t.mask
	for lo := 0; lo < len(old); lo += 2 * probeChunk {
		hi := min(lo+2*probeChunk, len(old))
		if len(slots) >= touchSlots {
			var sum int64 // as in probe: the new slots touched first
			for i := lo; i < hi; i += 2 {
				sum += slots[2*(Mix64(uint64(old[i]))&mask)+1]
			}
			t.touched += sum
		}
		for i := lo; i < hi; i += 2 {
			if old[i+1] == 0 {
				continue
			}
			j := Mix64(uint64(old[i])) & mask
			l := uint32(1)
			for slots[2*j+1] != 0 {
				j = (j + 1) & mask
				l++
			}
			slots[2*j], slots[2*j+1] = old[i], old[i+1]
			probes[(i-lo)/2] = l
		}
		tr, w, buf, ob := t.tr, t.w, int32(t.buf), int32(oldBuf)
		for i := lo; i < hi; i += 2 {
			if old[i+1] == 0 {
				tr.reserve(w, 1)[0] = TraceAccess{Off: int64(i) * 8, Buf: ob, Size: 16}
				continue
			}
			// The old slot's read, the new slots' count reads, the write.
			l := int(probes[(i-lo)/2])
			if l+2 > traceRoom {
				t.growLong(int64(i)*8, old[i], l, oldBuf)
				continue
			}
			d := tr.reserve(w, l+2)
			d[0] = TraceAccess{Off: int64(i) * 8, Buf: ob, Size: 16}
			j := Mix64(uint64(old[i])) & mask
			for x := 1; x < l; x++ {
				d[x] = TraceAccess{Off: int64(j)*CountSlotBytes + 8, Buf: buf, Size: 8}
				j = (j + 1) & mask
			}
			d[l] = TraceAccess{Off: int64(j)*CountSlotBytes + 8, Buf: buf, Size: 8}
			d[l+1] = TraceAccess{Off: int64(j) * CountSlotBytes, Buf: buf, Size: 16, Write: true}
		}
	}
	return nil
}

// growLong reports grow's accesses for one old slot (at off in oldBuf,
// holding key) whose reinsertion visited l slots, too many to reserve.
func (t *tracedTable) growLong(off, key int64, l, oldBuf int) {
	tr, w := t.tr, t.w
	tr.Access(w, oldBuf, off, 16, false)
	j := Mix64(uint64(key)) & t.mask
	for ; l > 1; l-- {
		tr.Access(w, t.buf, int64(j)*CountSlotBytes+8, 8, false)
		j = (j + 1) & t.mask
	}
	tr.Access(w, t.buf, int64(j)*CountSlotBytes+8, 8, false)
	tr.Access(w, t.buf, int64(j)*CountSlotBytes, 16, true)
}

// reset is countTable.reset, reported: a table kept clears its slots.
func (t *tracedTable) reset(hint int) error {
	if 2*tableSlots(hint) > cap(t.slots) {
		if err := t.countTable.reset(hint); err != nil {
			return err
		}
		n := int64(len(t.slots)) * 8
		t.buf = t.tr.Alloc(t.w, n, hugeAlloc(t.huge, n), true)
		return nil
	}
	if err := t.countTable.reset(hint); err != nil {
		return err
	}
	t.tr.Range(t.w, t.buf, 0, int64(len(t.slots))*8, true)
	return nil
}

// emit is countTable.emit, reported: the slots are read in order and each
// group's key and count appended to the output columns.
// It returns the number of groups emitted.
func (t *tracedTable) emit(out *tracedOutput) int {
	s := t.slots
	t.tr.Range(t.w, t.buf, 0, int64(len(s))*8, false)
	n := 0
	for i := 0; i < len(s); i += 2 {
		if s[i+1] != 0 {
			out.append()
			n++
		}
	}
	return n
}

// tracedOutput is a worker's pair of output columns (keys, counts) as
// slices that grow as Go's append grows them.
type tracedOutput struct {
	tr        *traceBuf
	w         int
	n, cap    int64
	keys, cnt int
}

func newTracedOutput(tr *traceBuf, w int, capacity int64) *tracedOutput {
	o := &tracedOutput{tr: tr, w: w, cap: capacity}
	o.keys = tr.Alloc(w, capacity*8, false, true)
	o.cnt = tr.Alloc(w, capacity*8, false, true)
	return o
}

func (o *tracedOutput) append() {
	if o.n == o.cap {
		c := growCap(o.cap, o.n+1, 8)
		k, n := o.tr.Alloc(o.w, c*8, false, false), o.tr.Alloc(o.w, c*8, false, false)
		o.tr.Range(o.w, o.keys, 0, o.n*8, false)
		o.tr.Range(o.w, k, 0, o.n*8, true)
		o.tr.Range(o.w, o.cnt, 0, o.n*8, false)
		o.tr.Range(o.w, n, 0, o.n*8, true)
		o.keys, o.cnt, o.cap = k, n, c
	}
	o.tr.Access(o.w, o.keys, o.n*8, 8, true)
	o.tr.Access(o.w, o.cnt, o.n*8, 8, true)
	o.n++
}

// growCap is the capacity Go's append gives a slice of capacity old that
// must hold need elements of elem bytes: double below 256 elements, then
// grow by a quarter plus 192, rounded up to 8 KiB for large slices (the
// runtime's growslice; small size classes are not modelled).
func growCap(old, need, elem int64) int64 {
	c := old
	if need > 2*old {
		c = need
	} else if old < 256 {
		c = 2 * old
	} else {
		for c < need {
			c += (c + 3*256) >> 2
		}
	}
	if b := c * elem; b > 32<<10 {
		c = ((b + 8191) &^ 8191) / elem
	}
	return max(c, need)
}

// tracedScatter is a real countScatter whose accesses are reported.
type tracedScatter struct {
	*countScatter
	tr            *traceBuf
	w             int
	wc, fill, hdr int   // buffers: staged keys, fill counts, slice headers
	pbuf          []int // per partition: the buffer its keys are in
	poff          []int64
}

// sliceHeader is the size of a Go slice header (pointer, length, capacity).
const sliceHeader = 24

func newTracedScatter(bits int, rowsHint int64, huge bool, host *Arena, tr *traceBuf, w int) (*tracedScatter, error) {
	sc, err := newCountScatter(bits, rowsHint, host)
	if err != nil {
		return nil, err
	}
	np := len(sc.parts)
	s := &tracedScatter{countScatter: sc, tr: tr, w: w, pbuf: make([]int, np), poff: make([]int64, np)}
	s.wc = tr.Alloc(w, int64(np)*WriteCombineKeys*8, false, true)
	s.fill = tr.Alloc(w, int64(np), false, true)
	s.hdr = tr.Alloc(w, int64(np)*sliceHeader, false, true)
	per := int64(cap(sc.parts[0]))
	slab := tr.Alloc(w, per*int64(np)*8, hugeAlloc(huge, per*int64(np)*8), false)
	for p := range s.pbuf {
		s.pbuf[p], s.poff[p] = slab, int64(p)*per*8
	}
	return s, nil
}

// appendLine is parts[p] = append(parts[p], wc[p*8:p*8+f]...), reported.
// On amd64 the real scatter writes a full, aligned line with non-temporal
// stores (storeLine), which do not bring it into the cache; the model
// counts them as ordinary writes, as cachegrind does.
func (s *tracedScatter) appendLine(p, f int) {
	tr, w := s.tr, s.w
	tr.Access(w, s.hdr, int64(p)*sliceHeader, sliceHeader, false)
	part := s.parts[p]
	if len(part)+f > cap(part) {
		// Past the slab share: append moves the partition to the heap.
		c := growCap(int64(cap(part)), int64(len(part)+f), 8)
		nb := tr.Alloc(w, c*8, false, false)
		tr.Range(w, s.pbuf[p], s.poff[p], int64(len(part))*8, false)
		tr.Range(w, nb, 0, int64(len(part))*8, true)
		s.pbuf[p], s.poff[p] = nb, 0
		grown := make([]int64, len(part), c)
		copy(grown, part)
		s.parts[p] = grown
	}
	tr.Range(w, s.wc, int64(p)*WriteCombineKeys*8, int64(f)*8, false)
	tr.Range(w, s.pbuf[p], s.poff[p]+int64(len(s.parts[p]))*8, int64(f)*8, true)
	tr.Access(w, s.hdr, int64(p)*sliceHeader, sliceHeader, true)
	s.parts[p] = append(s.parts[p], s.countScatter.wc[p*wcLine:p*wcLine+f]...)
}

// scatter is countScatter.scatter, reported.
func (s *tracedScatter) scatter(in TraceMorsel, shift uint) {
	tr, w := s.tr, s.w
	wc, fill := s.countScatter.wc, s.countScatter.fill
	for i, k := range in.Keys {
		p := uint32(Mix64(uint64(k)) >> shift)
		if shift == 64 {
			p = 0
		}
		f := fill[p]
		wc[int(p)*wcLine+int(f)] = k
		d := tr.reserve(w, 3)
		d[0] = TraceAccess{Off: in.Off + int64(i)*8, Buf: int32(in.Buf), Size: 8}
		d[1] = TraceAccess{Off: int64(p), Buf: int32(s.fill), Size: 1}
		d[2] = TraceAccess{Off: (int64(p)*wcLine + int64(f)) * 8, Buf: int32(s.wc), Size: 8, Write: true}
		f++
		if f == wcLine {
			s.appendLine(int(p), wcLine)
			f = 0
		}
		fill[p] = f
		tr.reserve(w, 1)[0] = TraceAccess{Off: int64(p), Buf: int32(s.fill), Size: 1, Write: true}
	}
}

// flush is countScatter.flush, reported.
func (s *tracedScatter) flush() {
	for p, f := range s.countScatter.fill {
		s.tr.Access(s.w, s.fill, int64(p), 1, false)
		s.appendLine(p, int(f))
		s.countScatter.fill[p] = 0
		s.tr.Access(s.w, s.fill, int64(p), 1, true)
	}
}

// TraceCount runs the tuned count(*) GROUP BY (one integer key, count(*)
// only) over morsels as Aggregate runs it for cfg, reporting its accesses
// to tracer, and returns the number of groups. With several threads the
// workers run one after another in this goroutine: worker w (1..Threads)
// scatters the morsels i with i%Threads == w-1 and aggregates the
// partitions p with p%Threads == w-1 (the real run hands both out
// dynamically). Huge pages change only which buffers the trace puts on
// 2 MiB pages.
func TraceCount(ctx context.Context, cfg TraceConfig, morsels []TraceMorsel, tracer Tracer) (groups int, err error) {
	var st TraceAggStats
	err = traceCount(ctx, cfg, morsels, tracer, &st)
	return st.Groups, err
}

// TraceCountStats is TraceCount returning what the traced run built, for
// comparison with the real run (PreAgg and the phase rows are not filled
// in: the tuned path does not pre-aggregate).
func TraceCountStats(ctx context.Context, cfg TraceConfig, morsels []TraceMorsel, tracer Tracer) (*TraceAggStats, error) {
	var st TraceAggStats
	err := traceCount(ctx, cfg, morsels, tracer, &st)
	return &st, err
}

func traceCount(ctx context.Context, cfg TraceConfig, morsels []TraceMorsel, tracer Tracer, st *TraceAggStats) (err error) {
	tr := newTraceBuf(tracer)
	defer func() { tr.flush(); st.Accesses = tr.count }()
	defer tr.flush()
	// The naive traced table (the host's memory, not the modelled
	// addresses) is on huge pages as the real run's is by default: on
	// 4 KiB pages its probes miss the host's TLB on almost every row. The
	// radix partitions, written and read in order, and their small tables
	// stay on Go's heap (a fresh huge-page mapping costs the host page
	// faults and compaction that the TLB does not repay there).
	host := NewArena(true, nil)
	defer host.Free()
	if cfg.Strategy == Naive {
		tr.Phase(0, "aggregate")
		t, err := newTracedTable(0, cfg.HugePages, host, tr, 0, cfg.Budget)
		if err != nil {
			return err
		}
		for i, m := range morsels {
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := t.add(m.Keys, m, 0); err != nil {
				return err
			}
		}
		st.TableSlots = len(t.slots) / 2
		st.Groups = t.emit(newTracedOutput(tr, 0, int64(t.n+1)))
		return nil
	}
	threads := max(cfg.Threads, 1)
	bits := cfg.RadixBits
	if bits < 0 || bits > 16 {
		return fmt.Errorf("radix_bits must be between 0 and 16, got %d", bits)
	}
	nparts := 1 << bits
	shift := uint(64 - bits)
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
	st.PartGroups, st.PartRows = make([]int, nparts), make([]int, nparts)
	scats := make([]*tracedScatter, threads)
	for slot := range scats {
		w := worker(slot)
		tr.Phase(w, "partition")
		sc, err := newTracedScatter(bits, rowsHint, cfg.HugePages, nil, tr, w)
		if err != nil {
			return err
		}
		scats[slot] = sc
		for i := slot; i < len(morsels); i += threads {
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			sc.scatter(morsels[i], shift)
		}
		sc.flush()
	}
	for slot := 0; slot < threads; slot++ {
		w := worker(slot)
		tr.Phase(w, "aggregate")
		out := newTracedOutput(tr, w, rowsHint/4)
		var t *tracedTable
		var est partitionEstimate
		for p := slot; p < nparts; p += threads {
			if p%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			n := 0
			for _, sc := range scats {
				tr.Access(w, sc.hdr, int64(p)*sliceHeader, sliceHeader, false)
				n += len(sc.parts[p])
			}
			if n == 0 {
				continue
			}
			if t == nil {
				if t, err = newTracedTable(est.hint(n), cfg.HugePages, nil, tr, w, cfg.Budget); err != nil {
					return err
				}
			} else if err := t.reset(est.hint(n)); err != nil {
				return err
			}
			for _, sc := range scats {
				in := TraceMorsel{Keys: sc.parts[p], Buf: sc.pbuf[p], Off: sc.poff[p]}
				if err := t.add(in.Keys, in, 0); err != nil {
					return err
				}
			}
			g := t.emit(out)
			est.saw(n, g)
			st.Groups += g
			st.PartGroups[p], st.PartRows[p] = g, n
			st.TableSlots = max(st.TableSlots, len(t.slots)/2)
		}
	}
	return nil
}

// CountTraceable reports whether TraceCount models an aggregation with
// these keys and aggregates: the shape of the tuned count path.
func CountTraceable(keyTypes []vec.Type, specs []Spec) bool { return countFast(keyTypes, specs) }
