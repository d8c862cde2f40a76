package jupyter

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cachebook/kernel"
	"cachebook/kernel/bandwidth"
	"cachebook/kernel/chart"
	"cachebook/kernel/experiment"
	"cachebook/kernel/latency"
	"cachebook/kernel/sweep"
)

func str(s string) *string { return &s }

// wellFormed reports whether s parses as XML (the SVG fallback must).
func wellFormed(t *testing.T, s string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, s)
		}
	}
}

func TestBundleResult(t *testing.T) {
	b := &kernel.ResultBundle{Statements: []kernel.StatementResult{
		{Statement: "SET threads = 2", Message: "SET"},
		{Statement: "SELECT", Columns: []kernel.ResultColumn{{Name: "<k>", Type: "VARCHAR"}, {Name: "c", Type: "BIGINT"}},
			Rows: [][]*string{{str("<script>alert(1)</script>"), str("3")}, {nil, str("1")}}, RowCount: 5, Truncated: true},
	}}
	out := Bundle(map[string]any{kernel.MIMEResult: b, kernel.MIMEText: "text"})
	html, _ := out[MIMEHTML].(string)
	for _, want := range []string{"&lt;script&gt;", "<th title=\"VARCHAR\">&lt;k&gt;</th>", "<i>NULL</i>", "2 of 5 rows shown", "<code>SET</code>"} {
		if !strings.Contains(html, want) {
			t.Errorf("result HTML lacks %q:\n%s", want, html)
		}
	}
	if strings.Contains(html, "<script>") {
		t.Errorf("result HTML has an unescaped value:\n%s", html)
	}
	if out[MIMEText] != "text" {
		t.Errorf("text/plain = %v", out[MIMEText])
	}
	// The cachebook JSON stays, as plain JSON values.
	if _, ok := out[kernel.MIMEResult].(map[string]any); !ok {
		t.Errorf("result JSON is %T, want a JSON object", out[kernel.MIMEResult])
	}
	if _, err := json.Marshal(out); err != nil {
		t.Fatal(err)
	}
}

