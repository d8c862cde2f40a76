package agg

// TraceAccess is one access of a batch (BatchTracer.Accesses): a read or
// write of Size bytes at Off in buffer Buf, or with Range a sequential
// read or write of Size bytes from there (as Tracer.Range).
type TraceAccess struct {
	Off   int64
	Buf   int32
	Size  uint16
	Write bool
	Range bool
}

// BatchTracer is a Tracer that also takes accesses in batches: a traced
// pass hands its accesses over in batches, in order, to a Tracer that
// implements it, rather than in a call per access. Accesses must treat
// batch exactly as the calls of Access and Range it stands for, in order
// with the other calls. It returns the buffer the pass fills next (empty,
// with a capacity of at least 256 accesses): it may keep batch's array (to
// simulate it later, elsewhere) and return another, or return batch[:0].
// A traced pass first calls it with no batch, for its first buffer.
type BatchTracer interface {
	Tracer
	Accesses(worker int, batch []TraceAccess) (next []TraceAccess)
}

// traceBuf is the Tracer a traced pass reports to: it collects accesses
// and ranges in a batch (so that the traced tables' loops make no call
// per access and keep their loads overlapping, as the real tables' loops
// do) and hands the batch to a BatchTracer, or replays it call by call to
// any other Tracer. It must be flushed at the end of the pass. Hot loops
// reserve a key's accesses at once and fill them in (reserve).
type traceBuf struct {
	tr Tracer
	bt BatchTracer // tr, if it takes batches
	w  int         // the worker of the accesses in a
	n  int
	a  []TraceAccess // len(a) is the batch's room
	// count is the accesses and ranges handed on so far.
	count int64
}

// traceBatchLen is the batch of a traceBuf whose tracer takes no batches.
const traceBatchLen = 1024

func newTraceBuf(tr Tracer) *traceBuf {
	b := &traceBuf{tr: tr}
	if bt, ok := tr.(BatchTracer); ok {
		b.bt = bt
		b.a = bt.Accesses(0, nil)
		b.a = b.a[:cap(b.a)]
	} else {
		b.a = make([]TraceAccess, traceBatchLen)
	}
	return b
}

// Alloc is Tracer.Alloc (buffers are numbered in order, so pending
// accesses need not be flushed first).
func (b *traceBuf) Alloc(w int, n int64, huge, zeroed bool) int {
	return b.tr.Alloc(w, n, huge, zeroed)
}

// room makes room in the batch for k accesses of worker w (k at most
// traceRoom).
func (b *traceBuf) room(w, k int) {
	if b.n+k > len(b.a) || w != b.w {
		b.flush()
		b.w = w
	}
}

// traceRoom is the most accesses room may be asked for.
const traceRoom = 256

// reserve makes room for k accesses of worker w (k at most traceRoom) and
// returns them, added to the batch: the caller fills every one before
// the next call on b.
func (b *traceBuf) reserve(w, k int) []TraceAccess {
	b.room(w, k)
	n := b.n
	b.n += k
	return b.a[n : n+k : n+k]
}

// Access is Tracer.Access, batched.
func (b *traceBuf) Access(w, buf int, off int64, size int, write bool) {
	if b.n < len(b.a) && w == b.w && uint(size) <= 0xffff {
		b.a[b.n] = TraceAccess{Off: off, Buf: int32(buf), Size: uint16(size), Write: write}
		b.n++
		return
	}
	b.slow(w, buf, off, int64(size), write, false)
}

// Range is Tracer.Range, batched when small.
func (b *traceBuf) Range(w, buf int, off, size int64, write bool) {
	if b.n < len(b.a) && w == b.w && uint64(size) <= 0xffff {
		b.a[b.n] = TraceAccess{Off: off, Buf: int32(buf), Size: uint16(size), Write: write, Range: true}
		b.n++
		return
	}
	b.slow(w, buf, off, size, write, true)
}

// slow is Access and Range when the batch is full, the worker changes or
// the access is too large for a batch.
func (b *traceBuf) slow(w, buf int, off, size int64, write, rng bool) {
	b.flush()
	b.w = w
	switch {
	case uint64(size) <= 0xffff:
		b.a[0] = TraceAccess{Off: off, Buf: int32(buf), Size: uint16(size), Write: write, Range: rng}
		b.n = 1
	case rng:
		b.count++
		b.tr.Range(w, buf, off, size, write)
	default:
		b.count++
		b.tr.Access(w, buf, off, int(size), write)
	}
}

// Phase is Tracer.Phase, after the pending accesses.
func (b *traceBuf) Phase(w int, name string) {
	b.flush()
	b.tr.Phase(w, name)
}

// flush hands the pending accesses on.
func (b *traceBuf) flush() {
	if b.n == 0 {
		return
	}
	b.count += int64(b.n)
	if b.bt == nil {
		for _, a := range b.a[:b.n] {
			if a.Range {
				b.tr.Range(b.w, int(a.Buf), a.Off, int64(a.Size), a.Write)
			} else {
				b.tr.Access(b.w, int(a.Buf), a.Off, int(a.Size), a.Write)
			}
		}
		b.n = 0
		return
	}
	b.a = b.bt.Accesses(b.w, b.a[:b.n])
	b.a = b.a[:cap(b.a)]
	b.n = 0
}
