package notebook

import (
	"maps"
	"strings"
	"testing"
	"unicode"
)

func TestParseMagic(t *testing.T) {
	tests := []struct {
		src   string
		ok    bool
		kind  CellKind
		name  string
		attrs map[string]string
		body  string
	}{
		{"SELECT 1", false, "", "", nil, "SELECT 1"},
		{"", false, "", "", nil, ""},
		{"%%latency max=256M", true, KindLatency, "", map[string]string{"max": "256M"}, ""},
		{"%%latency {max=256M}\n", true, KindLatency, "", map[string]string{"max": "256M"}, ""},
		{"\n  %%sweep rows=1e6 groups=\"1e3,1e4\"\nreps=1", true, KindSweep, "", map[string]string{"rows": "1e6", "groups": "1e3,1e4"}, "reps=1"},
		{"%%experiment false-sharing threads=2", true, KindExperiment, "false-sharing", map[string]string{"threads": "2"}, ""},
		{"%%experiment threads=2", true, KindExperiment, "", map[string]string{"threads": "2"}, ""},
		{"%%sql counters\nSELECT 1\nFROM t", true, KindSQL, "", map[string]string{"counters": "true"}, "SELECT 1\nFROM t"},
		{"%%time\nx", true, "time", "", nil, "x"},
		{"%%bandwidth threads=1,2 ops=read,copy", true, KindBandwidth, "", map[string]string{"threads": "1,2", "ops": "read,copy"}, ""},
		{"%%experiment zeroing {threads=2, size=1MiB}", true, KindExperiment, "zeroing", map[string]string{"threads": "2", "size": "1MiB"}, ""},
		{"%%latency  max=1M   huge", true, KindLatency, "", map[string]string{"max": "1M", "huge": "true"}, ""},
		{`%%sql note="a \"q\" b"`, true, KindSQL, "", map[string]string{"note": `a "q" b`}, ""},
		{"%%", false, "", "", nil, "%%"},
		{"SELECT 1\n%%latency", false, "", "", nil, "SELECT 1\n%%latency"},
	}
	for _, tt := range tests {
		kind, name, attrs, body, ok := ParseMagic(tt.src)
		if ok != tt.ok || kind != tt.kind || name != tt.name || body != tt.body || !maps.Equal(attrs, tt.attrs) {
			t.Errorf("ParseMagic(%q) = %q %q %v %q %v, want %q %q %v %q %v", tt.src, kind, name, attrs, body, ok,
				tt.kind, tt.name, tt.attrs, tt.body, tt.ok)
		}
	}
}

func TestJupyterSource(t *testing.T) {
	tests := []struct {
		cell Cell
		want string
	}{
		{Cell{Kind: KindSQL, Source: "SELECT 1"}, "SELECT 1"},
		{Cell{Kind: KindSQL, Source: "SELECT 1", Attrs: map[string]string{"counters": "on", "group_by": "radix"}}, "%%sql counters=on group_by=radix\nSELECT 1"},
		{Cell{Kind: KindLatency, Attrs: map[string]string{"max": "256M"}}, "%%latency max=256M"},
		{Cell{Kind: KindSweep, Attrs: map[string]string{"groups": "1e3,1e4", "note": "a b"}}, `%%sweep groups=1e3,1e4 note="a b"`},
		{Cell{Kind: KindExperiment, Name: "zeroing", Source: "size=1MiB"}, "%%experiment zeroing\nsize=1MiB"},
		{Cell{Kind: KindBandwidth}, "%%bandwidth"},
	}
	for _, tt := range tests {
		got := tt.cell.JupyterSource()
		if got != tt.want {
			t.Errorf("JupyterSource(%+v) = %q, want %q", tt.cell, got, tt.want)
		}
		// And it reads back as the same cell.
		kind, name, attrs, body, ok := ParseMagic(got)
		if !ok {
			kind, body = KindSQL, got
		}
		if kind != tt.cell.Kind || name != tt.cell.Name || body != tt.cell.Source || len(attrs)+len(tt.cell.Attrs) > 0 && !maps.Equal(attrs, tt.cell.Attrs) {
			t.Errorf("ParseMagic(%q) = %q %q %v %q, want the cell %+v", got, kind, name, attrs, body, tt.cell)
		}
	}
}

// FuzzMagicLine checks that a parsed magic line, written again, parses to
// the same cell.
func FuzzMagicLine(f *testing.F) {
	for _, s := range []string{"%%latency max=256M", "%%experiment false-sharing threads=2\nx=1", `%%sweep groups="1,2" a`, "%%sql {a=b, c}", "SELECT 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		kind, name, attrs, body, ok := ParseMagic(src)
		if !ok || !kind.IsCode() {
			return
		}
		for k := range attrs {
			if strings.ContainsAny(k, "{}\"") || strings.IndexFunc(k, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
				return // the info string syntax has no quoting for keys
			}
		}
		c := Cell{Kind: kind, Name: name, Attrs: attrs, Source: body}
		again := c.JupyterSource()
		k2, n2, a2, b2, ok2 := ParseMagic(again)
		if !ok2 {
			if kind == KindSQL && len(attrs) == 0 {
				return
			}
			t.Fatalf("%q → %q does not parse as a magic", src, again)
		}
		if k2 != kind || n2 != name || b2 != body || !maps.Equal(a2, attrs) && len(a2)+len(attrs) > 0 {
			t.Fatalf("%q → %q → %q %q %v %q, want %q %q %v %q", src, again, k2, n2, a2, b2, kind, name, attrs, body)
		}
	})
}
