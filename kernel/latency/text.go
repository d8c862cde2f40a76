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
		if l.Name == "disk" {
			fmt.Fprintf(tw, "  %s\t%s\tfile %s\t\n", l.Name, FormatNs(l.Ns), FormatSize(l.FromBytes))
			continue
		}
		size := "-"
		switch {
		case l.SizeBytes > 0:
			size = "≈ " + FormatSize(l.SizeBytes)
		case i == len(res.Levels)-1 && l.Name != "memory", i == len(res.Levels)-2 && res.Storage != nil && l.Name != "memory":
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
	if st := res.Storage; st != nil {
		fmt.Fprintf(w, "disk: random 4 KiB read %s (min %s, max %s, %d reads of a %s file in %s), sequential read %.2f GB/s\n",
			FormatNs(st.ReadNs), FormatNs(st.MinNs), FormatNs(st.MaxNs), st.Reads, FormatSize(st.FileBytes), st.Dir, st.SeqGBps)
		if mem := memoryNs(res.Levels); mem > 0 {
			fmt.Fprintf(w, "  a disk read costs about %.0f× a DRAM access\n", st.ReadNs/mem)
		}
		fmt.Fprintf(w, "  method: %s; wall clock (the thread waits, it does not compute)\n", st.Method)
	}
	if res.StorageNote != "" {
		fmt.Fprintln(w, res.StorageNote)
	}
}

// memoryNs is the latency of the "memory" level, 0 when none was found.
func memoryNs(levels []Level) float64 {
	for _, l := range levels {
		if l.Name == "memory" {
			return l.Ns
		}
	}
	return 0
}

// FormatNs prints a duration in ns, µs or ms, as a latency curve's reader
// compares them.
func FormatNs(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.1f ns", ns)
}
