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
	"cachebook/kernel/chart"
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
		if f, ok := measurementChart(v); ok {
			if m := f.below; m != nil {
				// A modelled sweep draws its modelled misses under the timed
				// chart, as the web UI does: one figure, two panels.
				out[MIMEVegaLite] = vconcat(f.top.VegaLite(), m.VegaLite())
				out[MIMESVG] = stackSVG(f.top.SVG(), m.SVG())
				out[MIMEPNG] = encodePNG(stackImages(f.top.Image(), m.Image()))
			} else {
				out[MIMEVegaLite] = f.top.VegaLite()
				out[MIMESVG] = f.top.SVG()
				out[MIMEPNG] = encodePNG(f.top.Image())
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

// figure is a measurement's chart, and the panel drawn under it (a
// modelled sweep's misses) or nil.
type figure struct {
	top, below *chart.Chart
}

// measurementChart reads a measurement bundle value
// ({"kind": k, k: result}).
func measurementChart(v any) (*figure, bool) {
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
		s := chart.Series{Name: "latency"}
		for _, p := range m.Latency.Points {
			s.Points = append(s.Points, chart.Point{X: float64(p.Bytes), Y: p.Ns})
		}
		// L1 hits and DRAM misses differ a hundredfold: a log y axis
		// shows every level's plateau.
		return &figure{top: &chart.Chart{Title: "Memory latency by working-set size",
			X:      chart.Axis{Title: "working set", Scale: chart.Log, Format: chart.Bytes},
			Y:      chart.Axis{Title: "ns per access", Scale: chart.Log},
			Series: []chart.Series{s}}}, true
	case m.Kind == kernel.KindBandwidth && m.Bandwidth != nil && len(m.Bandwidth.Results) > 0:
		var set seriesSet
		for _, r := range m.Bandwidth.Results {
			set.add(fmt.Sprintf("%d thread%s", r.Threads, plural(r.Threads)), chart.Point{Label: r.Op, Y: r.GBps})
		}
		return &figure{top: &chart.Chart{Title: "Memory bandwidth", X: chart.Axis{Title: "operation"},
			Y: chart.Axis{Title: "GB/s", Scale: chart.Linear}, Bars: true, Series: set.list(false)}}, true
	case m.Kind == kernel.KindSweep && m.Sweep != nil && len(m.Sweep.Points) > 0:
		var set seriesSet
		for _, p := range m.Sweep.Points {
			set.add(p.Strategy, chart.Point{X: float64(p.Groups), Y: p.NsPerRow})
		}
		return &figure{
			top: &chart.Chart{Title: fmt.Sprintf("GROUP BY cost by number of groups (%d rows)", m.Sweep.Rows),
				X: groupsAxis, Y: chart.Axis{Title: "ns per row", Scale: chart.Linear}, Series: set.list(true)},
			below: modelledSweepChart(m.Sweep.Rows, m.Sweep.Points),
		}, true
	case m.Kind == kernel.KindExperiment && m.Experiment != nil && m.Experiment.Chart != nil:
		e := m.Experiment.Chart
		c := &chart.Chart{Title: e.Title, X: chart.Axis{Title: e.XTitle, Scale: chart.Linear},
			Y: chart.Axis{Title: e.YTitle, Scale: chart.Linear}, Bars: e.Bars}
		if e.LogX {
			c.X.Scale = chart.Log
		}
		for _, es := range e.Series {
			s := chart.Series{Name: es.Name}
			for _, p := range es.Points {
				s.Points = append(s.Points, chart.Point{X: p.X, Label: p.Label, Y: p.Y})
			}
			c.Series = append(c.Series, s)
		}
		return &figure{top: c}, len(c.Series) > 0
	}
	return nil, false
}

// groupsAxis is a sweep's x axis: counts of groups, labelled in decimal.
var groupsAxis = chart.Axis{Title: "groups", Scale: chart.Log, Format: chart.Number}

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
func modelledSweepChart(rows int64, points []sweepPoint) *chart.Chart {
	var set seriesSet
	for _, p := range points {
		if p.Model == nil || !p.Model.Modelled {
			continue
		}
		set.add(p.Strategy+" DRAM lines", chart.Point{X: float64(p.Groups), Y: p.Model.DRAMPerRow})
		set.add(p.Strategy+" L2 misses", chart.Point{X: float64(p.Groups), Y: p.Model.L2PerRow})
	}
	if len(set.names) == 0 {
		return nil
	}
	return &chart.Chart{Title: fmt.Sprintf("Modelled misses per row (%d rows; modelled, not measured)", rows),
		X: groupsAxis, Y: chart.Axis{Title: "modelled per row", Scale: chart.Linear}, Series: set.list(true)}
}

// seriesSet gathers points into series by name, in the order the names
// first appear.
type seriesSet struct {
	by    map[string]*chart.Series
	names []string
}

func (s *seriesSet) add(name string, p chart.Point) {
	sr, ok := s.by[name]
	if !ok {
		if s.by == nil {
			s.by = map[string]*chart.Series{}
		}
		sr = &chart.Series{Name: name}
		s.by[name] = sr
		s.names = append(s.names, name)
	}
	sr.Points = append(sr.Points, p)
}

// list returns the series, sorted by name when sorted is set.
func (s *seriesSet) list(sorted bool) []chart.Series {
	names := s.names
	if sorted {
		names = slices.Sorted(slices.Values(names))
	}
	out := make([]chart.Series, 0, len(names))
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
