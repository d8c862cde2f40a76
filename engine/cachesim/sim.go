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

// Sampling selects what the Sim simulates: a fixed subset of the cache
// sets (Mod, Keep) and, independently, windows of the access stream
// (Every). Zero value: every set and every access.
//
// Set sampling simulates the lines whose index modulo Mod is one of Keep
// fixed residues. Mod must divide the set count of every level, so a
// sampled line's set at every level holds only sampled lines and the
// sampled sets are simulated exactly.
//
// Time sampling (Every above 1) cuts the stream of line accesses into
// periods of Every windows of Window line accesses: the first window of
// each period is simulated and counted; the rest of the period is only
// warmed: its accesses to the simulated sets update the caches' contents
// and LRU order as in full simulation (functional warming, with no counts,
// TLB or ratio-estimator bookkeeping), so a counted window starts from
// the caches the whole stream would have left; the last Warmup line
// accesses before each window are also simulated in full but not counted,
// to bring the TLB and the estimator's recent lines up to date. Counts are
// scaled by the ratio of all line accesses to counted ones, and the
// spread between windows gives the error. The first window starts with
// the stream, so a stream shorter than Window is simulated in full.
type Sampling struct {
	Mod, Keep int
	// Every is the period in windows; 0 or 1: no time sampling.
	Every int
	// Window and Warmup are in line accesses; 0 means DefaultWindow and
	// half the window.
	Window, Warmup int64
}

// DefaultWindow is the length of a time-sampling window in line accesses
// when Sampling does not give one; its warm-up is half as long.
const DefaultWindow = 1 << 14

// Rate returns the fraction of sets simulated.
func (s Sampling) Rate() float64 {
	if s.Mod <= 1 || s.Keep >= s.Mod {
		return 1
	}
	return float64(s.Keep) / float64(s.Mod)
}

// TimeRate returns the fraction of the access stream counted.
func (s Sampling) TimeRate() float64 {
	if s.Every <= 1 {
		return 1
	}
	return 1 / float64(s.Every)
}

func (s Sampling) windows() (window, warmup int64) {
	window, warmup = s.Window, s.Warmup
	if window <= 0 {
		window = DefaultWindow
	}
	if warmup <= 0 {
		warmup = window / 2
	}
	return window, min(warmup, window*int64(s.Every-1))
}

// String describes the sampling, e.g. "4 of 64 set groups (1/16)" or
// "every set; 1 in 8 windows of 16384 line accesses (1/8), caches warmed
// between windows, each after 8192 simulated for warm-up".
func (s Sampling) String() string {
	if s.Rate() == 1 && s.TimeRate() == 1 {
		return "every set (no sampling)"
	}
	out := "every set"
	if s.Rate() < 1 {
		out = fmt.Sprintf("%d of %d set groups (1/%g)", s.Keep, s.Mod, 1/s.Rate())
	}
	if s.TimeRate() < 1 {
		w, u := s.windows()
		out += fmt.Sprintf("; 1 in %d windows of %d line accesses (1/%d), caches warmed between windows, each after %d simulated for warm-up", s.Every, w, s.Every, u)
	}
	return out
}

// ErrPrefetchSampling is returned for a prefetcher with set sampling: a
// prefetch of line X+1 lands in a set that the sampling of line X does not
// cover, so the two cannot be combined.
var ErrPrefetchSampling = errors.New("cachesim: a prefetcher needs every set simulated (sampling off)")

type cache struct {
	ways    int
	setMask uint64
	// tags holds sets*ways entries, MRU first: a line index + 1, with
	// dirtyBit set if the line is dirty; 0 is empty. One array, so that a
	// lookup touches one place of the model's own memory.
	tags    []uint64
	present bool
}

// dirtyBit marks a dirty entry of cache.tags (line indexes stay far
// below it: addresses are below 2^64, lines 64 B or more).
const dirtyBit = 1 << 63

func newCache(l Level, line int) cache {
	sets := l.Sets(line)
	if sets == 0 {
		return cache{}
	}
	return cache{ways: l.Ways, setMask: uint64(sets - 1), present: true, tags: make([]uint64, sets*l.Ways)}
}

