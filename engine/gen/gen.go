// Package gen generates a ClickBench-shaped "hits" table as a Parquet file.
//
// The file has the physical layout of ClickBench's hits.parquet for the
// columns it contains (SMALLINT as INT32 annotated INT(16), EventDate as
// UINT16-annotated INT32 days since 1970, EventTime as INT64 epoch seconds,
// strings as BYTE_ARRAY without a String annotation, snappy compression, row
// groups of about a million rows), so the real 14.7 GB file can replace it.
//
// The data imitates the real data's shape: about 5.67 rows per UserID with
// every user present at least once and the extra rows spread by a power law
// over users, a SearchPhrase that is empty in about 85% of rows, AdvEngineID
// zero in 99.4% of rows, RegionID 229 in about 18% of rows, a top URL with
// about 3% of rows, dates in July 2013, and the constants that ClickBench's
// queries Q19 and Q36–Q42 filter on. Row order is either "clustered" (sorted
// by CounterID, EventDate, UserID, EventTime, as ClickHouse stores the table)
// or "shuffled". The same options give a byte-identical file.
package gen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/parquet-go/parquet-go"
)

// Options configures a generation run.
type Options struct {
	Rows         int                   // number of rows (> 0)
	Order        string                // "shuffled" (default) or "clustered"
	Seed         int64                 // RNG seed; equal options give identical files
	Users        int                   // distinct UserIDs; 0 means Rows/5.67
	RowGroupRows int                   // rows per row group; 0 means 1<<20
	Progress     func(done, total int) // called after each chunk of rows, may be nil

	// From and To, where To is not 0, restrict the file to the rows at
	// positions [From, To) of the table the other options describe: a
	// part of it, made independently of the others (on another core, in
	// another process) and assembled with them by Join. Parts gives
	// ranges that start on row group boundaries, for which the joined
	// file is byte for byte the one Write makes of the whole table.
	From, To int
}

const chunkRows = 8192

func (o *Options) normalise() error {
	if o.Rows <= 0 {
		return fmt.Errorf("gen: rows must be positive, got %d", o.Rows)
	}
	if o.Rows >= 1<<32 {
		return fmt.Errorf("gen: at most %d rows, got %d", uint64(1<<32-1), o.Rows)
	}
	switch o.Order {
	case "":
		o.Order = "shuffled"
	case "shuffled", "clustered":
	default:
		return fmt.Errorf("gen: order must be shuffled or clustered, got %q", o.Order)
	}
	if o.Users == 0 {
		o.Users = max(1, int(float64(o.Rows)/UserRowsRatio+0.5))
	}
	if o.Users < 0 || o.Users > o.Rows {
		return fmt.Errorf("gen: users must be in 1..rows, got %d", o.Users)
	}
	if o.RowGroupRows == 0 {
		o.RowGroupRows = 1 << 20
	}
	if o.RowGroupRows < 0 {
		return fmt.Errorf("gen: row group size must be positive, got %d", o.RowGroupRows)
	}
	if o.To == 0 && o.From == 0 {
		o.To = o.Rows
	}
	if o.From < 0 || o.To <= o.From || o.To > o.Rows {
		return fmt.Errorf("gen: part [%d, %d) is not a non-empty range of the %d rows", o.From, o.To, o.Rows)
	}
	return nil
}

// Parts splits a table of rows rows into at most n parts of whole row
// groups of rowGroupRows rows (0: the default), as even as the row groups
// allow: the [From, To) ranges of Options that Join assembles into the
// file Write makes of the whole table.
func Parts(rows, rowGroupRows, n int) [][2]int {
	if rowGroupRows <= 0 {
		rowGroupRows = 1 << 20
	}
	if rows <= 0 {
		return nil
	}
	groups := (rows + rowGroupRows - 1) / rowGroupRows
	n = max(1, min(n, groups))
	parts := make([][2]int, 0, n)
	from := 0
	for k := range n {
		to := min(rows, (groups*(k+1)/n)*rowGroupRows)
		parts = append(parts, [2]int{from, to})
		from = to
	}
	return parts
}