func TestBundleCharts(t *testing.T) {
	lat := &latency.Result{Points: []latency.Point{{Bytes: 4 << 10, Ns: 1.2}, {Bytes: 1 << 20, Ns: 4}, {Bytes: 64 << 20, Ns: 90}}}
	bw := &bandwidth.Report{Results: []bandwidth.Result{{Op: "read", Threads: 1, GBps: 10}, {Op: "read", Threads: 2, GBps: 18}, {Op: "copy", Threads: 1, GBps: 6}}}
	mlpResult := &experiment.Result{Experiment: "mlp", Chart: &experiment.Chart{Title: "t", XTitle: "chains", YTitle: "ns", LogX: true,
		Series: []experiment.ChartSeries{{Name: "ns per load", Points: []experiment.ChartPoint{{X: 1, Y: 90}, {X: 2, Y: 46}, {X: 4, Y: 24}}}}}}
	strideResult := &experiment.Result{Experiment: "stride", Chart: &experiment.Chart{Title: "t", XTitle: "pattern", YTitle: "ns", Bars: true,
		Series: []experiment.ChartSeries{{Name: "4 KiB pages", Points: []experiment.ChartPoint{{Label: "stride-64", Y: 6}, {Label: "random", Y: 24}}}}}}
	sw := &sweep.Report{Rows: 1000, Points: []sweep.Point{{Groups: 10, Strategy: "naive", NsPerRow: 2}, {Groups: 1000, Strategy: "naive", NsPerRow: 9}, {Groups: 10, Strategy: "radix", NsPerRow: 3}}}
	tests := []struct {
		kind   string
		v      any
		points int
		mark   string
	}{
		{kernel.KindLatency, lat, 3, "line"},
		{kernel.KindBandwidth, bw, 3, "bar"},
		{kernel.KindSweep, sw, 3, "line"},
		{kernel.KindExperiment, mlpResult, 3, "line"},
		{kernel.KindExperiment, strideResult, 2, "bar"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			out := Bundle(map[string]any{kernel.MIMEMeasurement: map[string]any{"kind": tt.kind, tt.kind: tt.v}, kernel.MIMEText: "summary"})
			spec, ok := out[MIMEVegaLite].(map[string]any)
			if !ok {
				t.Fatalf("no Vega-Lite chart in %v", keys(out))
			}
			if _, html := out[MIMEHTML]; html {
				t.Errorf("a chart bundle must not carry text/html (JupyterLab would prefer it to the chart)")
			}
			if n := len(spec["data"].(map[string]any)["values"].([]any)); n != tt.points {
				t.Errorf("chart has %d data values, want %d", n, tt.points)
			}
			if m := spec["mark"].(map[string]any)["type"]; m != tt.mark {
				t.Errorf("mark = %v, want %s", m, tt.mark)
			}
			enc := spec["encoding"].(map[string]any)
			if tt.kind == kernel.KindLatency {
				ticks := enc["x"].(map[string]any)["axis"].(map[string]any)["values"].([]any)
				if len(ticks) != 8 || ticks[0] != 4096.0 || ticks[7] != float64(64<<20) {
					t.Errorf("latency x ticks = %v, want 4K, 16K, ... 64M (powers of 4)", ticks)
				}
				if enc["y"].(map[string]any)["scale"].(map[string]any)["type"] != "log" {
					t.Errorf("latency y scale is not logarithmic")
				}
			}
			if !strings.HasSuffix(spec["$schema"].(string), "vega-lite/v5.json") {
				t.Errorf("$schema = %v", spec["$schema"])
			}
			pngData, err := base64.StdEncoding.DecodeString(out[MIMEPNG].(string))
			if err != nil {
				t.Fatalf("image/png is not base64: %v", err)
			}
			img, err := png.Decode(bytes.NewReader(pngData))
			if err != nil || img.Bounds().Dx() != int(chart.Width) {
				t.Fatalf("image/png: %v %v", err, img)
			}
			// The chart draws its series in the palette's first colour.
			found := false
			want := chart.Palette[0]
			for y := 0; y < img.Bounds().Dy() && !found; y++ {
				for x := 0; x < img.Bounds().Dx(); x++ {
					if r, g, b, _ := img.At(x, y).RGBA(); fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8) == want {
						found = true
						break
					}
				}
			}
			if !found {
				t.Errorf("the PNG has no pixel of the first series' colour")
			}
			svg := out[MIMESVG].(string)
			wellFormed(t, svg)
			if got := strings.Count(svg, "<title>"); got < tt.points {
				t.Errorf("SVG draws %d marks, want at least %d", got, tt.points)
			}
		})
	}
	t.Run("modelled sweep", func(t *testing.T) {
		m := func(dram, l2 float64) *sweep.Model {
			return &sweep.Model{Modelled: true, DRAMPerRow: dram, L2PerRow: l2}
		}
		sw := &sweep.Report{Rows: 1000, Points: []sweep.Point{
			{Groups: 10, Strategy: "naive", NsPerRow: 2, Model: m(0.1, 0.2)},
			{Groups: 1000, Strategy: "naive", NsPerRow: 9, Model: m(1.4, 2.1)},
			{Groups: 10, Strategy: "radix", NsPerRow: 3, Model: &sweep.Model{Why: "not traced"}},
		}}
		out := Bundle(map[string]any{kernel.MIMEMeasurement: map[string]any{"kind": kernel.KindSweep, kernel.KindSweep: sw}})
		spec, ok := out[MIMEVegaLite].(map[string]any)
		if !ok {
			t.Fatalf("no Vega-Lite chart in %v", keys(out))
		}
		panels, _ := spec["vconcat"].([]any)
		if len(panels) != 2 {
			t.Fatalf("vconcat has %d panels, want the timed and the modelled chart: %v", len(panels), spec)
		}
		modelled := panels[1].(map[string]any)
		vals := modelled["data"].(map[string]any)["values"].([]any)
		if len(vals) != 4 { // naive's two points, DRAM lines and L2 misses; radix was not modelled
			t.Errorf("modelled panel has %d values, want 4: %v", len(vals), vals)
		}
		if title, _ := modelled["title"].(string); !strings.Contains(title, "modelled, not measured") {
			t.Errorf("modelled panel title %q does not say it is modelled", title)
		}
		svg := out[MIMESVG].(string)
		wellFormed(t, svg)
		f, _ := measurementChart(map[string]any{"kind": kernel.KindSweep, kernel.KindSweep: sw})
		top, below := f.top.Layout(), f.below.Layout()
		if w, h := svgSize(svg); w != chart.Width || h != top.H+below.H {
			t.Errorf("stacked SVG is %gx%g, want %gx%g", w, h, chart.Width, top.H+below.H)
		}
		raw, err := base64.StdEncoding.DecodeString(out[MIMEPNG].(string))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil || img.Bounds().Dy() != int(top.H+below.H) {
			t.Fatalf("stacked PNG: %v, bounds %v", err, img.Bounds())
		}
	})
	// A sweep without the model keeps one panel.
	if spec := Bundle(map[string]any{kernel.MIMEMeasurement: map[string]any{"kind": kernel.KindSweep, kernel.KindSweep: sw}})[MIMEVegaLite].(map[string]any); spec["vconcat"] != nil {
		t.Errorf("an unmodelled sweep got panels: %v", spec)
	}
	// An empty or unknown measurement gets no chart, and no panic.
	for _, v := range []any{map[string]any{"kind": "latency"}, map[string]any{"kind": "other"}, "garbage",
		map[string]any{"kind": "experiment", "experiment": &experiment.Result{Experiment: "c2c"}}} {
		out := Bundle(map[string]any{kernel.MIMEMeasurement: v})
		if _, ok := out[MIMEVegaLite]; ok {
			t.Errorf("chart for %v", v)
		}
	}
}

