// Package cachesim models the data-memory hierarchy of one core: three
// levels of set-associative cache with LRU replacement, write-back and
// write-allocate, a two-level data TLB for 4 KiB and 2 MiB pages and an
// optional prefetcher (see Geometry for the exact policies). It counts what
// hardware counters would count on a machine that has them, for address
// streams produced from the engine's own data structures (package
// cachesim/trace) or from named access patterns (Pattern).
//
// Every figure it produces is modelled, not measured. With set sampling
// (Sampling) only the lines that map to a fixed subset of the cache sets
// are simulated and the counts are scaled up; Stats carries the standard
// error that the spread between the sampled sets implies.
package cachesim

import (
	"errors"
	"fmt"
	"math"
)

// HugeBase is the lowest address on a 2 MiB page: the model has no page
// tables, so an address stream puts memory that the engine maps with huge
// pages at or above HugeBase and everything else below it, on 4 KiB pages.
const HugeBase = 1 << 44

// Sampling selects the simulated subset of cache sets: the lines whose
// index modulo Mod is one of Keep fixed residues. Mod must divide the set
// count of every level, so a sampled line's set at every level holds only
// sampled lines and the sampled sets are simulated exactly. Zero value:
// every set.
type Sampling struct {
	Mod, Keep int
}

// Rate returns the fraction of sets simulated.
func (s Sampling) Rate() float64 {
	if s.Mod <= 1 || s.Keep >= s.Mod {
		return 1
	}
	return float64(s.Keep) / float64(s.Mod)
}

// String describes the sampling, e.g. "4 of 64 set groups (1/16)".
func (s Sampling) String() string {
	if s.Rate() == 1 {
		return "every set (no sampling)"
	}
	return fmt.Sprintf("%d of %d set groups (1/%g)", s.Keep, s.Mod, 1/s.Rate())
}

// ErrPrefetchSampling is returned for a prefetcher with set sampling: a
// prefetch of line X+1 lands in a set that the sampling of line X does not
// cover, so the two cannot be combined.
var ErrPrefetchSampling = errors.New("cachesim: a prefetcher needs every set simulated (sampling off)")

type cache struct {
	ways    int
	setMask uint64
	tags    []uint64 // sets*ways line indexes + 1, MRU first; 0 is empty
	dirty   []bool
	present bool
}

func newCache(l Level, line int) cache {
	sets := l.Sets(line)
	if sets == 0 {
		return cache{}
	}
	return cache{
		ways: l.Ways, setMask: uint64(sets - 1), present: true,
		tags: make([]uint64, sets*l.Ways), dirty: make([]bool, sets*l.Ways),
	}
}

// lookup finds line; on a hit it becomes MRU and, if write, dirty.
func (c *cache) lookup(line uint64, write bool) bool {
	base := int(line&c.setMask) * c.ways
	tags := c.tags[base : base+c.ways]
	t := line + 1
	for i, x := range tags {
		if x == t {
			d := c.dirty[base+i] || write
			copy(tags[1:i+1], tags[:i])
			copy(c.dirty[base+1:base+i+1], c.dirty[base:base+i])
			tags[0], c.dirty[base] = t, d
			return true
		}
		if x == 0 {
			return false
		}
	}
	return false
}

// fill installs line as MRU and returns the evicted line (ok false if none
// or clean evictions are not wanted: dirty reports whether it was dirty).
func (c *cache) fill(line uint64, dirty bool) (victim uint64, evicted, victimDirty bool) {
	base := int(line&c.setMask) * c.ways
	tags := c.tags[base : base+c.ways]
	last := c.ways - 1
	v, vd := tags[last], c.dirty[base+last]
	copy(tags[1:], tags[:last])
	copy(c.dirty[base+1:base+c.ways], c.dirty[base:base+last])
	tags[0], c.dirty[base] = line+1, dirty
	if v == 0 {
		return 0, false, false
	}
	return v - 1, true, vd
}

type tlb struct {
	ways    int
	setMask uint64
	tags    []uint64
}

func newTLB(t TLBLevel) tlb {
	if t.Entries == 0 {
		return tlb{}
	}
	return tlb{ways: t.Ways, setMask: uint64(t.Entries/t.Ways - 1), tags: make([]uint64, t.Entries)}
}

// access looks page up, installing it on a miss; it reports a hit.
func (t *tlb) access(page uint64) bool {
	if t.tags == nil {
		return false
	}
	sets := t.setMask + 1
	base := int((page>>1)%sets) * t.ways
	tags := t.tags[base : base+t.ways]
	p := page + 1
	i := 0
	for ; i < len(tags); i++ {
		if tags[i] == p {
			copy(tags[1:i+1], tags[:i])
			tags[0] = p
			return true
		}
		if tags[i] == 0 {
			break
		}
	}
	if i == len(tags) {
		i--
	}
	copy(tags[1:i+1], tags[:i])
	tags[0] = p
	return false
}

