package agg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"cachebook/engine/spill"
	"cachebook/engine/vec"
)

// Spilling (Grace hash aggregation). When a radix worker's partitions
// would pass the memory limit, its full partition buffers (keys, aggregate
// inputs or partial states, and hashes) are appended to one temporary file
// per spill partition and their memory is reused. Once any worker spilled,
// Finalize spills what every worker still holds and gives the buffers
// back, and Next aggregates one spill partition at a time from its files,
// each chunk charged to the budget as it is read and released once folded
// into the table. A spill partition is 2^(RadixBits-spillBits) radix
// partitions (all of them for fewer radix bits), so that a statement keeps
// at most two files per spill partition open.

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
		if err := a.spillWorker(w, ErrMemoryLimit); err != nil {
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
		if err := a.spillWorker(w, ErrMemoryLimit); err != nil {
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

// spillWorker writes worker w's partitions to the files and empties them,
// keeping their blocks (and their charge) for the rows to come.
func (a *radix) spillWorker(w int, memErr error) error {
	s, err := a.openSpill(memErr)
	if err != nil {
		return err
	}
	if pa := a.preAggOf(w); pa != nil && pa.dw != nil && pa.dw.n > 0 {
		// A direct window's groups are rows of its partitions: they
		// go out with their partial states, and the window starts
		// again empty.
		pa.emptyDirect()
	}
	if err := a.spillScatterer(s, 0, a.scats[w]); err != nil {
		return err
	}
	if a.pres != nil && a.pres[w] != nil {
		if err := a.spillScatterer(s, 1, a.pres[w].part); err != nil {
			return err
		}
	}
	a.arenas[w].Free()
	return nil
}

func (a *radix) spillScatterer(s *spiller, kind int, sc *scatterer) error {
	if sc == nil {
		return nil
	}
	shift := a.bits - s.bits
	for p := range sc.parts {
		g := p >> shift
		for _, c := range sc.parts[p].chunks {
			m := len(c.hashes)
			if m == 0 {
				continue
			}
			cols := []*vec.Vector{{Type: vec.Int64, Len: m, I64: unsafe.Slice((*int64)(unsafe.Pointer(&c.hashes[0])), m)}}
			for i, v := range c.cols {
				if sc.colUsed[i] {
					cols = append(cols, v)
				}
			}
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
			s.rows[g] += int64(m)
			s.locks[g].Unlock()
			if err != nil {
				return fmt.Errorf("GROUP BY spill: %w", err)
			}
		}
	}
	sc.emptied()
	return nil
}

// emptied drops the partitions' rows after a spill and gives their
// memory back (the caller frees the arena).
func (s *scatterer) emptied() {
	for p := range s.parts {
		s.parts[p] = partition{}
		s.cur[p] = nil
	}
	s.slab.budget.Grow(-s.bytes)
	s.bytes, s.written = 0, 0
	s.slab = slab{arena: s.slab.arena, budget: s.slab.budget, maxBlock: s.slab.maxBlock}
}

// finishSpill spills what every worker still holds, once one spilled, and
// gives back the partition buffers: Next then reads every partition from
// its files.
func (a *radix) finishSpill(ctx context.Context) error {
	if !a.spilled() {
		return nil
	}
	s := &a.spill
	for w := range a.scats {
		if err := ctx.Err(); err != nil {
			return err
		}
		if a.scats[w] == nil {
			continue
		}
		if err := a.spillWorker(w, nil); err != nil {
			return err
		}
	}
	for g := range s.rows {
		if s.rows[g] > 0 {
			a.spillParts++
		}
	}
	s.done = true
	a.left.Store(int64(len(s.rows)))
	return nil
}

// aggregateSpilled aggregates spill partition g from its files with
// worker w's table.
func (a *radix) aggregateSpilled(w, g int) (Part, error) {
	s := &a.spill
	job := spillJob{files: [2]*spill.File{s.files[0][g], s.files[1][g]}, rows: s.rows[g], g: g}
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

// eachChunk reads the chunks of a job's files, charged while f runs.
func (a *radix) eachChunk(job spillJob, f func(kind int, cols []*vec.Vector, hs []uint64, m int) error) error {
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
		Write: st.WriteTime, Read: st.ReadTime}
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
