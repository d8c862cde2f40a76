package kernel

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"cachebook/engine"
	"cachebook/engine/agg"
	"cachebook/engine/cachesim"
	"cachebook/engine/cachesim/trace"
	"cachebook/engine/units"
	"cachebook/engine/vec"
	"cachebook/kernel/latency"
)

// MIMEModel carries modelled counters (engine/cachesim): the report of a
// cachesim cell or the modelled-counters panel of an sql cell with
// counters=model or counters=both. Everything in it is modelled, not
// measured.
const MIMEModel = "application/vnd.cachebook.model+json"

// counterModes returns what the cell's counters attribute asks for: perf
// counters (on, both) and modelled counters (model, both).
func counterModes(cell Cell) (pmu, model bool) {
	switch strings.ToLower(cell.Attrs["counters"]) {
	case "on", "true", "1", "yes":
		return true, false
	case "model":
		return false, true
	case "both":
		return true, true
	}
	return false, false
}

// modelAttr reports whether attribute k of an sql cell belongs to its
// modelled counters (geometry, sample, rows, dram_ns with counters=model
// or both) rather than to the engine's settings.
func modelAttr(cell Cell, k string) bool {
	if _, model := counterModes(cell); !model {
		return false
	}
	return k == "sample" || k == "rows" || k == "dram_ns" || slices.Contains(geometryKeys, k)
}

// geometryKeys are the cell attributes that override the modelled
// geometry (cachesim.Parse).
var geometryKeys = []string{"l1", "l2", "l3", "l1ways", "l2ways", "l3ways", "line", "tlb1", "tlb2", "tlb1ways", "tlb2ways", "prefetch"}

// HostGeometry returns the modelled geometry of this machine: cache sizes
// from sysfs, else CPUID, else cachesim.DefaultGeometry, and where they
// came from. Associativity comes from sysfs where it says; otherwise each
// level takes the default's ways. A level whose set count would not be a
// power of two takes the nearest associativity that gives one, or is
// rounded down, and the source says so.
func HostGeometry() (cachesim.Geometry, string) {
	g := cachesim.DefaultGeometry()
	caches, src := latency.OSCaches()
	if src == "none" || len(caches) == 0 {
		return g, "stated defaults (the machine reports no cache sizes)"
	}
	ways := sysfsWays()
	var notes []string
	for _, c := range caches {
		if c.Type == "Instruction" || c.SizeBytes <= 0 {
			continue
		}
		var l *cachesim.Level
		switch c.Level {
		case 1:
			l = &g.L1
		case 2:
			l = &g.L2
		case 3:
			l = &g.L3
		default:
			continue
		}
		w, known := ways[c.Level]
		if !known {
			w = l.Ways
		}
		fit, note := fitLevel(c.SizeBytes, w, g.LineSize)
		if note == "" && fit.Ways != w {
			note = fmt.Sprintf("%d-way modelled as %d-way (a power-of-two number of sets)", w, fit.Ways)
		}
		*l = fit
		if note != "" {
			notes = append(notes, fmt.Sprintf("L%d %s", c.Level, note))
		}
	}
	s := src + " sizes, associativity from sysfs"
	if len(ways) == 0 {
		s = src + " sizes, assumed associativity"
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, "; ") + ")"
	}
	return g, s
}

// sysfsWays returns cpu0's data and unified caches' associativity by
// level, where sysfs tells.
func sysfsWays() map[int]int {
	out := map[int]int{}
	if runtime.GOOS != "linux" {
		return out
	}
	const dir = "/sys/devices/system/cpu/cpu0/cache"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	read := func(name, file string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name, file))
		return strings.TrimSpace(string(b))
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "index") || read(e.Name(), "type") == "Instruction" {
			continue
		}
		lv, err1 := strconv.Atoi(read(e.Name(), "level"))
		w, err2 := strconv.Atoi(read(e.Name(), "ways_of_associativity"))
		if err1 == nil && err2 == nil && w > 0 && w <= 64 {
			out[lv] = w
		}
	}
	return out
}