func TestBundleCountersAndProgress(t *testing.T) {
	counters := map[string]any{"live": true, "wall_ns": 2e6, "workers": []any{map[string]any{}, map[string]any{}},
		"total": map[string]any{"events": []any{
			map[string]any{"name": "cycles", "available": true, "value": 1.5e9},
			map[string]any{"name": "cache-misses", "available": false, "reason": map[string]any{"message": "perf_event_paranoid is 2"}},
		}}}
	html := Bundle(map[string]any{kernel.MIMECounters: counters})[MIMEHTML].(string)
	for _, want := range []string{"Counters (running)", "2 workers", "cycles", "1.500e+09", "not available: perf_event_paranoid is 2"} {
		if !strings.Contains(html, want) {
			t.Errorf("counters HTML lacks %q:\n%s", want, html)
		}
	}
	p := Bundle(map[string]any{kernel.MIMEProgress: kernel.Progress{Done: 3, Total: 10}, kernel.MIMEText: "30% <rows>"})[MIMEHTML].(string)
	if !strings.Contains(p, `<progress value="3" max="10">`) || !strings.Contains(p, "&lt;rows&gt;") {
		t.Errorf("progress HTML = %s", p)
	}
}

func keys(m map[string]any) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	return s
}

func TestCellFromCode(t *testing.T) {
	tests := []struct {
		code   string
		kind   string
		source string
		attrs  map[string]string
	}{
		{"SELECT 1", "sql", "SELECT 1", nil},
		{"%%sql counters=on\nSELECT 1", "sql", "SELECT 1", map[string]string{"counters": "on"}},
		{"%%latency max=256M", "latency", "", map[string]string{"max": "256M"}},
		{"\n%%bandwidth bytes=8M threads=1,2\n", "bandwidth", "", map[string]string{"bytes": "8M", "threads": "1,2"}},
		{"%%bandwidth bytes=8M threads=\"1,2\"", "bandwidth", "", map[string]string{"bytes": "8M", "threads": "1,2"}},
		{"%%experiment false-sharing threads=2", "experiment", "false-sharing", map[string]string{"threads": "2"}},
		{"%%experiment zeroing\nsize=1MiB", "experiment", "zeroing\nsize=1MiB", nil},
		{"%%nosuch", "nosuch", "", nil},
		{"-- %%latency\nSELECT 1", "sql", "-- %%latency\nSELECT 1", nil},
	}
	for _, tt := range tests {
		c := CellFromCode(tt.code)
		if c.Kind != tt.kind || c.Source != tt.source {
			t.Errorf("CellFromCode(%q) = kind %q source %q, want %q %q", tt.code, c.Kind, c.Source, tt.kind, tt.source)
		}
		for k, v := range tt.attrs {
			if c.Attrs[k] != v {
				t.Errorf("CellFromCode(%q).Attrs[%s] = %q, want %q", tt.code, k, c.Attrs[k], v)
			}
		}
	}
}

func TestIsComplete(t *testing.T) {
	tests := []struct{ code, want string }{
		{"", "incomplete"},
		{"SELECT 1", "incomplete"},
		{"SELECT 1;", "complete"},
		{"SELECT 1; -- done", "complete"},
		{"SELECT ';'", "incomplete"},
		{"SELECT 'a;", "incomplete"},
		{"SELECT \"a;\" FROM t;", "complete"},
		{"SELECT 1 /* ; */", "incomplete"},
		{"SELECT 1; /* open", "incomplete"},
		{"%%latency max=1M\n", "complete"},
		{"%%experiment zeroing\nsize=1MiB", "incomplete"},
		{"%%experiment zeroing\nsize=1MiB\n\n", "complete"},
	}
	for _, tt := range tests {
		if got := isComplete(tt.code)["status"]; got != tt.want {
			t.Errorf("isComplete(%q) = %v, want %s", tt.code, got, tt.want)
		}
	}
}

