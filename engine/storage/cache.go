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
type cache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	m      map[cacheKey]*entry
	lru    list.List // of *entry, front = most recent; only completed entries
}

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
	return &cache{budget: max(0, budget), m: map[cacheKey]*entry{}}
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

func (c *cache) complete(e *entry, vecs []*vec.Vector) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.vecs = vecs
	e.size = vectorsSize(vecs)
	close(e.done)
	if e.size > c.budget {
		delete(c.m, e.key) // too big to keep: served to current waiters only
		return
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