// fitLevel returns a level of size bytes with a power-of-two set count,
// preferring ways; the note says what was changed when the size had to be
// rounded down (a different associativity is noted by HostGeometry).
func fitLevel(size int64, ways, line int) (cachesim.Level, string) {
	for _, w := range []int{ways, 16, 12, 8, 20, 24, 10, 11, 15, 4, 2} {
		if size%(int64(w)*int64(line)) == 0 {
			if sets := size / int64(w) / int64(line); sets&(sets-1) == 0 {
				return cachesim.Level{Size: size, Ways: w}, ""
			}
		}
	}
	sets := int64(1) << (bits.Len64(uint64(size/int64(ways)/int64(line))) - 1)
	l := cachesim.Level{Size: sets * int64(ways) * int64(line), Ways: ways}
	return l, fmt.Sprintf("%s modelled as %s", units.FormatBytes(size), units.FormatBytes(l.Size))
}

// cellGeometry returns the geometry and sampling a cell asks for:
// HostGeometry overridden by the geometry attributes, set sampling
// sample=1/N or sample=off (def when absent), and time sampling rows=1/N
// (one window of the access stream in N counted), rows=auto
// (trace.AutoEvery, by the input's size) or rows=off (the default).
func cellGeometry(cell Cell, def float64) (cachesim.Geometry, string, cachesim.Sampling, error) {
	g, src := HostGeometry()
	var spec []string
	for _, k := range geometryKeys {
		if v, ok := cell.Attrs[k]; ok {
			spec = append(spec, k+"="+v)
		}
	}
	// A size given without its ways takes the associativity that gives a
	// power-of-two set count, preferring the default's.
	dg := cachesim.DefaultGeometry()
	for i, k := range []string{"l1", "l2", "l3"} {
		v, ok := cell.Attrs[k]
		if _, w := cell.Attrs[k+"ways"]; !ok || w || v == "none" {
			continue
		}
		n, err := units.ParseBytes(v)
		if err != nil || n <= 0 {
			continue // Parse reports it
		}
		fit, note := fitLevel(n, []int{dg.L1.Ways, dg.L2.Ways, dg.L3.Ways}[i], g.LineSize)
		if note != "" {
			return g, "", cachesim.Sampling{}, fmt.Errorf("%s=%s: no associativity gives a power-of-two number of sets; give %sways=", k, v, k)
		}
		spec = append(spec, fmt.Sprintf("%sways=%d", k, fit.Ways))
	}
	if len(spec) > 0 {
		var err error
		if g, err = cachesim.Parse(g, strings.Join(spec, " ")); err != nil {
			return g, "", cachesim.Sampling{}, err
		}
		src += "; overridden by the cell: " + strings.Join(spec, " ")
	}
	rate := def
	if v, ok := cell.Attrs["sample"]; ok {
		switch {
		case v == "off" || v == "1" || v == "none":
			rate = 1
		case strings.HasPrefix(v, "1/"):
			n, err := strconv.Atoi(v[2:])
			if err != nil || n < 1 || n > 64 || n&(n-1) != 0 {
				return g, "", cachesim.Sampling{}, fmt.Errorf("sample: want off or 1/N with N a power of two up to 64, got %q", v)
			}
			rate = 1 / float64(n)
		default:
			return g, "", cachesim.Sampling{}, fmt.Errorf("sample: want off or 1/N, got %q", v)
		}
	}
	samp := trace.AutoSampling(g, rate)
	if v, ok := cell.Attrs["rows"]; ok {
		switch {
		case v == "off" || v == "1" || v == "none":
		case v == "auto":
			samp.Every = trace.TimeAuto
		case strings.HasPrefix(v, "1/"):
			n, err := strconv.Atoi(v[2:])
			if err != nil || n < 1 || n > 1024 {
				return g, "", cachesim.Sampling{}, fmt.Errorf("rows: want off, auto or 1/N with N up to 1024, got %q", v)
			}
			samp.Every = n
		default:
			return g, "", cachesim.Sampling{}, fmt.Errorf("rows: want off, auto or 1/N, got %q", v)
		}
	}
	return g, src, samp, nil
}