type stream struct {
	page   uint64
	last   uint64
	stride int64
	conf   int
}

// Sim is one core's modelled hierarchy. It is not safe for concurrent use;
// model each worker with its own Sim.
type Sim struct {
	geo        Geometry
	samp       Sampling
	lineShift  uint
	l1, l2, l3 cache
	t1, t2     tlb
	lastPage   uint64
	keep       []int8 // residue -> index into res, or -1
	resMask    uint64
	res        [][nResStat]int64
	recent     [][recentLines]uint64 // per residue: the last lines accessed (+1), most recent first
	streams    [16]stream
	nextStream int

	raw rawStats
}

const (
	resL1 = iota
	resL2
	resL3
	resWB
	resAcc // line changes within the residue (see line)
	nResStat
)

// recentLines is how many recent lines per residue an access must miss to
// count as a line change (Sim.line).
const recentLines = 4

type rawStats struct {
	loads, stores, accesses   int64 // every access (exact)
	sampled                   int64 // accesses to sampled lines
	fresh                     int64 // accesses to another line than the last of its residue
	l1Miss, l2Acc, l2Miss     int64
	l3Acc, memReads           int64
	l1WB, l2WB, memWrites     int64 // dirty evictions; memWrites reach memory
	pfIssued, pfFill          int64
	tlb1Miss, tlb2Miss, pages int64
}

// New returns a Sim for g, simulating the sets that s selects.
func New(g Geometry, s Sampling) (*Sim, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if s.Rate() < 1 {
		if g.Prefetch != PrefetchOff {
			return nil, ErrPrefetchSampling
		}
		if s.Mod&(s.Mod-1) != 0 || s.Keep <= 0 {
			return nil, fmt.Errorf("cachesim: sampling: modulus must be a power of two and keep positive, got %d of %d", s.Keep, s.Mod)
		}
		for _, l := range []Level{g.L1, g.L2, g.L3} {
			if n := l.Sets(g.LineSize); n > 0 && n%s.Mod != 0 {
				return nil, fmt.Errorf("cachesim: sampling modulus %d does not divide a level's %d sets", s.Mod, n)
			}
		}
	} else {
		s = Sampling{}
	}
	sim := &Sim{
		geo: g, samp: s, lineShift: log2(g.LineSize),
		l1: newCache(g.L1, g.LineSize), l2: newCache(g.L2, g.LineSize), l3: newCache(g.L3, g.LineSize),
		t1: newTLB(g.TLB1), t2: newTLB(g.TLB2), lastPage: math.MaxUint64,
	}
	mod := max(s.Mod, 1)
	sim.resMask = uint64(mod - 1)
	sim.keep = make([]int8, mod)
	sim.recent = make([][recentLines]uint64, mod)
	if s.Mod <= 1 {
		sim.res = make([][nResStat]int64, 1)
		return sim, nil
	}
	for i := range sim.keep {
		sim.keep[i] = -1
	}
	// Keep residues spread pseudo-randomly over 0..Mod-1 (a fixed choice,
	// so runs are reproducible): evenly spaced residues would all miss or
	// all hit a power-of-two stride.
	x := uint64(0x9e3779b97f4a7c15)
	for n := 0; n < s.Keep; {
		x = x*6364136223846793005 + 1442695040888963407
		r := (x >> 33) % uint64(mod)
		if sim.keep[r] < 0 {
			sim.keep[r] = int8(n)
			n++
		}
	}
	sim.res = make([][nResStat]int64, s.Keep)
	return sim, nil
}

// Geometry returns the modelled geometry.
func (s *Sim) Geometry() Geometry { return s.geo }

// Sampling returns the sampling in effect.
func (s *Sim) Sampling() Sampling { return s.samp }

// Load models a read of size bytes at addr.
func (s *Sim) Load(addr uint64, size int) { s.Access(addr, size, false) }

// Store models a write of size bytes at addr.
func (s *Sim) Store(addr uint64, size int) { s.Access(addr, size, true) }

// Access models one read or write of size bytes at addr; an access that
// straddles lines counts once per line, as cachegrind counts it.
func (s *Sim) Access(addr uint64, size int, write bool) {
	if write {
		s.raw.stores++
	} else {
		s.raw.loads++
	}
	if size < 1 {
		size = 1
	}
	first := addr >> s.lineShift
	last := (addr + uint64(size) - 1) >> s.lineShift
	for line := first; ; line++ {
		s.line(line, write)
		if line == last {
			break
		}
	}
}

// Range models size bytes read or written one line at a time from addr, as a
// sequential copy or clear would touch them.
func (s *Sim) Range(addr uint64, size int64, write bool) {
	if size <= 0 {
		return
	}
	ls := uint64(s.geo.LineSize)
	for a := addr &^ (ls - 1); a < addr+uint64(size); a += ls {
		s.Access(a, 1, write)
	}
}

