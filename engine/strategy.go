package engine

import (
	"fmt"
	"math"
	"strings"

	"cachebook/engine/agg"
	"cachebook/engine/spill"
	"cachebook/engine/vec"
)

// This file is the one place that decides how a GROUP BY runs: which
// strategy (naive, radix, parallel), with how many threads and radix bits,
// which inner loop, from which estimate of the groups, and why. The hash
// aggregate operator asks it once, before it consumes its input, runs what
// it says, and EXPLAIN prints the inputs and the answer.

// aggPlan is how one GROUP BY runs: the strategy, the inner loop and the
// estimate of the groups they were decided from (nil when there is none).
type aggPlan struct {
	strategyChoice
	loop agg.Loop
	// loopNote says why the loop is not the one the shape allows ("").
	loopNote string
	// packBytes and packWords are the size of the generic loop's keys
	// packed into one or two words (agg.PackedKeys); packWords is 0 where
	// they are not packed.
	packBytes, packWords int
	est                  *groupEstimate
}

// planAggregate decides how an aggregation of keys of keyTypes and
// aggregates specs runs: the strategy (chooseStrategy) and the loop.
func planAggregate(st Settings, cache CacheSizes, keyTypes []vec.Type, specs []agg.Spec, est *groupEstimate, memLimit int64) aggPlan {
	p := aggPlan{strategyChoice: chooseStrategy(st, cache, len(keyTypes), len(specs), inputs(specs), est, memLimit), est: est,
		loop: agg.ChooseLoop(keyTypes, specs, st.GenericAgg)}
	p.packBytes, p.packWords = agg.PackedKeys(keyTypes)
	if p.packWords > 0 && st.GenericAgg {
		p.packWords = 0
		p.loopNote = "packed keys disabled by SET generic_agg"
	}
	if len(keyTypes) == 0 {
		p.threads = agg.GlobalWorkers(specs, p.threads)
	} else if p.name == "naive" && !p.shared && p.threads > 1 {
		if w := agg.NaiveWorkers(specs, p.threads); w < p.threads {
			p.threads = w
			p.why += ": one thread, as an aggregate's states cannot be merged"
		}
	}
	if p.loop == agg.Generic && agg.CountFast(keyTypes, specs) {
		p.loopNote = "tuned integer count(*) loop disabled by SET generic_agg"
	}
	if p.loop == agg.CountLoop && p.spills {
		p.loop = agg.Generic
		p.loopNote = "tuned integer count(*) loop cannot spill, and the partitions are expected to pass the memory limit"
	}
	return p
}

// inputs is the number of aggregates of specs that take an input column.
func inputs(specs []agg.Spec) int {
	n := 0
	for _, sp := range specs {
		if sp.HasInput() {
			n++
		}
	}
	return n
}

// spillCount hands the tuned count(*) loop of a radix or parallel plan
// over to the generic loop where its partitions of at most rows rows
// (the estimate's, if smaller) may pass what the memory limit memLimit
// lets partitions take before they spill (spillShare of it): the tuned
// loop's partitions cannot spill. The generic loop spills them, and
// EXPLAIN says so.
func (p *aggPlan) spillCount(rows, memLimit int64) {
	if p.loop != agg.CountLoop || p.name == "naive" || memLimit <= 0 || !spill.Supported() {
		return
	}
	if p.est != nil && p.est.input > 0 {
		rows = min(rows, p.est.input)
	}
	// A key per row, with the scatter's slack, and half again with
	// parallel workers (countRadix).
	need := rows * 8 * 5 / 4
	if p.threads > 1 {
		need = need * 3 / 2
	}
	if need <= spillShare(memLimit) {
		return
	}
	p.loop = agg.Generic
	p.loopNote = fmt.Sprintf("tuned integer count(*) loop cannot spill, and its partitions of up to %d rows (~%s) could pass the %s of memory_limit they may take",
		rows, agg.FormatBytes(need), agg.FormatBytes(spillShare(memLimit)))
	p.spills = true
}