// ModelCounts are modelled totals of one run or phase.
type ModelCounts struct {
	Lines     int64 `json:"lines"`
	L1Misses  int64 `json:"l1_misses"`
	L2Misses  int64 `json:"l2_misses"`
	L3Misses  int64 `json:"l3_misses"`
	DRAMReads int64 `json:"dram_lines_read"`
	// L1LoadMisses and DRAMLoadReads count loads alone, like the
	// counters L1-dcache-load-misses and Intel's loads-l3-miss.
	L1LoadMisses  int64 `json:"l1_load_misses"`
	DRAMLoadReads int64 `json:"dram_lines_read_by_loads"`
	DRAMWrites    int64 `json:"dram_lines_written"`
	Prefetched    int64 `json:"dram_lines_prefetched"`
	DRAMBytesR    int64 `json:"dram_bytes_read"`
	DRAMBytesW    int64 `json:"dram_bytes_written"`
	TLB1Misses    int64 `json:"dtlb_l1_misses"`
	TLBWalks      int64 `json:"dtlb_walks"`
}

func countsOf(s cachesim.Stats) ModelCounts {
	r, w := s.DRAMBytes()
	return ModelCounts{Lines: s.Lines, L1Misses: s.L1.Misses, L2Misses: s.L2.Misses, L3Misses: s.L3.Misses,
		DRAMReads: s.DRAMReads, DRAMWrites: s.DRAMWrites, L1LoadMisses: s.L1LoadMisses, DRAMLoadReads: s.DRAMLoadReads, Prefetched: s.PrefetchReads, DRAMBytesR: r, DRAMBytesW: w,
		TLB1Misses: s.TLB1Misses, TLBWalks: s.TLBWalks}
}

// ModelPhase is one worker's phase of a modelled GROUP BY.
type ModelPhase struct {
	Worker int         `json:"worker"`
	Phase  string      `json:"phase"`
	Counts ModelCounts `json:"counts"`
}

// ModelQuery is the modelled counters of one GROUP BY of a cell.
type ModelQuery struct {
	Modelled bool   `json:"modelled"`
	Why      string `json:"why,omitempty"` // why not, when not modelled
	Strategy string `json:"strategy"`
	Threads  int    `json:"threads"`
	Parts    int    `json:"partitions"`
	Rows     int64  `json:"rows"`
	Groups   int    `json:"groups"`
	// MeasuredNs is the aggregation's measured wall time (first phase
	// start to last phase end) of the real run.
	MeasuredNs int64       `json:"measured_ns"`
	Total      ModelCounts `json:"total"`
	// Op is the aggregate operator's node in its statement's plan
	// (engine.PlanNode.Op).
	Op     uint64       `json:"op,omitempty"`
	Phases []ModelPhase `json:"phases,omitempty"`
	StdErr float64      `json:"std_err"` // relative, largest over the counts
	// Sampling is the sampling this query was modelled with (the time
	// sampling depends on its size).
	Sampling  string        `json:"sampling,omitempty"`
	ModelTime time.Duration `json:"model_ns"`
	// DRAMNs and MLP: with the cell's dram_ns (this machine's DRAM latency
	// from a latency cell), the misses that must have overlapped: DRAM
	// reads × latency / measured time.
	DRAMNs float64 `json:"dram_ns,omitempty"`
	MLP    float64 `json:"mlp,omitempty"`
}

// ModelReport is the modelled-counters panel of a cell.
type ModelReport struct {
	Label          string       `json:"label"`
	Geometry       string       `json:"geometry"`
	GeometrySource string       `json:"geometry_source"`
	Sampling       string       `json:"sampling"`
	Notes          string       `json:"notes"`
	Queries        []ModelQuery `json:"queries"`
	// Plain is the report as text (Text), for clients to show as is.
	Plain string `json:"text"`
}

const modelLabel = "modelled (cachesim), not measured"

// maxModelKeys bounds the keys one cell records for its modelled pass
// (8 bytes each): 1 GiB, so that a 100M-row GROUP BY (ClickBench's hits)
// is modelled; the query's memory limit bounds it further.
const maxModelKeys = 128 << 20

// ModelRecorder records the input of every GROUP BY of a cell through
// engine.Hooks, then replays it through the traced pass (Finish).
type ModelRecorder struct {
	geo       cachesim.Geometry
	geoSource string
	samp      cachesim.Sampling
	dramNs    float64
	mu        sync.Mutex
	runs      []*modelRun
	cur       *modelRun
	recorded  int64
}