// lookup finds line; on a hit it becomes MRU and, if write, dirty.
func (c *cache) lookup(line uint64, write bool) bool {
	base := int(line&c.setMask) * c.ways
	tags := c.tags[base : base+c.ways]
	t := line + 1
	for i, x := range tags {
		if x&^dirtyBit == t {
			if write {
				x |= dirtyBit
			}
			copy(tags[1:i+1], tags[:i])
			tags[0] = x
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
	v := tags[last]
	copy(tags[1:], tags[:last])
	t := line + 1
	if dirty {
		t |= dirtyBit
	}
	tags[0] = t
	if v == 0 {
		return 0, false, false
	}
	return v&^dirtyBit - 1, true, v&dirtyBit != 0
}

type tlb struct {
	ways    int
	setMask uint64
	tags    []uint64
	lru     *lru // instead of tags: one set of more than lruWays ways
}

func newTLB(t TLBLevel) tlb {
	if t.Entries == 0 {
		return tlb{}
	}
	if t.Entries == t.Ways && t.Ways > lruWays {
		return tlb{ways: t.Ways, lru: newLRU(t.Ways)}
	}
	return tlb{ways: t.Ways, setMask: uint64(t.Entries/t.Ways - 1), tags: make([]uint64, t.Entries)}
}

// access looks page up, installing it on a miss; it reports a hit.
func (t *tlb) access(page uint64) bool {
	if t.lru != nil {
		return t.lru.access(page)
	}
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
	lineMask   uint64
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
	ex  exactStats // never discarded (time sampling)
	// Time sampling: the state of the schedule and the lines left in it;
	// saved holds the counts at the end of a counted window, restored at
	// the start of the next; winStart the counts at the start of the open
	// counted window.
	state    winState
	left     int64 // line accesses left in a counted window or warm-up
	skip     int64 // line accesses left to skip; 0 unless skipping
	saved    rawStats
	savedRes [][nResStat]int64
	winStart rawStats
	win      winSums
}

// winState is where the time-sampling schedule is.
type winState uint8

const (
	winCount winState = iota // simulated and counted (also: no time sampling)
	winSkip                  // the caches warmed, counts discarded
	winWarm                  // simulated, counts discarded
)

// exactStats are counted for every access, sampled or not: loads and
// stores, and the lines beyond the first of those that straddle lines.
type exactStats struct {
	loads, stores, extra int64
}

func (e exactStats) lines() int64 { return e.loads + e.stores + e.extra }

// nWinStat is how many statistics the windows' sums follow: L1, L2 and
// L3 misses and DRAM writes (resL1..resWB).
const nWinStat = resWB + 1

// winSums are running sums over closed counted windows of x (the
// window's line accesses) and y (each statistic's raw count), for the
// ratio estimator's variance.
type winSums struct {
	n         int64
	x, xx     float64
	y, yy, xy [nWinStat]float64
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
	accesses                  int64 // line accesses simulated (all but skipped ones)
	sampled                   int64 // accesses to sampled lines
	fresh                     int64 // accesses to another line than the last of its residue
	l1Miss, l2Acc, l2Miss     int64
	l3Acc, memReads           int64
	l1LoadMiss, memLoadReads  int64 // the misses of loads alone
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
		s.Mod, s.Keep = 0, 0
	}
	sim := &Sim{
		geo: g, samp: s, lineShift: log2(g.LineSize), lineMask: uint64(g.LineSize - 1),
		l1: newCache(g.L1, g.LineSize), l2: newCache(g.L2, g.LineSize), l3: newCache(g.L3, g.LineSize),
		t1: newTLB(g.TLB1), t2: newTLB(g.TLB2), lastPage: math.MaxUint64,
	}
	if s.Every > 1 {
		sim.left, _ = s.windows()
		sim.savedRes = make([][nResStat]int64, max(s.Keep, 1))
	} else {
		s.Every, s.Window, s.Warmup = 0, 0, 0
	}
	sim.samp = s
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
	if s.Every > 1 {
		sim.savedRes = make([][nResStat]int64, s.Keep)
	}
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
	if s.skip > 1 && addr&s.lineMask+uint64(size-1) <= s.lineMask {
		// Between time-sampling windows (the common case): counted, and
		// the caches warmed.
		s.skip--
		if write {
			s.ex.stores++
		} else {
			s.ex.loads++
		}
		if line := addr >> s.lineShift; s.keep[line&s.resMask] >= 0 {
			s.warm(line, write)
		}
		return
	}
	s.access(addr, size, write)
}

func (s *Sim) access(addr uint64, size int, write bool) {
	if write {
		s.ex.stores++
	} else {
		s.ex.loads++
	}
	if size < 1 {
		size = 1
	}
	first := addr >> s.lineShift
	last := (addr + uint64(size) - 1) >> s.lineShift
	s.ex.extra += int64(last - first)
	for line := first; ; line++ {
		s.step(line, write)
		if line == last {
			break
		}
	}
}

// step models one line access under the time-sampling schedule.
func (s *Sim) step(line uint64, write bool) {
	switch {
	case s.samp.Every <= 1:
		s.line(line, write)
	case s.skip > 0:
		s.warm(line, write)
		if s.skip--; s.skip == 0 {
			s.advance()
		}
	default:
		s.line(line, write)
		if s.left--; s.left <= 0 {
			s.advance()
		}
	}
}

// advance moves the time-sampling schedule to its next state.
func (s *Sim) advance() {
	w, u := s.samp.windows()
	skip := w*int64(s.samp.Every) - w - u
	switch s.state {
	case winCount:
		s.closeWindow()
		s.saved = s.raw
		copy(s.savedRes, s.res)
		s.state = winSkip
		if s.skip = skip; skip > 0 {
			break
		}
		fallthrough
	case winSkip:
		s.state, s.left = winWarm, u
	case winWarm:
		s.raw = s.saved
		copy(s.res, s.savedRes)
		s.winStart = s.raw
		s.state, s.left = winCount, w
	}
}

// closeWindow adds the counted window now ending to the window sums.
func (s *Sim) closeWindow() {
	d := s.windowCounts()
	x := float64(s.raw.accesses - s.winStart.accesses)
	ws := &s.win
	ws.n++
	ws.x += x
	ws.xx += x * x
	for k, y := range d {
		ws.y[k] += y
		ws.yy[k] += y * y
		ws.xy[k] += x * y
	}
	s.winStart = s.raw
}

// windowCounts returns the open window's raw counts of each statistic.
func (s *Sim) windowCounts() [nWinStat]float64 {
	r, o := s.raw, s.winStart
	return [nWinStat]float64{
		resL1: float64(r.l1Miss - o.l1Miss), resL2: float64(r.l2Miss - o.l2Miss),
		resL3: float64(r.memReads - o.memReads), resWB: float64(r.memWrites - o.memWrites),
	}
}

// Range models size bytes read or written one line at a time from addr, as a
// sequential copy or clear would touch them.
func (s *Sim) Range(addr uint64, size int64, write bool) {
	if size <= 0 {
		return
	}
	ls := uint64(s.geo.LineSize)
	end := addr + uint64(size)
	for a := addr &^ (ls - 1); a < end; a += ls {
		if s.skip > 1 {
			// The lines between windows, in one step.
			n := min(s.skip-1, int64((end-a+ls-1)/ls))
			s.skip -= n
			if write {
				s.ex.stores += n
			} else {
				s.ex.loads += n
			}
			for i := range uint64(n) {
				s.warm((a+i*ls)>>s.lineShift, write)
			}
			a += uint64(n-1) * ls
			continue
		}
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
	reads := s.raw.memReads
	s.fetch(line, r)
	if !write {
		s.raw.l1LoadMiss++
		s.raw.memLoadReads += s.raw.memReads - reads
	}
	s.install(&s.l1, line, write, r, 1)
}

// warm updates the caches for an access to line between time-sampling
// windows as line does, without the TLB and the ratio estimator's
// bookkeeping; the counts it makes are discarded.
func (s *Sim) warm(line uint64, write bool) {
	r := s.keep[line&s.resMask]
	if r < 0 || s.l1.lookup(line, write) {
		return
	}
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