// spillShare is the bytes of a statement's memory limit its radix
// partitions may take before they spill: the scan, the pre-aggregation
// tables and the read-back need the rest, a quarter of the limit and at
// least 1 GiB, or five eighths of a limit too small for that. Partitions
// that stay within the share stay in memory to the end (only the groups
// of partitions past it spill), so a larger share writes less.
func spillShare(memLimit int64) int64 {
	return max(memLimit*3/8, memLimit-max(memLimit/4, 1<<30))
}

// sideShare is spillShare for the side aggregation of a split DISTINCT,
// which shares the statement with the main one: each may take three
// eighths of the limit.
func sideShare(memLimit int64) int64 { return memLimit * 3 / 8 }

// config returns the configuration that runs the plan, with the
// session's settings.
func (p aggPlan) config(st Settings) agg.Config {
	cfg := agg.Config{Threads: p.threads, Shared: p.shared, RadixBits: p.bits, HugePages: st.HugePages, Generic: st.GenericAgg || p.spills,
		PlainKeys: st.GenericAgg}
	if p.name != "naive" {
		cfg.Strategy = agg.Radix
	}
	if !st.PreAggregate {
		cfg.PreAggGroups = -1
	}
	if p.est != nil {
		cfg.GroupsHint = p.est.groups
	}
	return cfg
}

// loopText names the inner loop, which EXPLAIN shows so that learners see
// which code runs.
func (p aggPlan) loopText() string {
	switch p.loop {
	case agg.GlobalLoop:
		if p.threads > 1 {
			return fmt.Sprintf("global aggregate states (one group): a partial state per worker on %d threads, merged at the end", p.threads)
		}
		return "global aggregate states (one group)"
	case agg.CountLoop:
		return "tuned integer-key count(*) loop (one 16-byte slot per group, no state objects)"
	}
	table := "generic hash table"
	if p.packWords > 0 {
		word := "word"
		if p.packWords > 1 {
			word = "words"
		}
		table = fmt.Sprintf("hash table of packed keys (%d bytes in %d %s)", p.packBytes, p.packWords, word)
	}
	if p.loopNote != "" {
		return table + " and aggregate states (" + p.loopNote + ")"
	}
	return table + " and aggregate states"
}

// detail returns EXPLAIN's lines for the plan: the strategy (for an
// aggregation with keys) and the loop.
func (p aggPlan) detail(grouped bool) []string {
	var d []string
	if grouped {
		if p.name == "auto" {
			d = append(d, "strategy: auto ("+p.why+")")
		} else {
			d = append(d, "strategy: "+p.describe())
		}
	}
	return append(d, "loop: "+p.loopText())
}

// strategyChoice records which aggregation strategy runs and why.
type strategyChoice struct {
	name    string // naive, radix, parallel
	threads int
	bits    int
	why     string // the setting and the inputs that decided it
	// spills says that the partitions are expected to pass the memory
	// limit and spill to temp_directory.
	spills bool
	// shared says that naive's threads fold their rows into one table
	// under a lock rather than a table each, merged at the end.
	shared bool
}

func (c strategyChoice) describe() string {
	var b strings.Builder
	b.WriteString(c.name)
	if c.name != "naive" {
		fmt.Fprintf(&b, " (%d partitions", 1<<c.bits)
		if c.threads > 1 {
			fmt.Fprintf(&b, ", %d threads", c.threads)
		}
		b.WriteString(")")
	}
	if c.why != "" {
		b.WriteString(": " + c.why)
	}
	return b.String()
}

// groupEstimate is a HyperLogLog estimate of the number of groups.
type groupEstimate struct {
	groups   int64 // estimated distinct keys in the whole input
	rows     int64 // input rows the sketch saw
	input    int64 // estimated input rows in all (0: unknown)
	keyBytes int64 // average bytes of variable-length key data per row
}