type modelRun struct {
	info engine.AggregateInfo
	keys []int64 // the tuned count path's non-NULL keys
	// cols are the key columns of the generic path (agg.TraceAggregate),
	// reused what pre-aggregation counted as kept memory when it started.
	cols       []*vec.Vector
	reused     int64
	why        string
	start, end time.Time
}

// NewModelRecorder returns a recorder for the geometry, sampling and
// dram_ns given as cell attributes (l1=32K, sample=1/16, dram_ns=90, …).
func NewModelRecorder(attrs map[string]string) (*ModelRecorder, error) {
	return newModelRecorderCell(Cell{Attrs: attrs})
}

func newModelRecorderCell(cell Cell) (*ModelRecorder, error) {
	g, src, s, err := cellGeometry(cell, 1.0/16)
	if err != nil {
		return nil, err
	}
	if _, ok := cell.Attrs["rows"]; !ok {
		s.Every = trace.TimeAuto // time sampling for large inputs
	}
	m := &ModelRecorder{geo: g, geoSource: src, samp: s}
	if v, ok := cell.Attrs["dram_ns"]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 1e6 || math.IsNaN(f) {
			return nil, fmt.Errorf("dram_ns: want a latency in ns, got %q", v)
		}
		m.dramNs = f
	}
	return m, nil
}

// Hooks returns h (which may be nil) extended to record each
// aggregation's input and phases.
func (m *ModelRecorder) Hooks(h *engine.Hooks) *engine.Hooks {
	if h == nil {
		h = &engine.Hooks{}
	}
	out := *h
	prevStart, prevEnd, prevAgg := h.PhaseStart, h.PhaseEnd, h.Aggregate
	out.PhaseStart = func(w int, p string) {
		m.mu.Lock()
		if r := m.cur; r != nil && (p == "partition" || p == "aggregate") && r.start.IsZero() {
			r.start = time.Now()
		}
		m.mu.Unlock()
		if prevStart != nil {
			prevStart(w, p)
		}
	}
	out.PhaseEnd = func(w int, p string) {
		if prevEnd != nil {
			prevEnd(w, p)
		}
		m.mu.Lock()
		if r := m.cur; r != nil && (p == "partition" || p == "aggregate") {
			r.end = time.Now()
		}
		m.mu.Unlock()
	}
	out.Aggregate = func(info engine.AggregateInfo, src agg.Source) agg.Source {
		if prevAgg != nil {
			src = prevAgg(info, src)
		}
		if len(info.KeyTypes) == 0 {
			return src // an aggregate without GROUP BY: nothing to model
		}
		r := &modelRun{info: info}
		switch {
		case info.Traceable():
		case info.Observable():
			r.reused = agg.PreAggReused(info.Config)
			for _, t := range info.KeyTypes {
				r.cols = append(r.cols, vec.NewVector(t, 0))
			}
		default:
			r.why = "traced shapes: keys of any type but NULL, with aggregates other than DISTINCT ones over non-string inputs; " +
				"this aggregation is not modelled"
		}
		m.mu.Lock()
		m.runs = append(m.runs, r)
		m.cur = r
		m.mu.Unlock()
		return func(w int) (agg.Input, bool, error) {
			in, ok, err := src(w)
			if !ok || err != nil || r.why != "" {
				return in, ok, err
			}
			k := in.Keys[0]
			m.mu.Lock()
			defer m.mu.Unlock()
			limit := int64(maxModelKeys)
			if b := info.Config.Budget; b != nil && b.Limit > 0 {
				limit = min(limit, b.Limit/8) // recorded keys count against the query's memory limit
			}
			cost := int64(in.N) // 8 bytes a row, in units of 8 bytes
			if r.cols != nil {
				cost = 0
				for _, k := range in.Keys[:len(r.cols)] {
					cost += recordCost(k, in.N)
				}
			}
			if m.recorded+cost > limit {
				r.why = fmt.Sprintf("more than %d input rows (8-byte words) in the cell: too many to record for the modelled pass (within the memory limit)", limit)
				r.keys, r.cols = nil, nil
				return in, ok, err
			}
			m.recorded += cost
			if r.cols != nil {
				for c, col := range r.cols {
					appendRows(col, in.Keys[c], in.N)
				}
				return in, ok, err
			}
			for i, v := range k.I64[:in.N] {
				if k.Valid == nil || k.Valid[i] {
					r.keys = append(r.keys, v)
				}
			}
			return in, ok, err
		}
	}
	return &out
}

