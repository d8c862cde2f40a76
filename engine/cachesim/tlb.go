package cachesim

// lruWays is the associativity above which a TLB of one set (fully
// associative, as the EPYC 9124's 72-entry L1 dTLB) is kept as an LRU
// list with a hash index rather than an array in recency order: the
// array costs a scan and a shift of up to every entry per page change,
// the list a hash probe and a few links. Both are exact LRU.
const lruWays = 16

// lru is one fully associative LRU set of pages: a doubly linked list of
// entries, most recent first, and an open-addressing hash index from a
// page to its entry (linear probing, deletion by backward shift).
type lru struct {
	page       []uint64 // per entry: the page + 1
	prev, next []int32  // per entry; -1 ends the list
	head, tail int32
	n          int     // entries in use
	index      []int32 // entry + 1, or 0 if free
	mask       uint64
}

func newLRU(ways int) *lru {
	size := 16
	for size < 4*ways {
		size *= 2
	}
	return &lru{
		page: make([]uint64, ways), prev: make([]int32, ways), next: make([]int32, ways),
		head: -1, tail: -1, index: make([]int32, size), mask: uint64(size - 1),
	}
}

func (l *lru) home(p uint64) uint64 { return (p * 0x9e3779b97f4a7c15 >> 32) & l.mask }

// access looks page up, installing it as the most recent on a miss (the
// least recent evicted when full); it reports a hit.
func (l *lru) access(page uint64) bool {
	p := page + 1
	h := l.home(p)
	for {
		e := l.index[h]
		if e == 0 {
			break
		}
		if l.page[e-1] == p {
			l.touch(e - 1)
			return true
		}
		h = (h + 1) & l.mask
	}
	var e int32
	if l.n < len(l.page) {
		e = int32(l.n)
		l.n++
	} else {
		e = l.tail
		l.unlink(e)
		l.remove(l.page[e])
	}
	l.page[e] = p
	h = l.home(p)
	for l.index[h] != 0 {
		h = (h + 1) & l.mask
	}
	l.index[h] = e + 1
	l.pushFront(e)
	return false
}

// touch makes entry e the most recent.
func (l *lru) touch(e int32) {
	if l.head == e {
		return
	}
	l.unlink(e)
	l.pushFront(e)
}

func (l *lru) unlink(e int32) {
	p, n := l.prev[e], l.next[e]
	if p >= 0 {
		l.next[p] = n
	} else {
		l.head = n
	}
	if n >= 0 {
		l.prev[n] = p
	} else {
		l.tail = p
	}
}

func (l *lru) pushFront(e int32) {
	l.prev[e], l.next[e] = -1, l.head
	if l.head >= 0 {
		l.prev[l.head] = e
	} else {
		l.tail = e
	}
	l.head = e
}

// remove deletes page p (page + 1, present) from the index, shifting back
// the entries after it in its probe run.
func (l *lru) remove(p uint64) {
	i := l.home(p)
	for l.page[l.index[i]-1] != p {
		i = (i + 1) & l.mask
	}
	for j := i; ; {
		j = (j + 1) & l.mask
		e := l.index[j]
		if e == 0 {
			l.index[i] = 0
			return
		}
		// The entry at j may move to i unless its home lies cyclically
		// in (i, j].
		k := l.home(l.page[e-1])
		if (j-k)&l.mask >= (j-i)&l.mask {
			l.index[i] = e
			i = j
		}
	}
}