// groupSample is the sketch's count of distinct keys after some rows.
type groupSample struct {
	groups, rows int64
}

// needsEstimate reports whether the choice depends on the data: auto,
// radix_bits derived from the estimated table size, or naive under a
// memory limit that a table of one group per input row, at most rows of
// them, might pass (checkNaive fails such a plan before its table).
func needsEstimate(st Settings, keyTypes []vec.Type, nSpecs int, rows int64) bool {
	if len(keyTypes) == 0 {
		return false
	}
	if st.GroupBy == "naive" {
		return st.MemoryLimit > 0 && rows*maxGroupBytes(keyTypes, nSpecs) > st.MemoryLimit
	}
	return st.GroupBy == "auto" || st.RadixBits < 0
}

// maxGroupBytes is a generous bound of one group's bytes in a table of
// keys of keyTypes and nSpecs aggregates, string keys taken as 64 bytes
// (needsEstimate).
func maxGroupBytes(keyTypes []vec.Type, nSpecs int) int64 {
	n := int64(16*10/7 + 8*nSpecs + 8*len(keyTypes))
	for _, t := range keyTypes {
		if t == vec.String {
			n += 64
		}
	}
	return n
}

// tableBytesOf is about the memory of one hash table of the estimated
// groups of nKeys keys and nSpecs aggregates (0 without an estimate).
func tableBytesOf(nKeys, nSpecs int, est *groupEstimate) int64 {
	if est == nil {
		return 0
	}
	// A slot with its hash, a state per aggregate, a fixed-size word per
	// key, and the key's own bytes when it is a string: the table stores
	// every group's key (URL keys average ~29 bytes on generated hits,
	// which more than doubles their table).
	perGroup := int64(16*10/7+8*nSpecs+8*nKeys) + est.keyBytes
	return est.groups * perGroup
}

// checkNaive fails a naive plan whose one hash table, for the estimated
// groups, would not fit in memLimit, before the table is built: naive
// has no partitions to spill, and a learner should see why and what to
// run instead rather than a failure halfway through.
//
// memLimit is the statement's limit, of which used bytes are in use (the
// scan's reads, the estimate's rows).
func (p aggPlan) checkNaive(nKeys, nSpecs int, memLimit, used int64) error {
	if p.name != "naive" || nKeys == 0 || memLimit <= 0 {
		return nil
	}
	need := tableBytesOf(nKeys, nSpecs, p.est)
	if need <= memLimit-used {
		return nil
	}
	over := "over memory_limit " + agg.FormatBytes(memLimit)
	if used > 0 {
		over = fmt.Sprintf("more than the %s memory_limit %s leaves (%s in use already: the scan's reads, the rows the estimate saw)",
			agg.FormatBytes(max(memLimit-used, 0)), agg.FormatBytes(memLimit), agg.FormatBytes(used))
	}
	return fmt.Errorf("naive GROUP BY needs about %s for one hash table of ~%d groups (HyperLogLog over %d rows), %s; %s: %w",
		agg.FormatBytes(need), p.est.groups, p.est.rows, over, agg.NaiveWayOut(), agg.ErrMemoryLimit)
}

// radixStreams bounds the write streams of a radix scatter that radix_bits
// 'auto' chooses: partitions times the streams a partition is written
// through. Half an L2 TLB of 2048 entries (AMD Zen 2–4; recent Intel cores
// have 1536–2048), so that the current page of every stream has an entry
// and the table and the input have the rest. Measured on an AMD EPYC VM
// (512 KiB L2, fresh partitions on 4 KiB pages), 20M shuffled rows, one
// thread, radix: GROUP BY URL 3.8 s with 2048 partitions, 2.7 s with 256;
// GROUP BY UserID, SearchPhrase 3.3 s and 2.1 s; GROUP BY UserID 637 ms
// and 555 ms.
const radixStreams = 1024

