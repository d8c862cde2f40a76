package jupyter

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"

	"cachebook/kernel"
	"cachebook/kernel/experiment"
	"cachebook/kernel/sweep"
)

// MIME types Jupyter front ends render.
const (
	MIMEText     = "text/plain"
	MIMEHTML     = "text/html"
	MIMESVG      = "image/svg+xml"
	MIMEVegaLite = "application/vnd.vegalite.v5+json"
)

// Bundle turns a cachebook MIME bundle (what the executor emits) into one
// Jupyter front ends render: it keeps text/plain and every cachebook JSON
// form (as JSON values, as nbformat wants application/*+json), and adds
//
//   - text/html tables for a result (application/vnd.cachebook.result+json),
//     with the counters panel below when the cell collected counters;
//   - text/html for a counters panel and a progress bar;
//   - a Vega-Lite chart plus SVG and PNG images for a latency curve,
//     bandwidth bars or a sweep (application/vnd.cachebook.measurement+json).
//     The bundle then has no text/html, so JupyterLab and Notebook 7
//     (Vega-Lite renderer), front ends without one (SVG) and views that
//     show no SVG, such as Notebook 6 with an untrusted notebook (PNG), all
//     draw the chart.
func Bundle(data map[string]any) map[string]any {
	out := make(map[string]any, len(data)+3)
	for k, v := range data {
		out[k] = jsonValue(v)
	}
	if _, ok := out[MIMEText]; !ok {
		out[MIMEText] = ""
	}
	if v, ok := data[kernel.MIMEResult]; ok {
		var b resultBundle
		if decodeAny(v, &b) == nil {
			out[MIMEHTML] = resultHTML(&b)
		}
	}
	if v, ok := data[kernel.MIMECounters]; ok {
		var r countersReport
		if decodeAny(v, &r) == nil {
			out[MIMEHTML] = countersHTML(&r)
		}
	}
	if v, ok := data[kernel.MIMEProgress]; ok {
		var p kernel.Progress
		if decodeAny(v, &p) == nil {
			out[MIMEHTML] = progressHTML(p, fmt.Sprint(data[MIMEText]))
		}
	}
	if v, ok := data[kernel.MIMEMeasurement]; ok {
		if c, ok := measurementChart(v); ok {
			if m := c.below; m != nil {
				// A modelled sweep draws its modelled misses under the timed
				// chart, as the web UI does: one figure, two panels.
				out[MIMEVegaLite] = vconcat(c.vegaLite(), m.vegaLite())
				out[MIMESVG] = stackSVG(c.svg(), m.svg())
				out[MIMEPNG] = encodePNG(stackImages(c.image(), m.image()))
			} else {
				out[MIMEVegaLite] = c.vegaLite()
				out[MIMESVG] = c.svg()
				out[MIMEPNG] = encodePNG(c.image())
			}
			if out[MIMEPNG] == "" {
				delete(out, MIMEPNG)
			}
		}
	}
	return out
}

// jsonValue returns v as a value that marshals to the same JSON but holds
// only maps, slices and scalars (so a bundle read back from JSON equals
// the one sent).
func jsonValue(v any) any {
	switch v.(type) {
	case string, nil, bool, float64:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return string(b)
	}
	return out
}

func decodeAny(v any, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// resultBundle mirrors kernel.ResultBundle with the counters kept generic.
type resultBundle struct {
	Statements []kernel.StatementResult `json:"statements"`
	Timings    *kernel.Timings          `json:"timings"`
	Counters   *countersReport          `json:"counters"`
}

// maxHTMLRows bounds the rows of one HTML table (the text form and the
// JSON keep what the kernel sent).
const maxHTMLRows = 200

func resultHTML(b *resultBundle) string {
	var w strings.Builder
	w.WriteString(`<div class="cachebook-result">`)
	for _, st := range b.Statements {
		if len(st.Columns) == 0 {
			msg := st.Message
			if msg == "" {
				msg = "OK"
			}
			fmt.Fprintf(&w, "<p><code>%s</code> <small>(%s)</small></p>", html.EscapeString(msg), fmtNs(st.ElapsedNs))
			continue
		}
		w.WriteString(`<table><thead><tr>`)
		for _, c := range st.Columns {
			fmt.Fprintf(&w, `<th title="%s">%s</th>`, html.EscapeString(c.Type), html.EscapeString(c.Name))
		}
		w.WriteString("</tr></thead><tbody>")
		for i, row := range st.Rows {
			if i == maxHTMLRows {
				break
			}
			w.WriteString("<tr>")
			for _, v := range row {
				if v == nil {
					w.WriteString("<td><i>NULL</i></td>")
					continue
				}
				fmt.Fprintf(&w, "<td>%s</td>", html.EscapeString(*v))
			}
			w.WriteString("</tr>")
		}
		w.WriteString("</tbody></table>")
		shown := min(len(st.Rows), maxHTMLRows)
		note := fmt.Sprintf("%d row%s", st.RowCount, plural(st.RowCount))
		if shown < st.RowCount {
			note = fmt.Sprintf("%d of %d rows shown", shown, st.RowCount)
		}
		fmt.Fprintf(&w, "<p><small>%s in %s</small></p>", note, fmtNs(st.ElapsedNs))
	}
	if b.Counters != nil {
		w.WriteString(countersHTML(b.Counters))
	}
	w.WriteString("</div>")
	return w.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func fmtNs(ns int64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", float64(ns)/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.1f ms", float64(ns)/1e6)
	}
	return fmt.Sprintf("%.0f µs", float64(ns)/1e3)
}