// FuzzBundle feeds arbitrary JSON as each cachebook MIME type: Bundle must
// not panic, and what it returns must encode as JSON (it is sent as is).
func FuzzBundle(f *testing.F) {
	f.Add([]byte(`{"kind":"latency","latency":{"points":[{"bytes":4096,"ns":1.5},{"bytes":1e12,"ns":1e300}]}}`))
	f.Add([]byte(`{"kind":"bandwidth","bandwidth":{"results":[{"op":"<b>","threads":-1,"gb_per_s":-3}]}}`))
	f.Add([]byte(`{"kind":"sweep","sweep":{"rows":0,"points":[{"groups":0,"strategy":"","ns_per_row":0}]}}`))
	f.Add([]byte(`{"statements":[{"columns":[{"name":"a"}],"rows":[[null,"x"]],"row_count":-5}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		for _, mime := range []string{kernel.MIMEMeasurement, kernel.MIMEResult, kernel.MIMECounters, kernel.MIMEProgress} {
			out := Bundle(map[string]any{mime: v, kernel.MIMEText: "x"})
			if _, err := json.Marshal(out); err != nil {
				t.Fatalf("%s: bundle does not encode: %v", mime, err)
			}
			if s, ok := out[MIMESVG].(string); ok {
				wellFormed(t, s)
			}
		}
	})
}

// svgAxes reads the axes of a chart's SVG fallback: per axis ("x", "y"),
// its scale (data-scale) and the texts of its tick or category labels.
func svgAxes(t *testing.T, svg string) (scale map[string]string, labels map[string][]string) {
	t.Helper()
	scale, labels = map[string]string{}, map[string][]string{}
	d := xml.NewDecoder(strings.NewReader(svg))
	axis, label := "", false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return scale, labels
		}
		if err != nil {
			t.Fatalf("SVG: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range tok.Attr {
				attr[a.Name.Local] = a.Value
			}
			if tok.Name.Local == "g" && strings.HasPrefix(attr["class"], "axis ") {
				axis = strings.TrimPrefix(attr["class"], "axis ")
				scale[axis] = attr["data-scale"]
			}
			if tok.Name.Local == "text" {
				label = attr["class"] == "x-tick" || attr["class"] == "y-tick" || attr["class"] == "category"
				if label {
					labels[axis] = append(labels[axis], "")
				}
			}
		case xml.CharData:
			// A wrapped label's lines (tspans) join with spaces.
			if label {
				l := labels[axis]
				l[len(l)-1] = strings.TrimSpace(l[len(l)-1] + " " + string(tok))
			}
		case xml.EndElement:
			if tok.Name.Local == "text" {
				label = false
			}
			if tok.Name.Local == "g" {
				axis = ""
			}
		}
	}
}

// specAxis reads a Vega-Lite encoding channel: its scale type (band for a
// nominal axis), and its labels, the tick values' labels in labelExpr
// order (or the sorted categories).
func specAxis(t *testing.T, enc map[string]any) (scale string, labels []string) {
	t.Helper()
	if enc["type"] == "nominal" {
		// Vega-Lite breaks a label at " · " (labelExpr split).
		for _, c := range enc["sort"].([]string) {
			labels = append(labels, strings.ReplaceAll(c, " · ", " "))
		}
		return "band", labels
	}
	scale = enc["scale"].(map[string]any)["type"].(string)
	axis := enc["axis"].(map[string]any)
	expr := axis["labelExpr"].(string)
	vals := axis["values"].([]any)
	for _, part := range strings.Split(expr, " : ") {
		cond, lab, ok := strings.Cut(part, " ? ")
		if !ok {
			continue
		}
		if want := fmt.Sprintf("datum.value == %v", vals[len(labels)]); cond != want {
			t.Errorf("labelExpr condition %q, want %q", cond, want)
		}
		var s string
		if err := json.Unmarshal([]byte(lab), &s); err != nil {
			t.Fatalf("labelExpr label %s: %v", lab, err)
		}
		labels = append(labels, s)
	}
	if len(labels) != len(vals) {
		t.Errorf("labelExpr labels %d of %d tick values", len(labels), len(vals))
	}
	return scale, labels
}

// TestFallbackAxesMatchSpec renders every chart kind and checks that its
// SVG fallback has the Vega-Lite spec's scale types and exactly its tick
// labels, that the PNG's texts (laid out by the same layout) neither
// overlap nor leave the image and are drawn, and the labels each kind's
// readers need: a log latency axis reaching down to L1, decimal group
// counts, every power of two of the MLP chart's chains, ticks on a linear
// x axis.
func TestFallbackAxesMatchSpec(t *testing.T) {
	var latPts []latency.Point
	for b, ns := int64(4<<10), 1.2; b <= 256<<20; b *= 2 {
		latPts = append(latPts, latency.Point{Bytes: b, Ns: ns})
		ns = min(ns*1.6, 180)
	}
	var mlpPts, assocPts []experiment.ChartPoint
	for c := 1; c <= 64; c *= 2 {
		mlpPts = append(mlpPts, experiment.ChartPoint{X: float64(c), Y: 90 / float64(c)})
	}
	for n := 1; n <= 24; n++ {
		assocPts = append(assocPts, experiment.ChartPoint{X: float64(n), Y: 1 + float64(n/9)*4})
	}
	var swPts []sweep.Point
	for g := int64(10); g <= 1_000_000; g *= 10 {
		for _, s := range []string{"naive", "radix"} {
			swPts = append(swPts, sweep.Point{Groups: g, Strategy: s, NsPerRow: 2 + float64(g)/2e4,
				Model: &sweep.Model{Modelled: true, DRAMPerRow: float64(g) / 1e6, L2PerRow: float64(g) / 5e5}})
		}
	}
	measurements := []struct {
		name string
		kind string
		v    any
		// x and y: the scale types, and labels every renderer must show.
		x, y           string
		xWant, yWant   []string
		xNotContaining string
	}{
		{"latency", kernel.KindLatency, &latency.Result{Points: latPts}, "log", "log",
			[]string{"4 KiB", "64 KiB", "1 MiB", "16 MiB", "256 MiB"}, []string{"1", "10", "100"}, ""},
		{"bandwidth", kernel.KindBandwidth, &bandwidth.Report{Results: []bandwidth.Result{{Op: "read", Threads: 1, GBps: 10}, {Op: "write", Threads: 1, GBps: 7}, {Op: "copy", Threads: 2, GBps: 6}}},
			"band", "linear", []string{"read", "write", "copy"}, []string{"0"}, ""},
		{"sweep", kernel.KindSweep, &sweep.Report{Rows: 1000000, Points: swPts}, "log", "linear",
			[]string{"10", "100", "1k", "10k", "100k", "1M"}, []string{"0"}, "Ki"},
		{"mlp", kernel.KindExperiment, &experiment.Result{Experiment: "mlp", Chart: &experiment.Chart{Title: "Time per load as independent chains are added",
			XTitle: "independent chains", YTitle: "ns per load", LogX: true, Series: []experiment.ChartSeries{{Name: "ns per load", Points: mlpPts}}}},
			"log", "linear", []string{"1", "2", "4", "8", "16", "32", "64"}, nil, ""},
		{"associativity", kernel.KindExperiment, &experiment.Result{Experiment: "assoc", Chart: &experiment.Chart{Title: "Chasing N lines spaced a stride apart",
			XTitle: "lines", YTitle: "ns per load", Series: []experiment.ChartSeries{{Name: "stride 4 KiB", Points: assocPts}, {Name: "stride 4160 B", Points: assocPts[:12]}}}},
			"linear", "linear", []string{"5", "10", "15", "20"}, nil, ""},
		{"stride bars", kernel.KindExperiment, &experiment.Result{Experiment: "stride", Chart: &experiment.Chart{Title: "Time per cache line by access order",
			XTitle: "pattern", YTitle: "ns per line", Bars: true, Series: []experiment.ChartSeries{
				{Name: "4 KiB pages", Points: []experiment.ChartPoint{{Label: "sequential", Y: 0.8}, {Label: "stride-64 · prefetcher off", Y: 6}, {Label: "random", Y: 24}}},
				{Name: "2 MiB pages", Points: []experiment.ChartPoint{{Label: "sequential", Y: 0.8}, {Label: "stride-64 · prefetcher off", Y: 5}, {Label: "random", Y: 12}}}}}},
			"band", "linear", []string{"sequential", "random"}, nil, ""},
	}
	for _, m := range measurements {
		t.Run(m.name, func(t *testing.T) {
			f, ok := measurementChart(map[string]any{"kind": m.kind, m.kind: m.v})
			if !ok {
				t.Fatal("no chart")
			}
			panels := []*chart.Chart{f.top}
			if f.below != nil {
				panels = append(panels, f.below)
			}
			for pi, c := range panels {
				spec := c.VegaLite()
				enc := spec["encoding"].(map[string]any)
				scales, labels := svgAxes(t, c.SVG())
				for _, ax := range []string{"x", "y"} {
					scale, want := specAxis(t, enc[ax].(map[string]any))
					if scales[ax] != scale {
						t.Errorf("panel %d: %s axis: SVG scale %q, Vega-Lite %q", pi, ax, scales[ax], scale)
					}
					if strings.Join(labels[ax], "|") != strings.Join(want, "|") {
						t.Errorf("panel %d: %s axis: SVG labels %q, Vega-Lite %q", pi, ax, labels[ax], want)
					}
					if len(want) < 2 {
						t.Errorf("panel %d: %s axis has %d labels, want at least 2: %q", pi, ax, len(want), want)
					}
				}
				if pi > 0 {
					continue
				}
				if scales["x"] != m.x || scales["y"] != m.y {
					t.Errorf("scales x %s y %s, want x %s y %s", scales["x"], scales["y"], m.x, m.y)
				}
				for ax, want := range map[string][]string{"x": m.xWant, "y": m.yWant} {
					for _, w := range want {
						if !slices.Contains(labels[ax], w) {
							t.Errorf("%s labels %q lack %q", ax, labels[ax], w)
						}
					}
				}
				if m.xNotContaining != "" && strings.Contains(strings.Join(labels["x"], " "), m.xNotContaining) {
					t.Errorf("x labels %q contain %q", labels["x"], m.xNotContaining)
				}
			}
			for pi, c := range panels {
				checkImage(t, fmt.Sprint("panel ", pi), c)
				// CACHEBOOK_CHARTS_OUT=dir writes the images and specs, to look at.
				if dir := os.Getenv("CACHEBOOK_CHARTS_OUT"); dir != "" {
					name := filepath.Join(dir, strings.ReplaceAll(m.name, " ", "-")+fmt.Sprint(pi))
					var b bytes.Buffer
					if err := png.Encode(&b, c.Image()); err != nil {
						t.Fatal(err)
					}
					spec, err := json.Marshal(c.VegaLite())
					if err != nil {
						t.Fatal(err)
					}
					if err := errors.Join(os.WriteFile(name+".png", b.Bytes(), 0o644), os.WriteFile(name+".svg", []byte(c.SVG()), 0o644),
						os.WriteFile(name+".vl.json", spec, 0o644)); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// checkImage checks the PNG through the layout it is drawn from: no two
// texts overlap, every text lies inside the image and has ink in its box.
func checkImage(t *testing.T, what string, c *chart.Chart) {
	t.Helper()
	l := c.Layout()
	img := c.Image()
	if img.Bounds().Dx() != int(l.W) || img.Bounds().Dy() != int(math.Ceil(l.H)) {
		t.Errorf("%s: image %v, layout %gx%g", what, img.Bounds(), l.W, l.H)
	}
	all := chart.Box{X0: 0, Y0: 0, X1: l.W, Y1: l.H}
	for i, a := range l.Texts {
		if a.S == "" {
			continue
		}
		if !a.Box().Within(all) {
			t.Errorf("%s: %s %q at %+v leaves the image", what, a.Role, a.S, a.Box())
		}
		for _, b := range l.Texts[i+1:] {
			if b.S != "" && a.Box().Overlaps(b.Box()) {
				t.Errorf("%s: %s %q %+v overlaps %s %q %+v", what, a.Role, a.S, a.Box(), b.Role, b.S, b.Box())
			}
		}
		ink := 0
		bx := a.Box()
		for y := int(bx.Y0); y < int(bx.Y1); y++ {
			for x := int(bx.X0); x < int(bx.X1); x++ {
				if r, _, _, _ := img.At(x, y).RGBA(); r < 0x4000 {
					ink++
				}
			}
		}
		if ink == 0 {
			t.Errorf("%s: the PNG has no ink in the box of %s %q", what, a.Role, a.S)
		}
	}
}