// chooseStrategy applies the session's group_by setting to an aggregation
// of nKeys keys and nSpecs aggregates. For auto it compares the size of a
// naive table for the estimated groups with the caches; radix_bits 'auto'
// picks enough partitions that each partition's table fits in half of L2.
// est is nil when the query has not run (plain EXPLAIN).
//
// memLimit is what the statement's memory limit leaves (0: no limit).
// Radix partitions hold every input row's keys until the partitions are
// aggregated, where a naive table holds each group's once: when the
// partitions would take most of the limit and the table much less, auto
// runs naive, so that the query answers (slowly) instead of failing.
func chooseStrategy(st Settings, cache CacheSizes, nKeys, nSpecs, nInputs int, est *groupEstimate, memLimit int64) strategyChoice {
	threads := max(st.Threads, 1)
	if nKeys == 0 {
		// One group: each worker folds its share of the rows into
		// partial states of its own, merged at the end (planAggregate
		// keeps one worker for aggregates whose states cannot merge).
		return strategyChoice{name: "naive", threads: threads, why: "no GROUP BY keys: one group"}
	}
	tableBytes := tableBytesOf(nKeys, nSpecs, est)
	bits := func() (int, string) {
		if st.RadixBits >= 0 {
			return st.RadixBits, ""
		}
		if est == nil {
			return 12, "; radix_bits derived from the cache sizes when the query runs"
		}
		b := 1
		for b < 12 && tableBytes>>b > cache.L2/2 {
			b++
		}
		// The scatter writes each partition through a stream per column
		// (two for a string: offsets and bytes) and one for the hashes,
		// each at a page of its own: more streams than half the L2 TLB
		// makes most of those writes wait for a page walk.
		streams := 1 + nKeys + nSpecs
		if est.keyBytes > 0 {
			streams++
		}
		l2 := b
		for b > 1 && streams<<b > radixStreams {
			b--
		}
		why := fmt.Sprintf("; ~%d groups (HyperLogLog over %d rows) need ~%s: ", est.groups, est.rows, agg.FormatBytes(tableBytes))
		if b < l2 {
			return b, why + fmt.Sprintf("%d partitions, whose %d write streams stay within half the L2 TLB (%d partitions would keep each table within half the L2 cache, %s)",
				1<<b, streams<<b, 1<<l2, agg.FormatBytes(cache.L2))
		}
		return b, why + fmt.Sprintf("%d partitions keep each table within half the L2 cache (%s)", 1<<b, agg.FormatBytes(cache.L2))
	}
	switch st.GroupBy {
	case "naive":
		return strategyChoice{name: "naive", threads: 1, why: "SET group_by = 'naive'"}
	case "radix":
		b, why := bits()
		return strategyChoice{name: "radix", threads: 1, bits: b, why: "SET group_by = 'radix'" + why}
	case "parallel":
		b, why := bits()
		return strategyChoice{name: "parallel", threads: threads, bits: b, why: fmt.Sprintf("SET group_by = 'parallel', threads = %d", threads) + why}
	}
	if est == nil {
		return strategyChoice{name: "auto", why: "decided when the query runs, from a HyperLogLog estimate of the groups; EXPLAIN ANALYZE shows the choice"}
	}
	// A table in L3 still waits on the L3 for every probe, and an L3 is
	// shared by every core of its socket: on a server chip (or a VM that
	// reports its host socket's L3, 480 MiB on ours) a core's share is
	// a few times its L2. So naive keeps to half the L3 and to 8 times the
	// L2, which on a desktop chip is about the same bound. Measured on our
	// VM at 20M shuffled rows, one thread: GROUP BY UserID (a 56 MiB
	// table, well within its reported L3) ran 1.7 times as fast radix.
	threshold := cache.L3 / 2
	if cache.L2 > 0 {
		threshold = min(threshold, 8*cache.L2)
	}
	// Naive runs on one thread. With more, a table beyond the L2 is
	// better split: in L3 a naive probe waits tens of nanoseconds, and the
	// parallel strategy's workers each scatter and aggregate their share
	// (GROUP BY URL, clustered, 20M rows, 5.5M groups: naive on one thread
	// 2.1 s, parallel on two 0.78 s).
	parallelBeyond := threshold
	if threads > 1 && cache.L2 > 0 {
		parallelBeyond = min(threshold, cache.L2)
	}
	// Under a memory limit naive, which cannot spill, runs only where its
	// table fits in three quarters of it.
	naiveFits := memLimit <= 0 || tableBytes <= memLimit/4*3 || !spill.Supported()
	if tableBytes <= parallelBeyond && naiveFits {
		why := fmt.Sprintf("auto: ~%d groups (HyperLogLog over %d rows) need ~%s, within half the L3 cache (%s) and 8 times the L2",
			est.groups, est.rows, agg.FormatBytes(tableBytes), agg.FormatBytes(cache.L3))
		if parallelBeyond < threshold {
			why += fmt.Sprintf(" and the L2 (%s): each of the %d threads folds its share of the rows into a table of its own, merged at the end", agg.FormatBytes(cache.L2), threads)
		}
		return strategyChoice{name: "naive", threads: threads, why: why}
	}
	var partBytes int64
	if est.input > 0 {
		// A partitioned row: its hash, a word per key and per aggregate
		// input (count(*) has none), and the key's string bytes.
		partBytes = est.input * (int64(8+8*nKeys+8*nInputs) + est.keyBytes)
		// Chunks are reserved ahead of their rows with some slack, and
		// each parallel worker reserves for half again its share:
		// measured 1.3× on one thread and 1.6× on two (COUNT(DISTINCT
		// SearchPhrase), 100M rows).
		if threads > 1 {
			partBytes = partBytes * 13 / 8
		} else {
			partBytes = partBytes * 5 / 4
		}
	}
	if partBytes > 0 && memLimit > 0 {
		// Where naive's table would not fit either, radix spills its
		// partitions to temp_directory (where there is a file system).
		// On one thread naive's table, built once, beats partitions
		// written out and read back; with several, parallel workers
		// that spill beat one table behind a lock (docs/engine.md).
		if partBytes > memLimit/4*3 && 2*tableBytes < partBytes && naiveFits && (threads == 1 || !spill.Supported()) {
			why := fmt.Sprintf("auto: ~%d groups (HyperLogLog over %d rows) need ~%s, more than half the L3 cache (%s), but radix partitions of ~%d rows would need ~%s of the %s the memory limit leaves",
				est.groups, est.rows, agg.FormatBytes(tableBytes), agg.FormatBytes(cache.L3), est.input, agg.FormatBytes(partBytes), agg.FormatBytes(memLimit))
			if threads > 1 {
				why += fmt.Sprintf("; its %d threads read the input and fold it into the one table under a lock", threads)
			}
			return strategyChoice{name: "naive", threads: threads, why: why, shared: threads > 1}
		}
	}
	b, why := bits()
	name := "radix"
	if threads > 1 {
		name = "parallel"
	}
	switch {
	case tableBytes <= parallelBeyond:
		why = fmt.Sprintf("auto: ~%d groups need ~%s, more than three quarters of the %s the memory limit leaves: naive's table, which cannot spill, would not fit",
			est.groups, agg.FormatBytes(tableBytes), agg.FormatBytes(memLimit)) + why
	case tableBytes <= threshold:
		why = fmt.Sprintf("auto: more than the L2 cache (%s), and %d threads", agg.FormatBytes(cache.L2), threads) + why
	case tableBytes <= cache.L3/2:
		why = fmt.Sprintf("auto: more than 8 times the L2 cache (%s), a core's share of the L3 (%s)", agg.FormatBytes(cache.L2), agg.FormatBytes(cache.L3)) + why
	default:
		why = fmt.Sprintf("auto: more than half the L3 cache (%s)", agg.FormatBytes(cache.L3)) + why
	}
	if partBytes > 0 {
		why += fmt.Sprintf("; the partitions of ~%d rows need ~%s", est.input, agg.FormatBytes(partBytes))
		if memLimit > 0 && partBytes > memLimit/4*3 {
			why += fmt.Sprintf(", past the %s the memory limit leaves, as would naive's table: they spill to temp_directory", agg.FormatBytes(memLimit))
		}
	}
	spills := memLimit > 0 && partBytes > memLimit/4*3 && spill.Supported()
	return strategyChoice{name: name, threads: threads, bits: b, why: why, spills: spills}
}