// recordCost is what recording n rows of key column k costs, in 8-byte
// words: 8 bytes a fixed-width value, or a string's offset and bytes, and
// the validity.
func recordCost(k *vec.Vector, n int) int64 {
	if k.Type == vec.String {
		return (int64(n)*5 + int64(k.Offsets[n]-k.Offsets[0]) + 7) / 8
	}
	return int64(n) + int64(n+7)/8
}

// appendRows appends rows 0..n-1 of src to dst, of the same type.
func appendRows(dst, src *vec.Vector, n int) {
	if src.Valid != nil || dst.Valid != nil {
		for i := range n {
			dst.AppendFrom(src, i)
		}
		return
	}
	switch {
	case src.Type == vec.String:
		base := uint32(len(dst.Bytes)) - src.Offsets[0]
		dst.Bytes = append(dst.Bytes, src.Bytes[src.Offsets[0]:src.Offsets[n]]...)
		for _, o := range src.Offsets[1 : n+1] {
			dst.Offsets = append(dst.Offsets, o+base)
		}
	case src.Type.IsFloat():
		dst.F64 = append(dst.F64, src.F64[:n]...)
	default:
		dst.I64 = append(dst.I64, src.I64[:n]...)
	}
	dst.Len += n
}

// keysText names the keys of a generic GROUP BY for the report: "" for
// one integer key, else ", string key" or ", 2 keys".
func keysText(types []vec.Type) string {
	switch {
	case len(types) > 1:
		return fmt.Sprintf(", %d keys", len(types))
	case types[0] == vec.String:
		return ", string key"
	}
	return ""
}

// sessionModel returns h extended so that a GROUP BY that runs while the
// session's counters setting is 'model' (SET counters = 'model', in this
// cell or an earlier one) is recorded: the recorder is made, into *rec,
// the first time one does. Off, it costs a settings read per GROUP BY.
func sessionModel(h *engine.Hooks, s *engine.Session, cell Cell, rec **ModelRecorder) *engine.Hooks {
	out := *h
	prev := h.Aggregate
	var wrapped *engine.Hooks
	out.Aggregate = func(info engine.AggregateInfo, src agg.Source) agg.Source {
		if prev != nil {
			src = prev(info, src)
		}
		if s.Settings().Counters != "model" {
			return src
		}
		if *rec == nil {
			m, err := newModelRecorderCell(cell)
			if err != nil {
				return src // the cell's attributes were checked as settings already
			}
			*rec = m
			wrapped = m.Hooks(&engine.Hooks{})
		}
		return wrapped.Aggregate(info, src)
	}
	// Phase times of the recorded runs, once there is a recorder.
	prevStart, prevEnd := h.PhaseStart, h.PhaseEnd
	out.PhaseStart = func(w int, p string) {
		if wrapped != nil {
			wrapped.PhaseStart(w, p)
		}
		if prevStart != nil {
			prevStart(w, p)
		}
	}
	out.PhaseEnd = func(w int, p string) {
		if prevEnd != nil {
			prevEnd(w, p)
		}
		if wrapped != nil {
			wrapped.PhaseEnd(w, p)
		}
	}
	return &out
}

