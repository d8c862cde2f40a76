package agg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"cachebook/engine/spill"
	"cachebook/engine/vec"
)

// Spilling (Grace hash aggregation, hybrid). When a radix worker's
// partitions would pass the memory limit's share (SpillAt), partition
// buffers (keys, aggregate inputs or partial states, and hashes) are
// appended to one temporary file per spill partition and their memory is
// given back: a group of partitions at a time where the worker carves
// them in groups (SpillGroups), all of them otherwise or when a charge
// fails (spillSome, spillWorker). Once any worker spilled, Next aggregates
// one spill partition at a time from its files, each chunk charged to the
// budget as it is read and released once folded into the table, and from
// the rows the workers still hold in memory for it, unless those would
// leave too little room, when Finalize spills them too (fitsBack). A
// spill partition is 2^(RadixBits-spillBits) radix partitions (all of
// them for fewer radix bits), so that a statement keeps at most two files
// per spill partition open.

// SpillFunc opens the statement's spill space the first time an
// aggregation must spill; its caller closes the space when the statement
// ends. An error (no file system, as in the browser) keeps the memory
// limit's error.
type SpillFunc func() (*spill.Space, error)

// spillBits bounds the spill partitions to 2^spillBits.
const spillBits = 7

// SpillStats is what spilling did.
type SpillStats struct {
	Partitions int   // spill partitions written
	Bytes      int64 // bytes written
	Files      int
	Dir        string
	Splits     int // spill partitions (or parts) too large for memory, split further
	Depth      int // the most levels of splits one part went through
	Write      time.Duration
	Read       time.Duration
	// Kept is the bytes of partitions that stayed in memory and were
	// aggregated from there, with what was read back; Whole is the
	// spill partitions of which nothing went to disk.
	Kept  int64
	Whole int
}

// spiller is a radix aggregation's files.
type spiller struct {
	mu    sync.Mutex
	space *spill.Space
	bits  int
	files [2][]*spill.File // raw rows, partial states; per spill partition
	rows  []int64          // rows spilled per spill partition
	locks []sync.Mutex     // per spill partition
	done  bool             // Finalize moved everything to the files

	// pending are the parts of spill partitions too large for memory,
	// split on further hash bits, still to aggregate.
	pending []spillJob
	splits  int // spill partitions (or parts of them) split
	depth   int // the most levels of splits a part went through
}

// spillJob is a spill partition, or a part of one, to aggregate: its
// files (raw rows, partial states), its rows, and its depth of splits.
type spillJob struct {
	files [2]*spill.File
	rows  int64
	g     int // the spill partition
	level int
	// mem says the job includes the rows the workers hold in memory
	// for the spill partition.
	mem bool
}

// splitBits gives the parts a spill partition too large for memory is
// split into, 2^splitBits, on the hash bits after the spill partition's;
// a part still too large is split again on the next bits, until the
// hash's 64 bits run out.
const splitBits = 4

// SplitWays is how many parts a spill partition too large for memory is
// split into, each level.
const SplitWays = 1 << splitBits

// canSplit reports whether a job has hash bits left to be split on.
func (s *spiller) canSplit(job spillJob) bool {
	return s.bits+splitBits*(job.level+1) <= 64
}

// open returns the spiller, opening the space on the first call.
func (a *radix) openSpill(memErr error) (*spiller, error) {
	s := &a.spill
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.space != nil {
		return s, nil
	}
	if a.cfg.Spill == nil {
		return nil, memErr
	}
	sp, err := a.cfg.Spill()
	if err != nil {
		return nil, fmt.Errorf("%w (and it cannot spill to disk: %v)", memErr, err)
	}
	s.bits = min(a.bits, spillBits)
	n := 1 << s.bits
	s.files = [2][]*spill.File{make([]*spill.File, n), make([]*spill.File, n)}
	s.rows = make([]int64, n)
	s.locks = make([]sync.Mutex, n)
	s.space = sp
	return s, nil
}

// spilled reports whether any worker spilled.
func (a *radix) spilled() bool {
	a.spill.mu.Lock()
	defer a.spill.mu.Unlock()
	return a.spill.space != nil
}

