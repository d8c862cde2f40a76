package experiment

import (
	"cmp"
	"context"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"cachebook/engine/cachesim"
	"cachebook/engine/units"
)

// StrideData is the typed result of the stride experiment.
type StrideData struct {
	Bytes     int64       `json:"bytes"` // buffer size (a power of two)
	HugePages bool        `json:"huge_pages"`
	Reps      int         `json:"reps"`
	Rows      []StrideRow `json:"rows"`
	// Verdict compares random with sequential reads (or stride-64) per
	// line, round by round.
	Verdict
	// Modelled is the cache model's count per line for each pattern
	// (prefetcher on), at most 64 MiB of the buffer.
	Modelled []Modelled `json:"modelled,omitempty"`
}

// StrideRow is one access pattern.
type StrideRow struct {
	// Pattern is "sequential", "random" or "stride-N" (N bytes).
	Pattern string `json:"pattern"`
	Stride  int64  `json:"stride"` // bytes between consecutive accesses; 0 for random
	// Accesses per pass: every 8-byte word for sequential, every line
	// once otherwise.
	Accesses int64 `json:"accesses"`
	// NSPerLine is the median time of one pass over the buffer divided by
	// its lines: every pattern reads every line exactly once per pass.
	NSPerLine float64 `json:"ns_per_line"`
	// NSPerAccess is the same divided by the accesses.
	NSPerAccess float64 `json:"ns_per_access"`
	// GBps is lines fetched per second, in 10^9 bytes.
	GBps float64 `json:"gbps"`
	// VsSequential is NSPerLine over the sequential pattern's.
	VsSequential float64 `json:"vs_sequential,omitempty"`
}

func strideSpec() Spec {
	s := Spec{
		Name: "stride",
		Summary: "sequential, strided and random reads of every cache line of a buffer larger than the caches: " +
			"what the prefetcher and the TLB do for each",
		Params: []Param{
			{"size", "64MiB", "buffer size (1MiB..1GiB, rounded down to a power of two); several times the L3 measures DRAM"},
			{"patterns", "sequential,64,4096,random", "access patterns: sequential (every 8-byte word), a stride in bytes (a multiple of 64: every line once, stride apart, wrapping round), random (every line once, scrambled)"},
			{"sample", "50ms", "target length of one timed sample (1ms..2s)"},
			{"reps", "3", "rounds (1..20); each times every pattern once, in alternating order; the median is reported"},
			{"huge", "false", "ask for 2 MiB pages (Linux); with 4 KiB pages a 4096-byte stride touches a new page on every access"},
		},
	}
	s.Run = func(ctx context.Context, raw map[string]string, hooks *Hooks) (*Result, error) {
		return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
			return stride(ctx, p, r, hooks)
		})
	}
	s.Memory = strideMemory
	return s
}

