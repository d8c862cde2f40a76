package latency

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteSummary writes the detected levels, the OS cache sizes, the clock
// and the page size used, as `cachebook latency` and the kernel's text
// output show them.
func (res *Result) WriteSummary(w io.Writer) {
	fmt.Fprintln(w, "\ndetected levels:")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for i, l := range res.Levels {
		size := "-"
		switch {
		case l.SizeBytes > 0:
			size = "≈ " + FormatSize(l.SizeBytes)
		case i == len(res.Levels)-1 && l.Name != "memory":
			size = "≥ " + FormatSize(l.ToBytes)
		}
		fmt.Fprintf(tw, "  %s\t%.1f ns\tsize %s\tplateau %s..%s\n", l.Name, l.Ns, size,
			FormatSize(l.FromBytes), FormatSize(l.ToBytes))
	}
	tw.Flush()
	if len(res.Caches) == 0 {
		fmt.Fprintf(w, "\nOS cache sizes: none reported (%s)\n", res.CacheSource)
	} else {
		var parts []string
		var notes []string
		for _, c := range res.Caches {
			name := fmt.Sprintf("L%d", c.Level)
			switch c.Type {
			case "Data":
				name += "d"
			case "Instruction":
				name += "i"
			}
			parts = append(parts, name+" "+FormatSize(c.SizeBytes))
			if c.Note != "" {
				notes = append(notes, name+": "+c.Note)
			}
		}
		fmt.Fprintf(w, "\nOS cache sizes (%s): %s\n", res.CacheSource, strings.Join(parts, ", "))
		for _, n := range notes {
			fmt.Fprintf(w, "  note %s\n", n)
		}
	}
	clock := "thread CPU time (time descheduled is not counted)"
	if res.Clock == "wall" {
		clock = "wall clock"
	}
	fmt.Fprintf(w, "clock: %s\n", clock)
	p := res.Pages
	fmt.Fprintf(w, "pages: requested %s, used %s", p.Requested, p.Used)
	if p.Detail != "" {
		fmt.Fprintf(w, " (%s)", p.Detail)
	}
	fmt.Fprintln(w)
	if res.CyclesNote != "" {
		fmt.Fprintln(w, res.CyclesNote)
	}
}