// Finish runs the modelled pass of every aggregation recorded so far and
// returns the report.
func (m *ModelRecorder) Finish(ctx context.Context) *ModelReport {
	rep := &ModelReport{
		Label: modelLabel, Geometry: m.geo.String(), GeometrySource: m.geoSource, Sampling: samplingText(m.samp),
		Notes: "a traced pass over the same tables, hash, slot layout, partitions and write-combining buffers as the real run; " +
			"the Go runtime, stacks and instructions are not modelled; several workers are modelled on separate cores (private L1/L2, " +
			"L3 shared out), without coherence traffic",
	}
	m.mu.Lock()
	runs := m.runs
	m.runs = nil
	m.mu.Unlock()
	for _, r := range runs {
		c := r.info.Config
		q := ModelQuery{Strategy: "naive", Threads: max(c.Threads, 1), Parts: 1 << c.RadixBits, DRAMNs: m.dramNs, Op: r.info.Op}
		if c.Strategy == agg.Radix {
			q.Strategy = "radix"
		} else {
			q.Threads, q.Parts = 1, 1
		}
		if !r.end.IsZero() {
			q.MeasuredNs = int64(r.end.Sub(r.start))
		}
		if r.why != "" {
			q.Why = r.why
			rep.Queries = append(rep.Queries, q)
			continue
		}
		t0 := time.Now()
		o := trace.Options{
			Geometry: m.geo, Sampling: m.samp, Strategy: c.Strategy, Threads: c.Threads, RadixBits: c.RadixBits,
			HugePages: c.HugePages, NoRowsHint: c.RowsHint == 0,
		}
		if c.Budget != nil {
			o.MemoryLimit = c.Budget.Limit
		}
		var res *trace.Result
		var err error
		if r.cols != nil {
			q.Strategy += " (generic" + keysText(r.info.KeyTypes) + ")"
			res, err = trace.Aggregate(ctx, r.cols, r.info.Specs, o,
				trace.AggOptions{PreAggGroups: c.PreAggGroups, GroupsHint: c.GroupsHint, Hasher: c.Hasher, Reused: r.reused})
		} else {
			res, err = trace.Count(ctx, r.keys, o)
		}
		r.keys, r.cols = nil, nil
		if err != nil {
			q.Why = "modelled pass failed: " + err.Error()
			rep.Queries = append(rep.Queries, q)
			continue
		}
		q.Modelled, q.Rows, q.Groups, q.ModelTime = true, res.Rows, res.Groups, time.Since(t0)
		q.Total, q.StdErr, q.Sampling = countsOf(res.Total), res.Total.RelErr.Max(), res.Sampling.String()
		for _, p := range res.Phases {
			q.Phases = append(q.Phases, ModelPhase{Worker: p.Worker, Phase: p.Name, Counts: countsOf(p.Stats)})
		}
		if m.dramNs > 0 && q.MeasuredNs > 0 {
			// Per worker the misses overlap over its own time; with
			// several workers their times overlap too, so divide the
			// total by the wall time times the workers.
			q.MLP = float64(q.Total.DRAMReads) * m.dramNs / (float64(q.MeasuredNs) * float64(q.Threads))
		}
		rep.Queries = append(rep.Queries, q)
	}
	rep.Plain = rep.Text()
	return rep
}

// samplingText describes s, whose time sampling may be chosen per query.
func samplingText(s cachesim.Sampling) string {
	if s.Every != trace.TimeAuto {
		return s.String()
	}
	s.Every = 0
	return s.String() + "; time sampling by input size (rows=auto: none below 4M rows, else 1 window of the access stream in 4 to 64, stated per query)"
}

// Annotate adds each query's modelled figures per row, in total and per
// phase (summed over workers), to its aggregate operator's node in the
// plans of results, so that EXPLAIN ANALYZE prints them in the tree.
func (rep *ModelReport) Annotate(results []*engine.Result) {
	for _, q := range rep.Queries {
		if q.Op == 0 {
			continue
		}
		lines := q.planLines()
		for _, r := range results {
			if r.AnnotatePlan(q.Op, lines) {
				break
			}
		}
	}
}