func stride(ctx context.Context, p *params, r *Result, hooks *Hooks) error {
	size := p.Bytes("size", 1<<20, 1<<30)
	sample := p.Duration("sample", time.Millisecond, 2*time.Second)
	reps := p.Int("reps", 1, 20)
	huge := boolParam(p, "huge")
	if err := p.err(); err != nil {
		return err
	}
	size = 1 << (63 - bits.LeadingZeros64(uint64(size)))
	var rows []StrideRow
	for f := range splitList(p.String("patterns")) {
		switch f {
		case "sequential", "seq":
			rows = append(rows, StrideRow{Pattern: "sequential", Stride: 8, Accesses: size / 8})
		case "random":
			rows = append(rows, StrideRow{Pattern: "random", Accesses: size / 64})
		default:
			n, err := units.ParseBytes(f)
			if err != nil || n < 64 || n%64 != 0 || n > size {
				return fmt.Errorf("patterns: %q is not sequential, random or a stride in bytes (a multiple of 64 up to the size)", f)
			}
			rows = append(rows, StrideRow{Pattern: "stride-" + strconv.FormatInt(n, 10), Stride: n, Accesses: size / 64})
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("patterns must list at least one of sequential, random or a stride")
	}
	raw, advised, release, err := pageBuffer(int(size), huge)
	if err != nil {
		return err
	}
	defer release()
	words := viewWords(raw)
	for i := range words {
		if i&(1<<20-1) == 0 && ctx.Err() != nil { // every 4 MiB, faults included
			return ctx.Err()
		}
		words[i] = uint32(i)
	}
	var sink uint32
	// Each pattern is calibrated first (which also warms its path), then
	// the patterns take turns, round after round (forwards, then
	// backwards), so that a busy stretch falls on all of them.
	measures := make([]func(n int) (time.Duration, error), len(rows))
	passes := make([]int, len(rows))
	for i := range rows {
		row := &rows[i]
		pass := func() uint32 {
			switch {
			case row.Pattern == "sequential":
				return readSequential(words)
			case row.Pattern == "random":
				return readRandom(words)
			}
			return readStrided(words, int(row.Stride/4))
		}
		label := row.Pattern
		measures[i] = func(n int) (time.Duration, error) {
			st, err := runWorkers(ctx, hooks, label, 1, func(int) error {
				for range n {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					sink ^= pass()
				}
				return nil
			})
			return st.cost(), err
		}
		if passes[i], err = calibrate(ctx, sample, 1, measures[i]); err != nil {
			return err
		}
	}
	samples := make([][]float64, len(rows)) // ns per line, by round
	for rep := range reps {
		for _, i := range alternate(len(rows), rep) {
			d, err := measures[i](passes[i])
			if err != nil {
				return err
			}
			samples[i] = append(samples[i], float64(d)/float64(passes[i])/float64(size/64))
		}
	}
	for i := range rows {
		row := &rows[i]
		perLine := slices.Clone(samples[i])
		slices.SortFunc(perLine, cmp.Compare)
		row.NSPerLine = perLine[len(perLine)/2]
		perPass := row.NSPerLine * float64(size/64)
		row.NSPerAccess = perPass / float64(row.Accesses)
		if perPass > 0 { // a coarse clock can measure no time at all
			row.GBps = float64(size) / perPass
		}
	}
	_ = sink
	for i := range rows {
		for _, base := range rows {
			if base.Pattern == "sequential" && base.NSPerLine > 0 {
				rows[i].VsSequential = rows[i].NSPerLine / base.NSPerLine
			}
		}
	}
	data := &StrideData{Bytes: size, HugePages: advised, Reps: reps, Rows: rows}
	data.Verdict = strideVerdict(rows, samples)
	r.Data = data
	pages := "4 KiB pages"
	if advised {
		pages = "2 MiB pages requested"
	}
	t := Table{
		Title:   fmt.Sprintf("%s buffer, %s, every line read once per pass, median of %d samples of %s", units.FormatBytes(size), pages, reps, sample),
		Columns: []string{"pattern", "accesses/pass", "ns/access", "ns/line", "GB/s", "vs sequential"},
	}
	for _, row := range rows {
		t.Rows = append(t.Rows, []string{row.Pattern, strconv.FormatInt(row.Accesses, 10), fmt.Sprintf("%.2f", row.NSPerAccess),
			fmt.Sprintf("%.2f", row.NSPerLine), fmt.Sprintf("%.2f", row.GBps), fmtRatio(row.VsSequential)})
	}
	c := &Chart{Title: "Time per cache line by access order", XTitle: "pattern", YTitle: "ns per line", Bars: true,
		Series: []ChartSeries{{Name: pages}}}
	for _, row := range rows {
		c.Series[0].Points = append(c.Series[0].Points, ChartPoint{Label: row.Pattern, Y: row.NSPerLine})
	}
	r.Chart = c
	r.Tables = append(r.Tables, t)
	r.Notes = append(r.Notes,
		"every pattern reads each 64-byte line exactly once per pass, so ns/line compares the same amount of data fetched in different orders; the loads are independent (no pointer chase), so the core overlaps them",
		"sequential reads every 8-byte word; stride-64 reads one word per line in address order: both are streams the hardware prefetchers recognise",
		"stride-4096 reads one line per 4 KiB page, page after page: prefetchers that stay inside a page cannot help, and with 4 KiB pages every access needs a different TLB entry",
		"random reads every line once in a scrambled order: only the core's memory-level parallelism (the mlp experiment) overlaps the misses",
	)
	var names []string
	for _, row := range rows {
		names = append(names, fmt.Sprintf("%s %.2f ns/line", row.Pattern, row.NSPerLine))
	}
	r.Notes = append(r.Notes, "here: "+strings.Join(names, ", "))
	if err := modelStride(ctx, data, r); err != nil {
		return err
	}
	if data.Verdict.Text != "" {
		r.Notes = append(r.Notes, "verdict (CPU time per line): "+data.Verdict.Text)
	}
	return nil
}

// strideVerdict compares random with sequential reads (or stride-64 where
// sequential was not run) round by round; samples[i] are rows[i]'s rounds.
func strideVerdict(rows []StrideRow, samples [][]float64) Verdict {
	rnd, seq := -1, -1
	for i, r := range rows {
		switch {
		case r.Pattern == "random":
			rnd = i
		case r.Pattern == "sequential", r.Pattern == "stride-64" && (seq < 0 || rows[seq].Pattern != "sequential"):
			seq = i
		}
	}
	if rnd < 0 || seq < 0 {
		return Verdict{}
	}
	n := min(len(samples[rnd]), len(samples[seq]))
	ratios := make([]float64, n)
	for i := range n {
		ratios[i] = samples[rnd][i] / samples[seq][i]
	}
	return judge(comparison{A: "random", B: rows[seq].Pattern,
		Model: "random lines cost several times more than a stream the prefetchers follow, once the buffer is beyond the caches"}, ratios, "")
}

// readSequential reads every 8-byte word of w in order, a line per loop.
//
//go:noinline
func readSequential(w []uint32) uint32 {
	q := unsafe.Slice((*uint64)(unsafe.Pointer(&w[0])), len(w)/2)
	var a, b uint64
	for len(q) >= 8 {
		a += q[0] + q[2] + q[4] + q[6]
		b += q[1] + q[3] + q[5] + q[7]
		q = q[8:]
	}
	return uint32(a ^ b)
}

// readStrided reads word 0 of every line of w once: stride words apart,
// wrapping round with a one-line offset, until every line was read.
//
//go:noinline
func readStrided(w []uint32, stride int) uint32 {
	var x uint32
	for off := 0; off < stride; off += 16 {
		for i := off; i < len(w); i += stride {
			x += w[i]
		}
	}
	return x
}

// readRandom reads word 0 of every line of w once, in a scrambled order: a
// bijection of the line numbers (len(w)/16 must be a power of two) made of
// odd multiplications and xor-shifts, computed in registers so that the
// loads do not wait for one another.
//
//go:noinline
func readRandom(w []uint32) uint32 {
	lines := uint64(len(w) / 16)
	mask := lines - 1
	shift := uint(bits.Len64(mask)/2 + 1)
	var x uint32
	for i := range lines {
		l := (i * 0x9e3779b97f4a7c15) & mask
		l ^= l >> shift
		l = (l * 0xbf58476d1ce4e5b9) & mask
		l ^= l >> shift
		x += w[l*16]
	}
	return x
}

// modelStride replays each pattern's loads over (at most 64 MiB of) the
// buffer through the cache model, prefetcher on, and adds the counts per
// line to d and a table to r: every pattern fetches every line once, so
// what differs is how many of them the prefetcher brings ahead of demand.
func modelStride(ctx context.Context, d *StrideData, r *Result) error {
	size := min(d.Bytes, 64<<20)
	lines := size / 64
	const base = 1 << 32
	for _, row := range d.Rows {
		pass := func(s *cachesim.Sim) error {
			switch {
			case row.Pattern == "sequential":
				for off := int64(0); off < size; off += 8 {
					if off%(modelEvery*8) == 0 && ctx.Err() != nil {
						return ctx.Err()
					}
					s.Load(uint64(base+off), 8)
				}
			case row.Pattern == "random":
				mask := uint64(lines - 1)
				shift := uint(bits.Len64(mask)/2 + 1)
				for i := range uint64(lines) {
					if i%modelEvery == 0 && ctx.Err() != nil {
						return ctx.Err()
					}
					l := (i * 0x9e3779b97f4a7c15) & mask
					l ^= l >> shift
					l = (l * 0xbf58476d1ce4e5b9) & mask
					l ^= l >> shift
					s.Load(uint64(base)+l*64, 4)
				}
			default:
				n := 0
				for off := int64(0); off < row.Stride; off += 64 {
					for i := off; i < size; i += row.Stride {
						if n++; n%modelEvery == 0 && ctx.Err() != nil {
							return ctx.Err()
						}
						s.Load(uint64(base+i), 4)
					}
				}
			}
			return nil
		}
		m, err := modelSide(ctx, row.Pattern, lines, nil, pass)
		if err != nil {
			return err
		}
		d.Modelled = append(d.Modelled, m)
	}
	r.Tables = append(r.Tables, modelTable(fmt.Sprintf("%s of the buffer, each pattern once", units.FormatBytes(size)), "line", d.Modelled))
	r.Notes = append(r.Notes, "modelled: every pattern fetches each line from DRAM once; the model's prefetcher brings a stream's lines ahead of the loads (prefetched, not demand), while random lines are all demand misses, paid at full latency unless the core overlaps them — which a cache model without time does not show")
	return nil
}
