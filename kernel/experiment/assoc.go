package experiment

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"cachebook/engine/units"
)

// AssocData is the typed result of the associativity experiment.
type AssocData struct {
	Strides   []int64     `json:"strides"` // bytes between the chased lines, one column each
	Counts    []int       `json:"counts"`  // lines chased, one row each
	HugePages bool        `json:"huge_pages"`
	Reps      int         `json:"reps"`
	NS        [][]float64 `json:"ns"` // NS[i][j]: ns per load for Counts[i] lines at Strides[j]
}

func assocSpec() Spec {
	s := Spec{
		Name: "associativity",
		Summary: "a few lines spaced a power of two apart all fall into the same cache set: once there are more of " +
			"them than the cache has ways, a working set of a few KiB misses like one of megabytes",
		Params: []Param{
			{"strides", "4096,4160,131072,131136", "bytes between consecutive lines (multiples of 64, up to 1MiB); a power of two and the same plus 64 make a pair"},
			{"counts", "4,8,12,16,24,32", "numbers of lines to chase (each 2..256); the largest count x the largest stride must stay within 64MiB"},
			{"sample", "10ms", "target length of one timed sample (1ms..2s)"},
			{"reps", "3", "timed samples per point (1..20); the median is reported"},
			{"huge", "true", "ask for 2 MiB pages (Linux), so that physical addresses keep the power-of-two spacing the L2 and L3 index by"},
			{"seed", "1", "seed of the random chase order"},
		},
	}
	s.Run = func(ctx context.Context, raw map[string]string, hooks *Hooks) (*Result, error) {
		return run(ctx, s, raw, func(ctx context.Context, p *params, r *Result) error {
			return assoc(ctx, p, r, hooks)
		})
	}
	s.Memory = assocMemory
	return s
}

func assoc(ctx context.Context, p *params, r *Result, hooks *Hooks) error {
	sample := p.Duration("sample", time.Millisecond, 2*time.Second)
	reps := p.Int("reps", 1, 20)
	huge := boolParam(p, "huge")
	seed := p.Int("seed", 0, 1<<62)
	var strides []int64
	for f := range splitList(p.String("strides")) {
		n, err := units.ParseBytes(f)
		if err != nil || n < 64 || n%64 != 0 || n > 1<<20 {
			p.fail(fmt.Errorf("strides must list multiples of 64 bytes up to 1MiB, got %q", f))
			break
		}
		strides = append(strides, n)
	}
	var counts []int
	for f := range splitList(p.String("counts")) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 2 || n > 256 {
			p.fail(fmt.Errorf("counts must list numbers between 2 and 256, got %q", f))
			break
		}
		counts = append(counts, n)
	}
	if len(strides) == 0 || len(counts) == 0 {
		p.fail(fmt.Errorf("strides and counts must each list at least one value"))
	}
	if err := p.err(); err != nil {
		return err
	}
	span := int64(slices.Max(counts)) * slices.Max(strides)
	if span > 64<<20 {
		return fmt.Errorf("the largest count times the largest stride is %s; the limit is 64MiB", units.FormatBytes(span))
	}
	raw, advised, release, err := pageBuffer(int(span), huge)
	if err != nil {
		return err
	}
	defer release()
	words := viewWords(raw)
	data := &AssocData{Strides: strides, Counts: counts, HugePages: advised, Reps: reps}
	rng := splitmix64(uint64(seed))
	var sink uint32
	for _, k := range counts {
		var line []float64
		for _, st := range strides {
			// Link the k lines, st bytes apart, into one random cycle.
			order := make([]uint32, k)
			for i := range order {
				order[i] = uint32(int64(i) * st / 4)
			}
			for i := k - 1; i > 0; i-- {
				j := int(rng.next() % uint64(i+1))
				order[i], order[j] = order[j], order[i]
			}
			for i, w := range order {
				words[w] = order[(i+1)%k]
			}
			label := fmt.Sprintf("%d lines, stride %d", k, st)
			measure := func(steps int) (time.Duration, error) {
				s, err := runWorkers(ctx, hooks, label, 1, func(int) error {
					sink ^= chaseOne(words, order[0], steps)
					return nil
				})
				return s.cost(), err
			}
			steps, err := calibrate(ctx, sample, 1024, measure)
			if err != nil {
				return err
			}
			var samples []float64
			for range reps {
				d, err := measure(steps)
				if err != nil {
					return err
				}
				samples = append(samples, float64(d)/float64(steps))
			}
			slices.SortFunc(samples, cmp.Compare)
			line = append(line, samples[len(samples)/2])
		}
		data.NS = append(data.NS, line)
	}
	_ = sink
	r.Data = data
	pages := "4 KiB pages"
	if advised {
		pages = "2 MiB pages requested"
	}
	t := Table{
		Title:   fmt.Sprintf("ns per load: N lines spaced stride bytes apart, chased in a random cycle (%s, median of %d)", pages, reps),
		Columns: []string{"lines"},
	}
	for _, st := range strides {
		t.Columns = append(t.Columns, "stride "+strconv.FormatInt(st, 10))
	}
	for i, k := range counts {
		row := []string{strconv.Itoa(k)}
		for j := range strides {
			row = append(row, fmt.Sprintf("%.2f", data.NS[i][j]))
		}
		t.Rows = append(t.Rows, row)
	}
	c := &Chart{Title: "Chasing N lines spaced a stride apart", XTitle: "lines", YTitle: "ns per load"}
	for j, st := range strides {
		s := ChartSeries{Name: "stride " + strconv.FormatInt(st, 10)}
		for i, k := range counts {
			s.Points = append(s.Points, ChartPoint{X: float64(k), Y: data.NS[i][j]})
		}
		c.Series = append(c.Series, s)
	}
	r.Chart = c
	r.Tables = append(r.Tables, t)
	r.Notes = append(r.Notes,
		"a cache is split into sets by some address bits just above the 64-byte line offset; a line can only live in its own set, which holds as many lines as the cache has ways (8 to 16 in current L1 and L2 caches)",
		"lines a power of two apart share those index bits, so they all compete for one set: with more lines than ways they evict each other although together they are only a few KiB",
		"a stride of 4096 bytes puts every line in the same L1 set on current x86 L1 caches (32 KiB 8-way, 48 KiB 12-way: 4 KiB per way); 131072 bytes (128 KiB) does the same for the L1 and for L2 caches of 1-2 MiB with 8 or 16 ways",
		"adding 64 bytes to the stride moves each line to the next set: the same number of lines then fits easily, which is why the +64 columns stay flat",
		"the L2 and L3 are indexed by physical address: with 4 KiB pages the physical spacing is random above 4 KiB, so the large-stride columns are only reliable with huge pages",
	)
	return nil
}
