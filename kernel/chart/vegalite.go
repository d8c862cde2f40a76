package chart

import (
	"strconv"
	"strings"
)

// VegaLite returns the chart as a Vega-Lite v5 specification with inline
// data, drawn with the layout's scales: the same scale types and domains
// and the same labelled ticks as the SVG and the PNG.
func (c *Chart) VegaLite() map[string]any {
	l := c.Layout()
	var values []any
	var names []string
	for _, s := range c.Series {
		names = append(names, s.Name)
		for _, p := range s.Points {
			row := map[string]any{"series": s.Name, "y": p.Y}
			if c.Bars {
				row["x"] = p.Label
			} else if !l.Drawable(p) {
				continue
			} else {
				row["x"] = p.X
			}
			values = append(values, row)
		}
	}
	n := max(1, len(c.Series))
	color := map[string]any{"field": "series", "type": "nominal", "title": nil,
		"scale": map[string]any{"domain": names, "range": cycle(Palette, n)}}
	spec := map[string]any{
		"$schema": "https://vega.github.io/schema/vega-lite/v5.json",
		"title":   c.Title,
		"width":   l.Plot.X1 - l.Plot.X0,
		"height":  l.Plot.Y1 - l.Plot.Y0,
		"data":    map[string]any{"values": values},
	}
	y := axisSpec("y", c.Y.Title, l.Y)
	if c.Bars {
		x := map[string]any{"field": "x", "type": "nominal", "title": c.X.Title,
			"sort": l.Categories, "axis": map[string]any{"labelAngle": 0, "labelExpr": "split(datum.label, ' · ')"}}
		spec["mark"] = map[string]any{"type": "bar", "tooltip": true}
		spec["encoding"] = map[string]any{"x": x, "y": y, "color": color, "xOffset": map[string]any{"field": "series", "sort": names}}
		return spec
	}
	var dashes []any
	for i := range n {
		var d []any
		for _, f := range strings.Fields(dash(i)) {
			v, _ := strconv.ParseFloat(f, 64)
			d = append(d, v)
		}
		if d == nil {
			d = []any{1, 0}
		}
		dashes = append(dashes, d)
	}
	spec["mark"] = map[string]any{"type": "line", "point": map[string]any{"filled": true, "size": 40}, "tooltip": true}
	spec["encoding"] = map[string]any{
		"x":          axisSpec("x", c.X.Title, l.X),
		"y":          y,
		"color":      color,
		"strokeDash": map[string]any{"field": "series", "type": "nominal", "legend": nil, "scale": map[string]any{"domain": names, "range": dashes}},
		"shape":      map[string]any{"field": "series", "type": "nominal", "legend": nil, "scale": map[string]any{"domain": names, "range": cycle(Shapes, n)}},
	}
	return spec
}

// axisSpec is a quantitative encoding drawn on axis a: its scale type,
// its domain, and exactly its labelled ticks.
func axisSpec(field, title string, a AxisLayout) map[string]any {
	scale := map[string]any{"type": string(a.Scale), "domain": []any{a.Domain[0], a.Domain[1]}, "nice": false}
	if a.Scale == Linear {
		scale["zero"] = false
	}
	var vals []any
	var expr strings.Builder
	for _, t := range a.Ticks {
		vals = append(vals, t.Value)
		v := strconv.FormatFloat(t.Value, 'g', -1, 64)
		expr.WriteString("datum.value == " + v + " ? " + strconv.Quote(t.Label) + " : ")
	}
	expr.WriteString(`""`)
	return map[string]any{"field": field, "type": "quantitative", "title": title, "scale": scale,
		"axis": map[string]any{"values": vals, "labelExpr": expr.String(), "grid": true}}
}

func cycle(list []string, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = list[i%len(list)]
	}
	return out
}