// WriteFile writes the table to path atomically: into a temporary file in
// the same directory, renamed over path once complete.
func WriteFile(ctx context.Context, path string, o Options) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = Write(ctx, f, o); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	return nil
}

// Write generates the table into w.
func Write(ctx context.Context, w io.Writer, o Options) error {
	if err := o.normalise(); err != nil {
		return err
	}
	m := newModel(o)
	m.cacheUsers()
	var order rowOrder
	var err error
	if o.Order == "clustered" {
		order, err = clusteredOrder(ctx, m)
	} else {
		order = shuffledOrder(m)
	}
	if err != nil {
		return err
	}

	pw := parquet.NewGenericWriter[Hit](w,
		parquet.Compression(fastSnappy{}),
		parquet.MaxRowsPerRowGroup(int64(o.RowGroupRows)),
		parquet.CreatedBy("cachebook gen", "1", ""),
	)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rows := o.To - o.From
	nchunks := (rows + chunkRows - 1) / chunkRows
	workers := max(1, runtime.GOMAXPROCS(0))
	// Chunks are generated in parallel and written in order: the dispatcher
	// queues each chunk's result channel in pending (in chunk order, which
	// also bounds the chunks in flight) and hands the job to a worker.
	type chunk struct {
		rows  []Hit
		arena []byte
	}
	type job struct {
		c   int
		res chan *chunk
	}
	free := make(chan *chunk, 2*workers+1)
	for range cap(free) {
		free <- &chunk{rows: make([]Hit, chunkRows), arena: make([]byte, 0, chunkRows*256)}
	}
	jobs := make(chan job)
	pending := make(chan job, 2*workers)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // dispatcher
		defer wg.Done()
		defer close(jobs)
		defer close(pending)
		for c := 0; c < nchunks; c++ {
			j := job{c: c, res: make(chan *chunk, 1)}
			select {
			case pending <- j:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newRowGen(m)
			for j := range jobs {
				var ch *chunk
				select {
				case ch = <-free:
				case <-ctx.Done():
					return
				}
				lo, hi := o.From+j.c*chunkRows, min(o.To, o.From+(j.c+1)*chunkRows)
				ch.rows = ch.rows[:hi-lo]
				g.arena = ch.arena[:0]
				for p := lo; p < hi; p++ {
					i, u := order.at(p)
					g.fill(&ch.rows[p-lo], i, u)
				}
				ch.arena = g.arena
				j.res <- ch // buffered: never blocks
			}
		}()
	}
	defer wg.Wait()

	written := 0
	for j := range pending {
		var ch *chunk
		select {
		case ch = <-j.res:
		case <-ctx.Done():
			return fmt.Errorf("gen: %w", ctx.Err())
		}
		if _, err := pw.Write(ch.rows); err != nil {
			cancel()
			return fmt.Errorf("gen: writing rows: %w", err)
		}
		written += len(ch.rows)
		free <- ch
		if o.Progress != nil {
			o.Progress(written, rows)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	if written != rows {
		return fmt.Errorf("gen: internal error: wrote %d of %d rows", written, rows)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("gen: closing parquet writer: %w", err)
	}
	return nil
}

// rowOrder maps an output position to (row number, user index).
type rowOrder struct {
	users   []uint32 // shuffled: user of the row at each position (row number = position)
	entries []entry  // clustered: sorted rows
}

type entry struct {
	key  uint64
	row  uint32
	user uint32
}

func (o *rowOrder) at(p int) (int, int) {
	if o.entries != nil {
		e := &o.entries[p]
		return int(e.row), int(e.user)
	}
	return p, int(o.users[p])
}

// userMultiset returns the user of each row in generation order: every
// user once, then the extra rows drawn from the power law over user ranks.
func userMultiset(m *model) []uint32 {
	users := make([]uint32, m.rows)
	for i := 0; i < m.users; i++ {
		users[i] = uint32(i)
	}
	r := rand.New(rand.NewPCG(m.seed, 0x6578747261))
	for i := m.users; i < m.rows; i++ {
		users[i] = uint32(m.userLaw.sample(r.Float64()))
	}
	return users
}

func shuffledOrder(m *model) rowOrder {
	users := userMultiset(m)
	r := rand.New(rand.NewPCG(m.seed, 0x73687566))
	r.Shuffle(len(users), func(i, j int) { users[i], users[j] = users[j], users[i] })
	return rowOrder{users: users}
}

// clusteredOrder sorts the rows by (CounterID, EventDate, UserID, EventTime,
// row number). The key packs the CounterID's rank, the day, the UserID's rank
// among all UserIDs and the second of the day into 64 bits.
func clusteredOrder(ctx context.Context, m *model) (rowOrder, error) {
	users := userMultiset(m)

	// Rank users by UserID (signed order).
	type uid struct {
		id int64
		u  uint32
	}
	ids := make([]uid, m.users)
	parallel(m.users, func(g *rowGen, lo, hi int) {
		for u := lo; u < hi; u++ {
			ids[u] = uid{g.user(u).id, uint32(u)}
		}
	}, m)
	slices.SortFunc(ids, func(a, b uid) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return int(a.u) - int(b.u)
	})
	rank := make([]uint32, m.users)
	for r, x := range ids {
		rank[x.u] = uint32(r)
	}
	ids = nil

	ub := uint(bits.Len(uint(m.users)))
	const secBits, dayBits = 17, 5
	if 12+dayBits+ub+secBits > 64 {
		return rowOrder{}, errors.New("gen: too many users for clustered order")
	}
	entries := make([]entry, m.rows)
	parallel(m.rows, func(g *rowGen, lo, hi int) {
		for i := lo; i < hi; i++ {
			if i&0xffff == 0 && ctx.Err() != nil {
				return
			}
			u := int(users[i])
			k, _ := g.key(i, u)
			kv := uint64(m.counterSo[k.counter])
			kv = kv<<dayBits | uint64(k.day)
			kv = kv<<ub | uint64(rank[u])
			kv = kv<<secBits | uint64(k.sec)
			entries[i] = entry{key: kv, row: uint32(i), user: uint32(u)}
		}
	}, m)
	users, rank = nil, nil
	if err := ctx.Err(); err != nil {
		return rowOrder{}, fmt.Errorf("gen: %w", err)
	}
	sortEntries(entries)
	return rowOrder{entries: entries}, nil
}

// sortEntries sorts by (key, row) with an LSD radix sort on the key (rows
// are already in ascending row order, and LSD radix sort is stable).
func sortEntries(e []entry) {
	if len(e) < 1<<12 {
		slices.SortStableFunc(e, func(a, b entry) int {
			switch {
			case a.key < b.key:
				return -1
			case a.key > b.key:
				return 1
			}
			return 0
		})
		return
	}
	var maxKey uint64
	for i := range e {
		maxKey = max(maxKey, e[i].key)
	}
	tmp := make([]entry, len(e))
	src, dst := e, tmp
	for shift := uint(0); shift < uint(bits.Len64(maxKey)); shift += 11 {
		var count [1 << 11]int
		for i := range src {
			count[(src[i].key>>shift)&(1<<11-1)]++
		}
		sum := 0
		for b := range count {
			c := count[b]
			count[b] = sum
			sum += c
		}
		for i := range src {
			b := (src[i].key >> shift) & (1<<11 - 1)
			dst[count[b]] = src[i]
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &e[0] {
		copy(e, src)
	}
}

// parallel runs f over [0, n) split into one contiguous range per
// processor, each with its own row generator.
func parallel(n int, f func(g *rowGen, lo, hi int), m *model) {
	workers := max(1, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	step := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += step {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(newRowGen(m), lo, hi)
		}(lo, min(n, lo+step))
	}
	wg.Wait()
}
