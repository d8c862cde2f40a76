package agg

// storeLine copies the 64-byte line src to dst, which must be 64-byte
// aligned, with non-temporal stores (MOVNTDQ, SSE2, so every amd64 CPU
// has it): the line goes to memory through a write-combining buffer
// without being read into the cache first. An ordinary store of a line
// not in the cache reads it from memory (a read for ownership) only to
// overwrite all of it, and the radix scatter writes hundreds of such
// streams at once, none of which is read again before the next phase.
//
//go:noescape
func storeLine(dst, src *[wcLine]int64)

// storeFence orders the non-temporal stores before it ahead of every
// store after it (SFENCE): a worker calls it before the other workers
// may read what it wrote.
func storeFence()
