package storage

import (
	"container/list"
	"context"
	"sync"

	"cachebook/engine/vec"
)

// cache holds decoded column chunks (one vector per column and row group)
// under a byte budget, evicting chunks in least-recently-used order. An entry is
// created by the first loader of a column; later loaders wait for it
// (singleflight), so a column is decoded once however many queries ask.
//
// A chunk of a column too large for the cache to hold comfortably is kept
// only when it is read a second time (second-chance admission): a single
// pass over a big table then streams through its row groups, reusing the
// memory of each, instead of filling the cache with chunks nothing may ask
// for again (and paying for every fresh page of them), while a query that
// is run again still finds its columns decoded from its second run on.
// ClickHouse skips its uncompressed-block cache for large reads for the
// same reason (merge_tree_max_rows_to_use_cache).
type cache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	m      map[cacheKey]*entry
	lru    list.List             // of *entry, front = most recent; only completed entries
	ghosts map[cacheKey]struct{} // chunks decoded once and not kept
}

// maxGhosts bounds the record of chunks decoded once; past it the record
// starts again (a chunk then needs one more read to be kept).
const maxGhosts = 1 << 14

// largeColumn reports whether a column (all its row groups together) is
// large enough, over a sixteenth of the budget, to be kept only from its
// second read on: a scan of it would otherwise push out much of what the
// cache holds (LRU alone is not scan-resistant), on the chance that it is
// read again.
func (c *cache) largeColumn(bytes int64) bool { return bytes > c.budget/16 }

type cacheKey struct {
	ident    string // file identity: path, modification time, size
	col      string
	rowGroup int
}

type entry struct {
	key  cacheKey
	done chan struct{} // closed when vecs or err is set
	vecs []*vec.Vector
	err  error
	size int64
	elem *list.Element
}

func newCache(budget int64) *cache {
	return &cache{budget: max(0, budget), m: map[cacheKey]*entry{}, ghosts: map[cacheKey]struct{}{}}
}

// acquire returns the entry for k; own reports that the caller created it
// and must complete or fail it.
func (c *cache) acquire(k cacheKey) (e *entry, own bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[k]; e != nil {
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		return e, false
	}
	e = &entry{key: k, done: make(chan struct{})}
	c.m[k] = e
	return e, true
}

// peek returns the vectors of a completed entry for k without waiting for
// one in progress or creating one.
func (c *cache) peek(k cacheKey) ([]*vec.Vector, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[k]
	if e == nil || e.elem == nil {
		return nil, false
	}
	c.lru.MoveToFront(e.elem)
	return e.vecs, true
}

// passOnce returns the indexes of the chunks ks that are to be read once
// and not kept: not in the cache or being decoded, and not to be kept if
// decoded now (a chunk of a large column read for the first time, as
// large[i] says of ks[i], or any chunk when the budget is zero). It records
// them as read once, as complete would have, so that their next read
// decodes them whole and keeps them.
func (c *cache) passOnce(ks []cacheKey, large []bool) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var once []int
	for i, k := range ks {
		if c.m[k] != nil {
			continue
		}
		if c.budget > 0 {
			if _, seen := c.ghosts[k]; seen || !large[i] {
				continue
			}
		}
		once = append(once, i)
	}
	if c.budget > 0 {
		for _, i := range once {
			c.readOnce(ks[i])
		}
	}
	return once
}

// readOnce records that the chunk k was decoded and not kept; past
// maxGhosts the record starts again. Callers hold c.mu.
func (c *cache) readOnce(k cacheKey) {
	if len(c.ghosts) >= maxGhosts {
		clear(c.ghosts)
	}
	c.ghosts[k] = struct{}{}
}

// complete stores the decoded vectors of e. secondChance says the chunk
// belongs to a large column: it is kept only if it was decoded before.
func (c *cache) complete(e *entry, vecs []*vec.Vector, secondChance bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.vecs = vecs
	e.size = vectorsSize(vecs)
	close(e.done)
	if e.size > c.budget {
		delete(c.m, e.key) // too big to keep: served to current waiters only
		return
	}
	if secondChance {
		if _, seen := c.ghosts[e.key]; !seen {
			c.readOnce(e.key)
			delete(c.m, e.key) // served to current waiters only
			return
		}
		delete(c.ghosts, e.key)
	}
	e.elem = c.lru.PushFront(e)
	c.used += e.size
	for c.used > c.budget {
		old := c.lru.Back().Value.(*entry)
		c.lru.Remove(old.elem)
		old.elem = nil
		delete(c.m, old.key)
		c.used -= old.size
	}
}

func (c *cache) fail(e *entry, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.err = err
	close(e.done)
	delete(c.m, e.key)
}

func (c *cache) wait(ctx context.Context, e *entry) ([]*vec.Vector, error) {
	select {
	case <-e.done:
		return e.vecs, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stats reports the bytes and the number of column chunks held.
func (c *cache) stats() (used int64, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, c.lru.Len()
}

// CacheStats reports the bytes of decoded column chunks held in the cache
// and how many chunks (one column of one row group each) that is.
func (c *Catalog) CacheStats() (bytes int64, chunks int) { return c.cache.stats() }

// Decodes reports how many column chunks the catalog has decoded from files
// since it was opened (cache misses).
func (c *Catalog) Decodes() int64 { return c.decodes.Load() }

func vectorsSize(vs []*vec.Vector) int64 {
	var n int64
	for _, v := range vs {
		if v == nil {
			continue
		}
		n += int64(cap(v.I64))*8 + int64(cap(v.F64))*8 + int64(cap(v.Bytes)) +
			int64(cap(v.Offsets))*4 + int64(cap(v.Valid)) + 64
	}
	return n
}
