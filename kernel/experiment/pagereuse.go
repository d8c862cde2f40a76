package experiment

import (
	"context"
	"fmt"
	"strconv"

	"cachebook/engine/units"
)

// PageReuseData is the typed result of the page-reuse experiment.
type PageReuseData struct {
	Bytes   int64          `json:"bytes"`  // buffer size
	Rounds  int            `json:"rounds"` // reuses of the buffer per variant
	Rows    []PageReuseRow `json:"rows"`
	Skipped []string       `json:"skipped,omitempty"` // variants not run here, with the reason
}

// PageReuseRow is one way of handing a buffer back between two uses.
type PageReuseRow struct {
	Variant string `json:"variant"` // keep, free, dontneed, remap
	// CPUNSPerRound is the thread CPU time of one release and reuse (wall
	// time where the OS has no thread CPU clock).
	CPUNSPerRound float64 `json:"cpu_ns_per_round"`
	// FaultsPerRound is the page faults one reuse took.
	FaultsPerRound float64 `json:"faults_per_round"`
	// NSPerFault is the cost over the keep variant divided by the faults:
	// what one fault, with the kernel's zeroing of the page, costs here.
	NSPerFault float64 `json:"ns_per_fault,omitempty"`
	// VsKeep is CPUNSPerRound over the keep variant's.
	VsKeep float64 `json:"vs_keep"`
}

var pageReuseVariants = []string{"keep", "free", "dontneed", "remap"}

func pageReuseSpec() Spec {
	s := Spec{
		Name: "page-reuse",
		Summary: "a large buffer used again and again, its pages kept, released lazily (MADV_FREE), released " +
			"at once (MADV_DONTNEED, what Go's scavenger does) or unmapped and mapped afresh: page faults per reuse " +
			"(ClickHouse's jemalloc page reuse, and our own GODEBUG=madvdontneed=0)",
		Params: []Param{
			{"size", "64MiB", "buffer size (1MiB..1GiB), on 4 KiB pages"},
			{"rounds", "8", "reuses of the buffer per variant (1..1000)"},
			{"variants", "keep,free,dontneed,remap", "what happens to the pages between two uses"},
		},
	}
	s.Run = func(ctx context.Context, raw map[string]string, hooks *Hooks) (*Result, error) {
		return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
			return pageReuse(ctx, p, r, hooks)
		})
	}
	s.Memory = pageReuseMemory
	return s
}

func pageReuseMemory(p *params) int64 { return p.Bytes("size", 1<<20, 1<<30) + 4<<20 }

func pageReuse(ctx context.Context, p *params, r *Result, hooks *Hooks) error {
	size := p.Bytes("size", 1<<20, 1<<30)
	rounds := p.Int("rounds", 1, 1000)
	var variants []string
	for v := range splitList(p.String("variants")) {
		known := false
		for _, k := range pageReuseVariants {
			known = known || v == k
		}
		if !known {
			p.fail(fmt.Errorf("variants must be among keep, free, dontneed, remap, got %q", v))
			break
		}
		variants = append(variants, v)
	}
	if len(variants) == 0 {
		p.fail(fmt.Errorf("variants must list at least one of keep, free, dontneed, remap"))
	}
	if err := p.err(); err != nil {
		return err
	}
	data := &PageReuseData{Bytes: size, Rounds: rounds}
	if ok, why := releaseSupported(); !ok {
		data.Skipped = append(data.Skipped, why)
		variants = []string{"keep"}
	}
	const page = 4096
	for _, v := range variants {
		buf, err := newReusable(int(size))
		if err != nil {
			return err
		}
		touchPages(buf.bytes(), page) // the first use, untimed
		st, err := runWorkers(ctx, hooks, v, 1, func(int) error {
			for range rounds {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := buf.release(v); err != nil {
					return err
				}
				touchPages(buf.bytes(), page)
			}
			return nil
		})
		if cerr := buf.close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", v, err)
		}
		data.Rows = append(data.Rows, PageReuseRow{Variant: v,
			CPUNSPerRound:  float64(st.cost().Nanoseconds()) / float64(rounds),
			FaultsPerRound: float64(st.FaultsTotal()) / float64(rounds)})
	}
	var keep *PageReuseRow
	for i := range data.Rows {
		if data.Rows[i].Variant == "keep" {
			keep = &data.Rows[i]
		}
	}
	for i := range data.Rows {
		row := &data.Rows[i]
		if keep == nil {
			continue
		}
		row.VsKeep = row.CPUNSPerRound / keep.CPUNSPerRound
		if extra := row.FaultsPerRound - keep.FaultsPerRound; extra >= 1 && row.CPUNSPerRound > keep.CPUNSPerRound {
			row.NSPerFault = (row.CPUNSPerRound - keep.CPUNSPerRound) / extra
		}
	}
	r.Data = data
	t := Table{
		Title: fmt.Sprintf("a %s buffer (%d pages of 4 KiB) written again %d times; one write per page",
			units.FormatBytes(size), size/page, rounds),
		Columns: []string{"variant", "CPU ms/round", "faults/round", "µs/fault", "vs keep"},
	}
	for _, row := range data.Rows {
		perFault := "-"
		if row.NSPerFault > 0 {
			perFault = fmt.Sprintf("%.2f", row.NSPerFault/1e3)
		}
		t.Rows = append(t.Rows, []string{row.Variant, fmt.Sprintf("%.2f", row.CPUNSPerRound/1e6),
			strconv.FormatFloat(row.FaultsPerRound, 'f', 0, 64), perFault, fmtRatio(row.VsKeep)})
	}
	c := &Chart{Title: "Reusing a buffer: CPU time per round", XTitle: "what happens to the pages between uses", YTitle: "CPU ms per round", Bars: true,
		Series: []ChartSeries{{Name: units.FormatBytes(size) + " buffer"}}}
	for _, row := range data.Rows {
		c.Series[0].Points = append(c.Series[0].Points, ChartPoint{Label: row.Variant, Y: row.CPUNSPerRound / 1e6})
	}
	r.Chart = c
	r.Tables = append(r.Tables, t)
	r.Notes = append(r.Notes,
		"keep: the pages stay mapped between uses, as in a pool (our engine's arena pool, jemalloc when it can reuse a freed extent)",
		"free: madvise(MADV_FREE) lets the kernel take the pages only if it needs memory; writing a page again cancels that, so without memory pressure there is no fault (Go with GODEBUG=madvdontneed=0); what it costs is the call itself, which walks the page tables and flushes the TLB",
		"dontneed: madvise(MADV_DONTNEED) drops the pages at once; the next write faults and the kernel hands over a zeroed page (Go's default when it returns freed heap to the OS)",
		"remap: munmap and a fresh mmap each time: a fault and a zeroed page per 4 KiB, plus the system calls",
		"µs/fault is the extra CPU time over keep divided by the extra faults: one fault with the kernel's zeroing of its page. Faults are counted by the operating system, so this runs without hardware counters",
		"ClickHouse (the Intel authors' post on the ClickHouse blog): letting jemalloc reuse freed extents cut page faults by 71% and made Q35 96.1% faster",
	)
	for _, s := range data.Skipped {
		r.Notes = append(r.Notes, "only keep ran: "+s)
	}
	return nil
}

// touchPages writes one byte in every page of b, without reading it first:
// a read of an unmapped page would map the shared zero page and the write
// would then fault a second time.
func touchPages(b []byte, page int) {
	for i := 0; i < len(b); i += page {
		b[i] = byte(i>>12) | 1
	}
}