// planLines renders q for its plan node, every line labelled modelled.
func (q ModelQuery) planLines() []string {
	if !q.Modelled {
		return []string{"modelled: not modelled: " + q.Why}
	}
	n := float64(max(q.Rows, 1))
	per := func(c ModelCounts) string {
		return fmt.Sprintf("L1d %.3f, L2 %.3f, L3 %.3f misses/row; DRAM %.3f lines/row read, %.3f written",
			float64(c.L1Misses)/n, float64(c.L2Misses)/n, float64(c.L3Misses)/n, float64(c.DRAMReads)/n, float64(c.DRAMWrites)/n)
	}
	out := []string{fmt.Sprintf("modelled (cache model, not counters; ±%.1f%%): %s", 100*q.StdErr, per(q.Total))}
	var names []string
	sums := map[string]ModelCounts{}
	for _, p := range q.Phases {
		s, ok := sums[p.Phase]
		if !ok {
			names = append(names, p.Phase)
		}
		c := p.Counts
		s.L1Misses += c.L1Misses
		s.L1LoadMisses += c.L1LoadMisses
		s.DRAMLoadReads += c.DRAMLoadReads
		s.L2Misses += c.L2Misses
		s.L3Misses += c.L3Misses
		s.DRAMReads += c.DRAMReads
		s.DRAMWrites += c.DRAMWrites
		sums[p.Phase] = s
	}
	if len(names) > 1 {
		for _, name := range names {
			out = append(out, fmt.Sprintf("modelled phase %s: %s", name, per(sums[name])))
		}
	}
	return out
}

// Text renders the report, every line of it labelled as modelled.
func (rep *ModelReport) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n  geometry: %s\n  from: %s\n  sampling: %s\n", rep.Label, rep.Geometry, rep.GeometrySource, rep.Sampling)
	if len(rep.Queries) == 0 {
		b.WriteString("  no GROUP BY ran: nothing modelled\n")
	}
	for i, q := range rep.Queries {
		fmt.Fprintf(&b, "GROUP BY %d: %s", i+1, q.Strategy)
		if strings.HasPrefix(q.Strategy, "radix") {
			fmt.Fprintf(&b, ", %d partitions, %d threads", q.Parts, q.Threads)
		}
		b.WriteString("\n")
		if !q.Modelled {
			fmt.Fprintf(&b, "  not modelled: %s\n", q.Why)
			continue
		}
		n := float64(max(q.Rows, 1))
		fmt.Fprintf(&b, "  %d rows, %d groups; modelled in %v; sampling error ±%.1f%%\n", q.Rows, q.Groups, q.ModelTime.Round(time.Millisecond), 100*q.StdErr)
		if q.Sampling != "" && q.Sampling != rep.Sampling {
			fmt.Fprintf(&b, "  sampling: %s\n", q.Sampling)
		}
		row := func(name string, v int64) {
			fmt.Fprintf(&b, "  %-30s %14d  %8.3f/row\n", "modelled "+name, v, float64(v)/n)
		}
		t := q.Total
		row("L1d misses", t.L1Misses)
		row("L2 misses", t.L2Misses)
		row("L3 misses", t.L3Misses)
		row("DRAM lines read (demand)", t.DRAMReads)
		row("DRAM lines written", t.DRAMWrites)
		if t.Prefetched > 0 {
			row("DRAM lines prefetched", t.Prefetched)
		}
		row("dTLB walks", t.TLBWalks)
		fmt.Fprintf(&b, "  %-30s %14s\n", "modelled DRAM bytes r/w", units.HumanBytes(t.DRAMBytesR)+" / "+units.HumanBytes(t.DRAMBytesW))
		if q.MeasuredNs > 0 {
			fmt.Fprintf(&b, "  measured %.2f ns/row (aggregation phases, scan included) beside modelled %.3f DRAM misses/row", float64(q.MeasuredNs)/n, float64(t.DRAMReads)/n)
			if q.MLP > 0 {
				fmt.Fprintf(&b, "; at %.0f ns per DRAM access about %.1f misses overlapped (implied memory-level parallelism)", q.DRAMNs, q.MLP)
			} else {
				b.WriteString("; give dram_ns= (from a latency cell) for the implied memory-level parallelism")
			}
			b.WriteString("\n")
		}
		phases := append([]ModelPhase(nil), q.Phases...)
		sort.SliceStable(phases, func(i, j int) bool { return phases[i].Worker < phases[j].Worker })
		for _, p := range phases {
			fmt.Fprintf(&b, "  worker %d %-10s modelled L1d %d, L2 %d, DRAM read %d, written %d lines\n", p.Worker, p.Phase, p.Counts.L1Misses, p.Counts.L2Misses, p.Counts.DRAMReads, p.Counts.DRAMWrites)
		}
	}
	return b.String()
}