func (s *Sim) line(line uint64, write bool) {
	s.raw.accesses++
	s.translate(line << s.lineShift)
	res := line & s.resMask
	// An access to a line that is not one of the last few of its residue:
	// the auxiliary variable of the sampling's ratio estimator. It follows
	// misses, where the raw access count is dominated by hits on a few hot
	// lines (a stream passing through a hot line's residue alternates with
	// it, which the few recent lines absorb).
	rec := &s.recent[res]
	fresh := true
	for i, x := range rec {
		if x == line+1 {
			copy(rec[1:i+1], rec[:i])
			fresh = false
			break
		}
	}
	if fresh {
		copy(rec[1:], rec[:recentLines-1])
		s.raw.fresh++
	}
	rec[0] = line + 1
	r := s.keep[res]
	if r < 0 {
		return
	}
	s.raw.sampled++
	if fresh {
		s.res[r][resAcc]++
	}
	if s.l1.lookup(line, write) {
		return
	}
	s.raw.l1Miss++
	s.res[r][resL1]++
	if s.geo.Prefetch != PrefetchOff {
		s.prefetch(line)
	}
	s.fetch(line, r)
	s.install(&s.l1, line, write, r, 1)
}

// fetch brings line from L2, L3 or memory into the levels below L1.
func (s *Sim) fetch(line uint64, r int8) {
	if s.l2.present {
		s.raw.l2Acc++
		if s.l2.lookup(line, false) {
			return
		}
		s.raw.l2Miss++
		s.res[r][resL2]++
	}
	if s.l3.present {
		s.raw.l3Acc++
		if s.l3.lookup(line, false) {
			if s.l2.present {
				s.install(&s.l2, line, false, r, 2)
			}
			return
		}
	}
	s.raw.memReads++
	s.res[r][resL3]++
	if s.l3.present {
		s.install(&s.l3, line, false, r, 3)
	}
	if s.l2.present {
		s.install(&s.l2, line, false, r, 2)
	}
}

// install fills line into c (level lv) and writes a dirty victim back to
// the next present level, or to memory.
func (s *Sim) install(c *cache, line uint64, dirty bool, r int8, lv int) {
	v, ev, vd := c.fill(line, dirty)
	if !ev || !vd {
		return
	}
	s.writeBack(v, r, lv)
}

func (s *Sim) writeBack(line uint64, r int8, from int) {
	switch from {
	case 1:
		s.raw.l1WB++
	case 2:
		s.raw.l2WB++
	}
	for lv := from + 1; lv <= 3; lv++ {
		c := &s.l2
		if lv == 3 {
			c = &s.l3
		}
		if !c.present {
			continue
		}
		if !c.lookup(line, true) {
			s.install(c, line, true, r, lv)
		}
		return
	}
	s.raw.memWrites++
	s.res[r][resWB]++
}

func (s *Sim) translate(addr uint64) {
	var page uint64
	if addr >= HugeBase {
		page = (addr>>21)<<1 | 1
	} else {
		page = (addr >> 12) << 1
	}
	if page == s.lastPage {
		return
	}
	s.lastPage = page
	s.raw.pages++
	if s.t1.access(page) {
		return
	}
	s.raw.tlb1Miss++
	if !s.t2.access(page) {
		s.raw.tlb2Miss++
	}
}

// prefetch runs the prefetcher on an L1 demand miss of line.
func (s *Sim) prefetch(line uint64) {
	perPage := uint64(4096 >> s.lineShift)
	page := line / perPage
	switch s.geo.Prefetch {
	case PrefetchNextLine:
		if (line+1)/perPage == page {
			s.prefetchLine(line + 1)
		}
	case PrefetchStride:
		var st *stream
		for i := range s.streams {
			if s.streams[i].page == page+1 {
				st = &s.streams[i]
				break
			}
		}
		if st == nil {
			st = &s.streams[s.nextStream]
			s.nextStream = (s.nextStream + 1) % len(s.streams)
			*st = stream{page: page + 1, last: line}
			return
		}
		d := int64(line) - int64(st.last)
		if d == st.stride && d != 0 {
			st.conf++
		} else {
			st.stride, st.conf = d, 0
		}
		st.last = line
		if st.conf >= 1 {
			for k := int64(1); k <= PrefetchDegree; k++ {
				p := int64(line) + k*st.stride
				if p < 0 || uint64(p)/perPage != page {
					break
				}
				s.prefetchLine(uint64(p))
			}
		}
	}
}

// prefetchLine brings line into L2 and L3 unless L2 already holds it.
func (s *Sim) prefetchLine(line uint64) {
	s.raw.pfIssued++
	if s.l2.present && s.l2.lookup(line, false) {
		return
	}
	if s.l3.present && s.l3.lookup(line, false) {
		if s.l2.present {
			s.install(&s.l2, line, false, 0, 2)
		}
		return
	}
	s.raw.pfFill++
	if s.l3.present {
		s.install(&s.l3, line, false, 0, 3)
	}
	if s.l2.present {
		s.install(&s.l2, line, false, 0, 2)
	}
}