// estimateRows is how many input rows the group estimate sketches.
const estimateRows = 1 << 20

// estimator sketches the keys of the first rows of an aggregation's input
// (HyperLogLog) for its estimate of the groups.
type estimator struct {
	limit          int64 // rows to sketch
	sk             hll
	rows, varBytes int64
	half           groupSample // the sketch's count at about half the rows
	hashes         []uint64
}

// full reports whether the estimator has sketched all the rows it wants.
func (e *estimator) full() bool { return e.rows >= e.limit }

// add sketches the keys of one morsel, hashed with h.
func (e *estimator) add(h *agg.Hasher, in agg.Input) {
	if cap(e.hashes) < in.N {
		e.hashes = make([]uint64, in.N)
	}
	h.Hash(in.Keys, in.N, e.hashes)
	for _, x := range e.hashes[:in.N] {
		e.sk.add(x)
	}
	e.varBytes += stringBytes(in.Keys)
	if e.rows < e.limit/2 && e.rows+int64(in.N) >= e.limit/2 {
		e.half = groupSample{groups: e.sk.estimate(), rows: e.rows + int64(in.N)}
	}
	e.rows += int64(in.N)
}

// estimate returns the estimate of the groups of the whole input, of
// which seen rows were scanned so far out of total.
func (e *estimator) estimate(seen, total int64) *groupEstimate {
	full := groupSample{groups: e.sk.estimate(), rows: e.rows}
	est := &groupEstimate{groups: scaleEstimate(e.half, full, seen, total), rows: e.rows}
	if e.rows > 0 {
		est.keyBytes = e.varBytes / e.rows
	}
	if seen > 0 {
		est.input = int64(float64(e.rows) * float64(max(total, seen)) / float64(seen))
	}
	return est
}