// countersReport is the part of a perf counter report (kernel/perf.Report)
// the panel shows.
type countersReport struct {
	Live   bool  `json:"live"`
	WallNs int64 `json:"wall_ns"`
	Total  struct {
		Events []struct {
			Name      string  `json:"name"`
			Unit      string  `json:"unit"`
			Available bool    `json:"available"`
			Value     float64 `json:"value"`
			Scaled    bool    `json:"scaled"`
			Reason    *struct {
				Message string `json:"message"`
			} `json:"reason"`
		} `json:"events"`
		Derived []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
			Unit  string  `json:"unit"`
		} `json:"derived"`
	} `json:"total"`
	Workers []json.RawMessage `json:"workers"`
}

func countersHTML(r *countersReport) string {
	var w strings.Builder
	title := "Counters"
	if r.Live {
		title = "Counters (running)"
	}
	fmt.Fprintf(&w, `<div class="cachebook-counters"><b>%s</b> <small>%s wall, %d worker%s</small><table><tbody>`,
		title, fmtNs(r.WallNs), len(r.Workers), plural(len(r.Workers)))
	for _, e := range r.Total.Events {
		val := "<i>not available</i>"
		if e.Available {
			val = html.EscapeString(fmtValue(e.Value, e.Unit))
			if e.Scaled {
				val += " <small>(scaled)</small>"
			}
		} else if e.Reason != nil {
			val = "<i>not available: " + html.EscapeString(e.Reason.Message) + "</i>"
		}
		fmt.Fprintf(&w, "<tr><th>%s</th><td>%s</td></tr>", html.EscapeString(e.Name), val)
	}
	for _, m := range r.Total.Derived {
		fmt.Fprintf(&w, "<tr><th>%s</th><td>%s</td></tr>", html.EscapeString(m.Name), html.EscapeString(fmtValue(m.Value, m.Unit)))
	}
	w.WriteString("</tbody></table></div>")
	return w.String()
}

