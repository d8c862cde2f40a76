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
// batch exactly as the calls of Access and Range it stands for, in order.
// The batch is reused after Accesses returns.
type BatchTracer interface {
	Tracer
	Accesses(worker int, batch []TraceAccess)
}

// traceBatchLen is the accesses a traceBuf holds before it hands them on
// (16 KiB: stays in L1 while it fills and is replayed).
const traceBatchLen = 1024

// traceBuf is the Tracer a traced pass reports to: it collects accesses
// and ranges in a batch for a BatchTracer (so that the traced tables'
// loops make no call per access and keep their loads overlapping, as the
// real tables' loops do), or passes every call straight on otherwise. It
// must be flushed at the end of the pass.
type traceBuf struct {
	tr  Tracer
	bt  BatchTracer // tr, if it takes batches
	w   int         // the worker of the accesses in a
	n   int
	lim int // traceBatchLen, or 0 if tr takes no batches
	a   [traceBatchLen]TraceAccess
}

func newTraceBuf(tr Tracer) *traceBuf {
	b := &traceBuf{tr: tr}
	if bt, ok := tr.(BatchTracer); ok {
		b.bt, b.lim = bt, traceBatchLen
	}
	return b
}

// Alloc is Tracer.Alloc (buffers are numbered in order, so pending
// accesses need not be flushed first).
func (b *traceBuf) Alloc(w int, n int64, huge, zeroed bool) int {
	return b.tr.Alloc(w, n, huge, zeroed)
}

// Access is Tracer.Access, batched.
func (b *traceBuf) Access(w, buf int, off int64, size int, write bool) {
	if b.n < b.lim && w == b.w && uint(size) <= 0xffff {
		b.a[b.n] = TraceAccess{Off: off, Buf: int32(buf), Size: uint16(size), Write: write}
		b.n++
		return
	}
	b.slow(w, buf, off, int64(size), write, false)
}

// Range is Tracer.Range, batched when small.
func (b *traceBuf) Range(w, buf int, off, size int64, write bool) {
	if b.n < b.lim && w == b.w && uint64(size) <= 0xffff {
		b.a[b.n] = TraceAccess{Off: off, Buf: int32(buf), Size: uint16(size), Write: write, Range: true}
		b.n++
		return
	}
	b.slow(w, buf, off, size, write, true)
}

// slow is Access and Range when the batch is full, the worker changes,
// the access is too large for a batch or the tracer takes no batches.
func (b *traceBuf) slow(w, buf int, off, size int64, write, rng bool) {
	b.flush()
	b.w = w
	switch {
	case b.lim > 0 && uint64(size) <= 0xffff:
		b.a[0] = TraceAccess{Off: off, Buf: int32(buf), Size: uint16(size), Write: write, Range: rng}
		b.n = 1
	case rng:
		b.tr.Range(w, buf, off, size, write)
	default:
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
	if b.n > 0 {
		b.bt.Accesses(b.w, b.a[:b.n])
		b.n = 0
	}
}