// scaleEstimate extrapolates the distinct keys counted in the first rows
// of the input (the sketch's counts at about half and at all of those
// rows, a fraction seen/total of the scan) to the whole input.
//
// Distinct values grow with the rows read roughly as a power of them:
// exponent 1 while nearly every row brings a new key (a unique ID), 0 once
// the sample holds every key (a country code), and in between for skewed
// data such as URLs, where new rare keys keep arriving long after the
// common ones were all seen. The exponent measured between the two counts
// is applied to the rest. This overestimates keys drawn uniformly from a
// fixed set (the growth slows down later) and never underestimates a
// growth that keeps its pace; the strategy choice pays much more for an
// underestimate (a table far beyond the cache, run naive or with too few
// partitions) than for an overestimate (a few more partitions than
// needed). The result is at most one group per input row.
func scaleEstimate(half, full groupSample, seen, total int64) int64 {
	d := full.groups
	if seen <= 0 || seen >= total || full.rows <= 0 || d <= 0 {
		return d
	}
	scale := float64(total) / float64(seen)
	maxGroups := float64(full.rows) * scale
	alpha := 1.0
	if half.rows > 0 && half.rows < full.rows && half.groups > 0 {
		alpha = math.Log(float64(d)/float64(half.groups)) / math.Log(float64(full.rows)/float64(half.rows))
		alpha = min(max(alpha, 0), 1)
	}
	e := float64(d) * math.Pow(scale, alpha)
	return int64(min(e, maxGroups))
}