// scatterSpilling scatters rows into worker w's scatterer sc, spilling the
// worker's partitions when they would pass the memory limit.
func (a *radix) scatterSpilling(w int, sc *scatterer, in Input, hs []uint64) error {
	if at := a.cfg.SpillAt; at > 0 && rootUsed(a.cfg.Budget) > at && a.holds(w) > at/int64(16*len(a.scats)) && !a.noSpill.Load() {
		// Past the share of the limit the partitions may take: spill
		// now, while the rest of the statement has room.
		if err := a.spillSome(w); err != nil {
			if !errors.Is(err, ErrMemoryLimit) {
				return err
			}
			a.noSpill.Store(true) // cannot spill here: go on to the limit
		}
	}
	for try := 0; ; try++ {
		before := sc.rows
		err := sc.scatterHashed(in, hs)
		// With several workers, one whose partitions are empty already
		// waits a little for the others to spill theirs.
		if err == nil || !errors.Is(err, ErrMemoryLimit) || try == 2 && len(a.scats) == 1 || try == 50 {
			return err
		}
		if serr := a.spillWorker(w, err); serr != nil {
			return serr
		}
		if sc.rows != before {
			return nil // the rows went in before the charge failed, and out to disk
		}
		if try > 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// preAggOf returns worker w's pre-aggregation, or nil.
func (a *radix) preAggOf(w int) *preAgg {
	if a.pres == nil {
		return nil
	}
	return a.pres[w]
}

// reserveSpilling makes room in worker w's partitions of partial groups
// for a batch of a direct window (scatterer.reserveHashed), spilling the
// worker's partitions when they would pass the memory limit, as
// scatterSpilling does for rows.
func (a *radix) reserveSpilling(w int, keys []*vec.Vector, hs []uint64) error {
	part := a.pres[w].part
	if at := a.cfg.SpillAt; at > 0 && len(hs) > 0 && rootUsed(a.cfg.Budget) > at && a.holds(w) > at/int64(16*len(a.scats)) && !a.noSpill.Load() {
		if err := a.spillSome(w); err != nil {
			if !errors.Is(err, ErrMemoryLimit) {
				return err
			}
			a.noSpill.Store(true)
		}
	}
	for try := 0; ; try++ {
		err := part.reserveHashed(keys, hs)
		if err == nil || !errors.Is(err, ErrMemoryLimit) || try == 2 && len(a.scats) == 1 || try == 50 {
			return err
		}
		if serr := a.spillWorker(w, err); serr != nil {
			return serr
		}
		if try > 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// spillGroupBits gives the groups of partitions a worker's partitions
// are carved in, 2^spillGroupBits, each spilled alone.
const spillGroupBits = 3

// spillWorker writes all of worker w's partitions to the files and
// empties them, giving back their memory: the way out when a charge
// failed.
func (a *radix) spillWorker(w int, memErr error) error {
	s, err := a.openSpill(memErr)
	if err != nil {
		return err
	}
	a.emptyWindow(w)
	for _, sc := range a.workerScatterers(w) {
		for m := range sc.slabs {
			if err := a.spillGroup(s, sc, m); err != nil {
				return err
			}
		}
	}
	a.arenas[w].Free()
	return nil
}

// spillSome makes room when the statement passes the share of the limit
// the partitions may take (SpillAt): worker w writes the groups of
// partitions it spilled before (their rows go to disk in any case), then
// the group holding the most of those still in memory, marked spilled
// from then on, and so on until the statement is back under three
// quarters of the share, the worker under its part of that once it wrote
// something, or every group of the worker is out. The groups
// never spilled stay in memory and are aggregated from there: only what
// does not fit goes to disk, as in hybrid hash joins.
func (a *radix) spillSome(w int) error {
	s, err := a.openSpill(ErrMemoryLimit)
	if err != nil {
		return err
	}
	a.emptyWindow(w)
	scs := a.workerScatterers(w)
	out := a.out[w]
	spill := func(m int) error {
		for _, sc := range scs {
			if err := a.spillGroup(s, sc, m); err != nil {
				return err
			}
		}
		return nil
	}
	held := a.holds(w)
	for m, o := range out {
		if o {
			if err := spill(m); err != nil {
				return err
			}
		}
	}
	// At least one group goes, whatever else holds the statement's
	// memory; more only while the worker holds more than its part.
	target := a.cfg.SpillAt * 3 / 4
	for rootUsed(a.cfg.Budget) > target && (a.holds(w) == held || a.holds(w) > target/int64(len(a.scats))) {
		best, most := -1, int64(0)
		for m, o := range out {
			var held int64
			for _, sc := range scs {
				held += sc.slabs[m].total
			}
			if !o && held > most {
				best, most = m, held
			}
		}
		if best < 0 {
			break
		}
		out[best] = true
		if err := spill(best); err != nil {
			return err
		}
	}
	return nil
}

// emptyWindow moves the groups of worker w's direct window, if any, into
// its partitions: they are rows of them, and a spill moves those.
func (a *radix) emptyWindow(w int) {
	if pa := a.preAggOf(w); pa != nil && pa.dw != nil && pa.dw.n > 0 {
		pa.emptyDirect()
	}
}

// workerScatterers returns worker w's partitions: of raw rows, then of
// partial states, if it pre-aggregates.
func (a *radix) workerScatterers(w int) []*scatterer {
	scs := []*scatterer{a.scats[w]}
	if pa := a.preAggOf(w); pa != nil {
		scs = append(scs, pa.part)
	}
	return scs
}

// spillGroup writes group m of sc's partitions to the files and gives
// back its memory.
func (a *radix) spillGroup(s *spiller, sc *scatterer, m int) error {
	if sc == nil {
		return nil
	}
	kind := sc.spillKind
	shift := a.bits - s.bits
	lo, hi := sc.groupParts(m)
	for p := lo; p < hi; p++ {
		g := p >> shift
		for _, c := range sc.parts[p].chunks {
			n := c.n
			if n == 0 {
				continue
			}
			cols := sc.spillCols(c)
			s.locks[g].Lock()
			var err error
			f := s.files[kind][g]
			if f == nil {
				f, err = s.space.Create()
				s.files[kind][g] = f
			}
			if err == nil {
				err = f.Append(cols)
			}
			s.rows[g] += int64(n)
			s.locks[g].Unlock()
			if err != nil {
				return fmt.Errorf("GROUP BY spill: %w", err)
			}
		}
	}
	sc.emptyGroup(m)
	return nil
}

// spillCols returns chunk c's columns as a spill file holds them: the
// hashes (those of a hashless chunk computed again, into memory of their
// own), then the columns in use.
func (s *scatterer) spillCols(c *chunk) []*vec.Vector {
	m := c.n
	var hs []int64
	if m > 0 {
		hashes := c.hashes
		if s.rehash != nil {
			hashes = make([]uint64, m)
			s.rehash.Hash(c.keys, m, hashes)
		}
		hs = unsafe.Slice((*int64)(unsafe.Pointer(&hashes[0])), m)
	}
	cols := []*vec.Vector{{Type: vec.Int64, Len: m, I64: hs}}
	for i, v := range c.cols {
		if s.colUsed[i] {
			cols = append(cols, v)
		}
	}
	return cols
}

// emptyGroup drops the rows of group m of the partitions after a spill
// and gives back its memory: its slab's blocks, and what its rows were
// counted as having written.
func (s *scatterer) emptyGroup(m int) {
	lo, hi := s.groupParts(m)
	var wrote int64
	for p := lo; p < hi; p++ {
		for _, c := range s.parts[p].chunks {
			wrote += c.written()
		}
		s.parts[p] = partition{}
		s.cur[p] = nil
	}
	sl := &s.slabs[m]
	if sl.own {
		sl.arena.Free()
	}
	*sl = slab{arena: sl.arena, budget: sl.budget, maxBlock: sl.maxBlock, first: sl.first, own: sl.own}
	s.written = max(0, s.written-wrote)
	held := max(s.written, s.blocks())
	s.budget().Grow(held - s.bytes)
	s.bytes = held
}

// written returns the bytes a chunk's rows were counted as, as
// scatterHashed counts them.
func (c *chunk) written() int64 {
	n := int64(len(c.hashes)) * 8
	for _, v := range c.cols {
		switch {
		case v == nil:
		case v.Type == vec.String:
			n += int64(len(v.Bytes)) + 4*int64(v.Len)
		default:
			n += 8 * int64(v.Len)
		}
		if v != nil && v.Valid != nil {
			n += int64(v.Len)
		}
	}
	return n
}

// finishSpill, once a worker spilled, has Next aggregate by spill
// partition, each from its files and from the rows the workers still
// hold in memory for it.
func (a *radix) finishSpill(ctx context.Context) error {
	if !a.spilled() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s := &a.spill
	if !a.fitsBack() {
		// The rows held in memory would leave too little room to
		// aggregate the largest spill partition (or to split it):
		// they go to the files too, as every one of them may.
		for w := range a.scats {
			if a.scats[w] == nil {
				continue
			}
			if err := a.spillWorker(w, nil); err != nil {
				return err
			}
		}
	}
	for g := range s.rows {
		if s.rows[g] > 0 {
			a.spillParts++
		} else if a.memRows(g) > 0 {
			a.whole++
		}
	}
	for w := range a.scats {
		if a.scats[w] != nil {
			a.kept += a.holds(w)
		}
	}
	s.done = true
	a.left.Store(int64(len(s.rows)))
	return nil
}

// fitsBack reports whether, with the rows the workers hold in memory
// kept there, the memory limit leaves room for every worker at once to
// aggregate the largest spill partition even if each of its rows were a
// group of its own: its bytes on disk and in memory, and table slots for
// each row.
func (a *radix) fitsBack() bool {
	if a.groupBits == 0 {
		// Partitions not carved in groups spill whole, and a limit
		// too small for groups leaves the rest of the statement (the
		// groups handed on, held by what consumes them) the room they
		// took.
		return false
	}
	room := int64(math.MaxInt64)
	for b := a.cfg.Budget; b != nil; b = b.Parent {
		if b.Limit > 0 {
			room = min(room, b.Limit-b.Used())
		}
	}
	s := &a.spill
	var most int64
	for g := range s.rows {
		need := 32 * s.rows[g]
		for _, f := range [2]*spill.File{s.files[0][g], s.files[1][g]} {
			if f != nil {
				need += f.Size()
			}
		}
		a.eachMemChunk(g, func(_ *scatterer, c *chunk) error {
			need += 32*int64(c.n) + c.written()
			return nil
		})
		most = max(most, need)
	}
	return most <= room/int64(2*len(a.scats))
}

// memRows returns the rows the workers hold in memory for spill
// partition g.
func (a *radix) memRows(g int) int64 {
	var n int64
	a.eachMemChunk(g, func(_ *scatterer, c *chunk) error {
		n += int64(c.n)
		return nil
	})
	return n
}

// eachMemChunk calls f with each chunk the workers hold in memory for
// spill partition g, and the partitions it is of, until f fails.
func (a *radix) eachMemChunk(g int, f func(sc *scatterer, c *chunk) error) error {
	lo, hi := a.spillRange(g)
	for w := range a.scats {
		if a.scats[w] == nil {
			continue
		}
		for _, sc := range a.workerScatterers(w) {
			for p := lo; p < hi; p++ {
				for _, c := range sc.parts[p].chunks {
					if err := f(sc, c); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// spillRange returns the radix partitions [lo, hi) of spill partition g.
func (a *radix) spillRange(g int) (lo, hi int) {
	shift := a.bits - a.spill.bits
	return g << shift, (g + 1) << shift
}

// aggregateSpilled aggregates spill partition g from its files with
// worker w's table.
func (a *radix) aggregateSpilled(w, g int) (Part, error) {
	s := &a.spill
	job := spillJob{files: [2]*spill.File{s.files[0][g], s.files[1][g]}, rows: s.rows[g] + a.memRows(g), g: g, mem: true}
	s.files[0][g], s.files[1][g] = nil, nil
	return a.aggregateJob(w, job)
}

// nextPending aggregates a part of a split spill partition, if any is
// pending: ok is false when none is.
func (a *radix) nextPending(w int) (part Part, ok bool, err error) {
	s := &a.spill
	s.mu.Lock()
	if len(s.pending) == 0 {
		s.mu.Unlock()
		return Part{}, false, nil
	}
	job := s.pending[len(s.pending)-1]
	s.pending = s.pending[:len(s.pending)-1]
	s.mu.Unlock()
	part, err = a.aggregateJob(w, job)
	a.left.Add(-1)
	return part, true, err
}

// aggregateJob aggregates one job. A job too large for memory is split
// into 2^splitBits pending jobs instead, and gives an empty part; so is
// each of those still too large, on the next hash bits, while there are
// bits left. A job of few groups and many rows is not too large: its
// table is sized for the groups the sizer expects, and where even that
// reservation does not fit, it grows from small with the groups it finds.
func (a *radix) aggregateJob(w int, job spillJob) (Part, error) {
	s := &a.spill
	if job.rows == 0 {
		return Part{}, nil
	}
	var disk int64
	for _, f := range job.files {
		if f != nil {
			disk += f.Size()
		}
	}
	wrap := func(err error) error {
		if errors.Is(err, ErrMemoryLimit) {
			return fmt.Errorf("GROUP BY spill partition %d of %d (%s on disk, %d rows, split %d times) does not fit in memory_limit even alone: %w",
				job.g, len(s.rows), FormatBytes(disk), job.rows, job.level, err)
		}
		return err
	}
	groups, keyRows, reserve := a.sizer.predict(int(min(job.rows, 1<<30)))
	gs, err := a.groupSet(w, groups)
	if err == nil {
		err = gs.table.Reserve(keyRows, reserve)
	}
	if errors.Is(err, ErrMemoryLimit) {
		// The rows' share of the sizer's groups is more than the job's
		// groups may be: start small and grow with them.
		if gs != nil {
			gs.abandon(a.cfg.Budget)
		}
		gs, err = a.groupSet(w, 0)
	}
	var rows int64
	if err == nil {
		rows, err = a.foldFiles(gs, job)
	}
	if err != nil {
		if !errors.Is(err, ErrMemoryLimit) || !s.canSplit(job) {
			return Part{}, wrap(err)
		}
		// Too large: give back what the table took and split the job.
		gs.abandon(a.cfg.Budget)
		if err := a.split(job); err != nil {
			return Part{}, wrap(err)
		}
		return Part{}, nil
	}
	for _, f := range job.files {
		if f != nil {
			if err := f.Remove(); err != nil {
				return Part{}, err
			}
		}
	}
	return a.finishPart(gs, rows)
}

// abandon gives back what the set's keys and states charged, when its
// groups are dropped rather than handed out.
func (gs *groupSet) abandon(b *Budget) {
	b.Grow(-gs.table.keyBytes)
	gs.table.keyBytes = 0
	for _, st := range gs.states {
		st.release()
	}
}

// eachChunk reads the chunks of a job's files, charged while f runs, then
// those of the rows held in memory, if the job includes them.
func (a *radix) eachChunk(job spillJob, f func(kind int, cols []*vec.Vector, hs []uint64, m int) error) error {
	if err := a.eachFileChunk(job, f); err != nil || !job.mem {
		return err
	}
	return a.eachMemChunk(job.g, func(sc *scatterer, c *chunk) error {
		if m := c.n; m > 0 {
			cols := sc.spillCols(c)
			return f(sc.spillKind, cols, unsafe.Slice((*uint64)(unsafe.Pointer(&cols[0].I64[0])), m), m)
		}
		return nil
	})
}

// eachFileChunk reads the chunks of a job's files, charged while f runs.
func (a *radix) eachFileChunk(job spillJob, f func(kind int, cols []*vec.Vector, hs []uint64, m int) error) error {
	b := a.cfg.Budget
	for kind, file := range job.files {
		if file == nil {
			continue
		}
		r, err := file.Reader()
		if err != nil {
			return err
		}
		for {
			var charged int64
			cols, ok, err := r.Next(func(n int64) error {
				if err := b.Grow(n); err != nil {
					return err
				}
				charged = n
				return nil
			})
			if err != nil || !ok {
				b.Grow(-charged)
				if err != nil {
					return err
				}
				break
			}
			m := cols[0].Len
			var hs []uint64
			if m > 0 {
				hs = unsafe.Slice((*uint64)(unsafe.Pointer(&cols[0].I64[0])), m)
			}
			err = f(kind, cols, hs, m)
			b.Grow(-charged)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// foldFiles folds a job's chunks into gs and returns the rows folded.
func (a *radix) foldFiles(gs *groupSet, job spillJob) (int64, error) {
	var rows int64
	used := [2][]bool{a.colsUsed(0), a.colsUsed(1)}
	err := a.eachChunk(job, func(kind int, cols []*vec.Vector, hs []uint64, m int) error {
		full := make([]*vec.Vector, len(used[kind]))
		k := 1
		for i, u := range used[kind] {
			if u {
				full[i] = cols[k]
				k++
			}
		}
		keys, args := full[:len(a.keyTypes)], full[len(a.keyTypes):]
		var err error
		if kind == 0 {
			err = gs.add(keys, args, hs, m)
		} else {
			err = gs.merge(keys, args, hs, m)
		}
		rows += int64(m)
		return err
	})
	return rows, err
}

// split writes a job's rows to 2^splitBits new jobs, by the hash bits
// after the spill partition's, removes its files and queues the new jobs.
func (a *radix) split(job spillJob) error {
	s := &a.spill
	n := 1 << splitBits
	subs := make([]spillJob, n)
	shift := uint(64 - s.bits - splitBits*(job.level+1))
	err := a.eachChunk(job, func(kind int, cols []*vec.Vector, hs []uint64, m int) error {
		parts := make([][]*vec.Vector, n)
		for i, h := range hs {
			sub := int(h>>shift) & (n - 1)
			if parts[sub] == nil {
				parts[sub] = make([]*vec.Vector, len(cols))
				for c, v := range cols {
					parts[sub][c] = vec.NewVector(v.Type, 0)
				}
			}
			for c, v := range cols {
				parts[sub][c].AppendFrom(v, i)
			}
		}
		for sub, p := range parts {
			if p == nil {
				continue
			}
			f := subs[sub].files[kind]
			if f == nil {
				var err error
				if f, err = s.space.Create(); err != nil {
					return fmt.Errorf("GROUP BY spill: %w", err)
				}
				subs[sub].files[kind] = f
			}
			if err := f.Append(p); err != nil {
				return fmt.Errorf("GROUP BY spill: %w", err)
			}
			subs[sub].rows += int64(p[0].Len)
		}
		return nil
	})
	for _, f := range job.files {
		if f != nil {
			f.Remove()
		}
	}
	if err != nil {
		for _, sub := range subs {
			for _, f := range sub.files {
				if f != nil {
					f.Remove()
				}
			}
		}
		return err
	}
	s.mu.Lock()
	s.splits++
	s.depth = max(s.depth, job.level+1)
	for _, sub := range subs {
		if sub.rows > 0 {
			sub.g, sub.level = job.g, job.level+1
			s.pending = append(s.pending, sub)
			a.left.Add(1)
		}
	}
	s.mu.Unlock()
	return nil
}

// colsUsed returns which columns a kind of spilled chunk has: the keys,
// then the aggregates' inputs (raw rows) or partial states.
func (a *radix) colsUsed(kind int) []bool {
	used := make([]bool, len(a.keyTypes))
	for i := range used {
		used[i] = true
	}
	for _, sp := range a.specs {
		if kind == 0 {
			used = append(used, sp.HasInput())
			continue
		}
		for range partialTypes(sp) {
			used = append(used, true)
		}
	}
	return used
}

// SpillStats returns what the aggregation spilled (zero if nothing).
func (a *radix) SpillStats() SpillStats {
	a.spill.mu.Lock()
	sp := a.spill.space
	a.spill.mu.Unlock()
	if sp == nil {
		return SpillStats{}
	}
	st := sp.Stats()
	a.spill.mu.Lock()
	splits, depth := a.spill.splits, a.spill.depth
	a.spill.mu.Unlock()
	return SpillStats{Partitions: a.spillParts, Splits: splits, Depth: depth, Bytes: st.BytesWritten, Files: st.Files, Dir: sp.Dir(),
		Write: st.WriteTime, Read: st.ReadTime, Kept: a.kept, Whole: a.whole}
}

// rootUsed is the memory used of the statement's budget, b's root.
func rootUsed(b *Budget) int64 {
	for b != nil && b.Parent != nil {
		b = b.Parent
	}
	return b.Used()
}

// holds is the partition memory worker w holds.
func (a *radix) holds(w int) int64 {
	n := a.scats[w].bytes
	if a.pres != nil && a.pres[w] != nil {
		n += a.pres[w].part.bytes
	}
	return n
}