func fmtValue(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if math.Abs(v) >= 1e6 {
		s = strconv.FormatFloat(v, 'e', 3, 64)
	} else if v != math.Trunc(v) {
		s = strconv.FormatFloat(v, 'f', 3, 64)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

func progressHTML(p kernel.Progress, text string) string {
	if p.Total > 0 {
		return fmt.Sprintf(`<div class="cachebook-progress"><progress value="%d" max="%d"></progress> %s</div>`,
			p.Done, p.Total, html.EscapeString(text))
	}
	return fmt.Sprintf(`<div class="cachebook-progress"><progress></progress> %s</div>`, html.EscapeString(text))
}

// chart is a measurement drawn as series of (x, y) points.
type chart struct {
	title, xTitle, yTitle string
	logX                  bool
	bytesX                bool // x is a size in bytes (ticks at powers of 4, labelled 4K, 1M, ...)
	bars                  bool // x is a category, series are grouped bars
	series                []series
	below                 *chart // a second panel drawn under this one, or nil
}

type series struct {
	name string
	pts  []pt
}

type pt struct {
	x     float64
	label string // bar category
	y     float64
}

// measurementChart reads a measurement bundle value
// ({"kind": k, k: result}).
func measurementChart(v any) (*chart, bool) {
	var m struct {
		Kind    string `json:"kind"`
		Latency *struct {
			Points []struct {
				Bytes int64   `json:"bytes"`
				Ns    float64 `json:"ns"`
			} `json:"points"`
		} `json:"latency"`
		Bandwidth *struct {
			Results []struct {
				Op      string  `json:"op"`
				Threads int     `json:"threads"`
				GBps    float64 `json:"gb_per_s"`
			} `json:"results"`
		} `json:"bandwidth"`
		Experiment *struct {
			Chart *experiment.Chart `json:"chart"`
		} `json:"experiment"`
		Sweep *struct {
			Rows   int64        `json:"rows"`
			Points []sweepPoint `json:"points"`
		} `json:"sweep"`
	}
	if decodeAny(v, &m) != nil {
		return nil, false
	}
	switch {
	case m.Kind == kernel.KindLatency && m.Latency != nil && len(m.Latency.Points) > 0:
		s := series{name: "latency"}
		for _, p := range m.Latency.Points {
			s.pts = append(s.pts, pt{x: float64(p.Bytes), y: p.Ns})
		}
		return &chart{title: "Memory latency by working-set size", xTitle: "working set (bytes)", yTitle: "ns per access", logX: true, bytesX: true, series: []series{s}}, true
	case m.Kind == kernel.KindBandwidth && m.Bandwidth != nil && len(m.Bandwidth.Results) > 0:
		var set seriesSet
		for _, r := range m.Bandwidth.Results {
			set.add(fmt.Sprintf("%d thread%s", r.Threads, plural(r.Threads)), pt{label: r.Op, y: r.GBps})
		}
		return &chart{title: "Memory bandwidth", xTitle: "operation", yTitle: "GB/s", bars: true, series: set.list(false)}, true
	case m.Kind == kernel.KindSweep && m.Sweep != nil && len(m.Sweep.Points) > 0:
		var set seriesSet
		for _, p := range m.Sweep.Points {
			set.add(p.Strategy, pt{x: float64(p.Groups), y: p.NsPerRow})
		}
		c := &chart{title: fmt.Sprintf("GROUP BY cost by number of groups (%d rows)", m.Sweep.Rows), xTitle: "groups", yTitle: "ns per row", logX: true, series: set.list(true)}
		c.below = modelledSweepChart(m.Sweep.Rows, m.Sweep.Points)
		return c, true
	case m.Kind == kernel.KindExperiment && m.Experiment != nil && m.Experiment.Chart != nil:
		e := m.Experiment.Chart
		c := &chart{title: e.Title, xTitle: e.XTitle, yTitle: e.YTitle, logX: e.LogX, bars: e.Bars}
		for _, es := range e.Series {
			s := series{name: es.Name}
			for _, p := range es.Points {
				s.pts = append(s.pts, pt{x: p.X, label: p.Label, y: p.Y})
			}
			c.series = append(c.series, s)
		}
		return c, len(c.series) > 0
	}
	return nil, false
}

// sweepPoint is one point of a sweep as the charts read it.
type sweepPoint struct {
	Groups   int64        `json:"groups"`
	Strategy string       `json:"strategy"`
	NsPerRow float64      `json:"ns_per_row"`
	Model    *sweep.Model `json:"model"`
}

// modelledSweepChart returns the modelled-misses panel of a sweep run with
// model=true: per strategy, the modelled DRAM lines and L2 misses per row
// against the number of groups; nil when no point was modelled. Points the
// model could not trace are left out (the text output says why).
func modelledSweepChart(rows int64, points []sweepPoint) *chart {
	var set seriesSet
	for _, p := range points {
		if p.Model == nil || !p.Model.Modelled {
			continue
		}
		set.add(p.Strategy+" DRAM lines", pt{x: float64(p.Groups), y: p.Model.DRAMPerRow})
		set.add(p.Strategy+" L2 misses", pt{x: float64(p.Groups), y: p.Model.L2PerRow})
	}
	if len(set.names) == 0 {
		return nil
	}
	return &chart{title: fmt.Sprintf("Modelled misses per row (%d rows; modelled, not measured)", rows), xTitle: "groups", yTitle: "modelled per row", logX: true, series: set.list(true)}
}

// seriesSet gathers points into series by name, in the order the names
// first appear.
type seriesSet struct {
	by    map[string]*series
	names []string
}

func (s *seriesSet) add(name string, p pt) {
	sr, ok := s.by[name]
	if !ok {
		if s.by == nil {
			s.by = map[string]*series{}
		}
		sr = &series{name: name}
		s.by[name] = sr
		s.names = append(s.names, name)
	}
	sr.pts = append(sr.pts, p)
}

// list returns the series, sorted by name when sorted is set.
func (s *seriesSet) list(sorted bool) []series {
	names := s.names
	if sorted {
		names = slices.Sorted(slices.Values(names))
	}
	out := make([]series, 0, len(names))
	for _, n := range names {
		out = append(out, *s.by[n])
	}
	return out
}

// vconcat stacks Vega-Lite specifications into one figure.
func vconcat(specs ...map[string]any) map[string]any {
	out := map[string]any{"$schema": "https://vega.github.io/schema/vega-lite/v5.json"}
	var panels []any
	for _, s := range specs {
		delete(s, "$schema")
		panels = append(panels, s)
	}
	out["vconcat"] = panels
	// Each panel keeps its own colours: the series differ.
	out["resolve"] = map[string]any{"scale": map[string]any{"color": "independent"}}
	return out
}

// stackSVG puts SVG images of the same width one under another in one SVG.
func stackSVG(imgs ...string) string {
	var b strings.Builder
	y, w := 0.0, 0.0
	for _, s := range imgs {
		sw, sh := svgSize(s)
		fmt.Fprintf(&b, "<svg y=\"%g\"%s", y, strings.TrimPrefix(s, "<svg"))
		y += sh
		w = math.Max(w, sw)
	}
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g">`, w, y) + b.String() + "</svg>"
}

// svgSize reads the width and height attributes of an SVG's root element.
func svgSize(s string) (w, h float64) {
	head, _, _ := strings.Cut(s, ">")
	for _, f := range strings.Fields(head) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(strings.Trim(v, `"'`), 64)
		if err != nil {
			continue
		}
		switch k {
		case "width":
			w = n
		case "height":
			h = n
		}
	}
	return w, h
}

// vegaLite returns the chart as a Vega-Lite v5 specification with inline
// data.
func (c *chart) vegaLite() map[string]any {
	var values []any
	for _, s := range c.series {
		for _, p := range s.pts {
			row := map[string]any{"series": s.name, "y": p.y}
			if c.bars {
				row["x"] = p.label
			} else {
				row["x"] = p.x
			}
			values = append(values, row)
		}
	}
	x := map[string]any{"field": "x", "title": c.xTitle}
	y := map[string]any{"field": "y", "type": "quantitative", "title": c.yTitle}
	spec := map[string]any{
		"$schema": "https://vega.github.io/schema/vega-lite/v5.json",
		"title":   c.title,
		"width":   480,
		"height":  260,
		"data":    map[string]any{"values": values},
	}
	color := map[string]any{"field": "series", "type": "nominal", "title": nil}
	if c.bars {
		x["type"] = "nominal"
		x["sort"] = nil // the order of the measurements (read, write, ...)
		x["axis"] = map[string]any{"labelAngle": 0}
		spec["mark"] = map[string]any{"type": "bar", "tooltip": true}
		spec["encoding"] = map[string]any{"x": x, "y": y, "color": color, "xOffset": map[string]any{"field": "series"}}
	} else {
		x["type"] = "quantitative"
		if c.logX {
			x["scale"] = map[string]any{"type": "log", "base": 2}
			x["axis"] = c.logAxis()
		}
		if c.bytesX {
			// L1 hits and DRAM misses differ a hundredfold: a log axis shows
			// every level's plateau.
			y["scale"] = map[string]any{"type": "log"}
		}
		spec["mark"] = map[string]any{"type": "line", "point": true, "tooltip": true}
		spec["encoding"] = map[string]any{"x": x, "y": y, "color": color}
	}
	return spec
}

// logAxis returns the x axis of a log-scaled chart: ticks at powers of 4
// labelled 4K, 1M, 1G for sizes in bytes, and at powers of 10 labelled
// 1k, 1M for counts.
func (c *chart) logAxis() map[string]any {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.series {
		for _, p := range s.pts {
			if p.x > 0 {
				lo, hi = math.Min(lo, p.x), math.Max(hi, p.x)
			}
		}
	}
	if !(hi >= lo) {
		return map[string]any{}
	}
	base := 10.0
	if c.bytesX {
		base = 4
	}
	var ticks []any
	for v := math.Pow(base, math.Ceil(math.Log(lo)/math.Log(base)-1e-9)); v <= hi*(1+1e-9) && len(ticks) < 40; v *= base {
		ticks = append(ticks, v)
	}
	if !c.bytesX {
		return map[string]any{"values": ticks, "format": "~s"}
	}
	return map[string]any{"values": ticks, "labelExpr": "datum.value >= 1073741824 ? datum.value / 1073741824 + 'G' : " +
		"datum.value >= 1048576 ? datum.value / 1048576 + 'M' : datum.value >= 1024 ? datum.value / 1024 + 'K' : datum.value + ''"}
}

var palette = []string{"#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2"}

// svg draws the chart as a static SVG image (the fallback for front ends
// without a Vega-Lite renderer).
func (c *chart) svg() string {
	const W, H, left, right, top, bottom = 560.0, 320.0, 64.0, 120.0, 32.0, 48.0
	pw, ph := W-left-right, H-top-bottom
	ymax := 0.0
	xmin, xmax := math.Inf(1), math.Inf(-1)
	var cats []string
	seen := map[string]bool{}
	for _, s := range c.series {
		for _, p := range s.pts {
			ymax = math.Max(ymax, p.y)
			x := p.x
			if c.logX && x > 0 {
				x = math.Log2(x)
			}
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			if c.bars && !seen[p.label] {
				seen[p.label] = true
				cats = append(cats, p.label)
			}
		}
	}
	if ymax <= 0 {
		ymax = 1
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	ymax = niceCeil(ymax)
	X := func(x float64) float64 {
		if c.logX && x > 0 {
			x = math.Log2(x)
		}
		return left + (x-xmin)/(xmax-xmin)*pw
	}
	Y := func(y float64) float64 { return top + ph - y/ymax*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="11">`, W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="white"/>`, W, H)
	fmt.Fprintf(&b, `<text x="%g" y="18" font-size="13" font-weight="bold">%s</text>`, left, html.EscapeString(c.title))
	// Axes and y ticks.
	fmt.Fprintf(&b, `<path d="M%g %gV%gH%g" fill="none" stroke="#333"/>`, left, top, top+ph, left+pw)
	for i := 0; i <= 4; i++ {
		v := ymax * float64(i) / 4
		y := Y(v)
		fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%g" y="%.1f" text-anchor="end">%s</text>`,
			left, left+pw, y, y, left-4, y+4, strconv.FormatFloat(v, 'g', 4, 64))
	}
	fmt.Fprintf(&b, `<text transform="translate(14 %g) rotate(-90)" text-anchor="middle">%s</text>`, top+ph/2, html.EscapeString(c.yTitle))
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`, left+pw/2, H-8, html.EscapeString(c.xTitle))
	if c.bars {
		n := len(c.series)
		slot := pw / float64(max(len(cats), 1))
		bw := slot * 0.8 / float64(max(n, 1))
		for ci, cat := range cats {
			x0 := left + float64(ci)*slot + slot*0.1
			fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`, x0+slot*0.4, top+ph+14, html.EscapeString(cat))
			for si, s := range c.series {
				for _, p := range s.pts {
					if p.label != cat {
						continue
					}
					fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.2f</title></rect>`,
						x0+float64(si)*bw, Y(p.y), bw, top+ph-Y(p.y), palette[si%len(palette)], html.EscapeString(s.name), html.EscapeString(cat), p.y)
				}
			}
		}
	} else {
		// x ticks at whole powers of two (log) or at the ends.
		for e := math.Ceil(xmin); e <= xmax; e++ {
			if !c.logX {
				break
			}
			if int(e)%2 != 0 && xmax-xmin > 12 {
				continue
			}
			x := left + (e-xmin)/(xmax-xmin)*pw
			fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`, x, top+ph+14, humanPow2(e))
		}
		for si, s := range c.series {
			col := palette[si%len(palette)]
			var d strings.Builder
			for i, p := range s.pts {
				op := "L"
				if i == 0 {
					op = "M"
				}
				fmt.Fprintf(&d, "%s%.1f %.1f", op, X(p.x), Y(p.y))
			}
			fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`, d.String(), col)
			for _, p := range s.pts {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%g: %.2f</title></circle>`, X(p.x), Y(p.y), col, p.x, p.y)
			}
		}
	}
	for si, s := range c.series {
		y := top + 12 + float64(si)*16
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="10" height="10" fill="%s"/><text x="%g" y="%g">%s</text>`,
			left+pw+12, y-9, palette[si%len(palette)], left+pw+26, y, html.EscapeString(s.name))
	}
	b.WriteString("</svg>")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// humanPow2 writes 2^e bytes or counts as 4K, 1M, 2G.
func humanPow2(e float64) string {
	n := int64(math.Exp2(e))
	for _, u := range []struct {
		s string
		v int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return strconv.FormatInt(n/u.v, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}
