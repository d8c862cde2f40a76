package chart

import (
	"fmt"
	"html"
	"strings"
)

// SVG draws the chart as a static SVG image (the fallback for front ends
// without a Vega-Lite renderer). Each axis is a <g class="axis x"> or
// <g class="axis y"> with data-scale set to its scale type; every text
// carries its role as its class.
func (c *Chart) SVG() string {
	l := c.Layout()
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="11">`, l.W, l.H, l.W, l.H)
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="white"/>`, l.W, l.H)
	p := l.Plot
	// Grid lines at the labelled ticks, then the axes.
	fmt.Fprintf(&b, `<g class="axis y" data-scale="%s">`, l.Y.Scale)
	for _, t := range l.Y.Ticks {
		fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#ddd"/>`, p.X0, p.X1, t.Pos, t.Pos)
	}
	writeTexts(&b, l, RoleYTick, RoleYTitle)
	b.WriteString("</g>")
	if c.Bars {
		b.WriteString(`<g class="axis x" data-scale="band">`)
		writeTexts(&b, l, RoleCategory, RoleXTitle)
	} else {
		fmt.Fprintf(&b, `<g class="axis x" data-scale="%s">`, l.X.Scale)
		for _, t := range l.X.Ticks {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%g" y2="%g" stroke="#ddd"/>`, t.Pos, t.Pos, p.Y0, p.Y1+4)
		}
		writeTexts(&b, l, RoleXTick, RoleXTitle)
	}
	b.WriteString("</g>")
	fmt.Fprintf(&b, `<path d="M%g %gV%gH%g" fill="none" stroke="#333"/>`, p.X0, p.Y0, p.Y1, p.X1)
	writeTexts(&b, l, RoleTitle)
	b.WriteString(`<g class="series">`)
	if c.Bars {
		for si, s := range c.Series {
			for _, pt := range s.Points {
				x, w := l.bar(si, len(c.Series), pt.Label)
				y0, y1 := min(l.PY(pt.Y), l.PY(0)), max(l.PY(pt.Y), l.PY(0))
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="#333" stroke-width="0.5"><title>%s %s: %.3g</title></rect>`,
					x, y0, w, y1-y0, Color(si), html.EscapeString(s.Name), html.EscapeString(pt.Label), pt.Y)
			}
		}
	} else {
		for si, s := range c.Series {
			var d strings.Builder
			var pts []Point
			for _, pt := range s.Points {
				if l.Drawable(pt) {
					op := "L"
					if len(pts) == 0 {
						op = "M"
					}
					fmt.Fprintf(&d, "%s%.1f %.1f", op, l.PX(pt.X), l.PY(pt.Y))
					pts = append(pts, pt)
				}
			}
			dashAttr := ""
			if dash(si) != "" {
				dashAttr = fmt.Sprintf(` stroke-dasharray="%s"`, dash(si))
			}
			fmt.Fprintf(&b, `<g data-name="%s"><path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`, html.EscapeString(s.Name), d.String(), Color(si), dashAttr)
			for _, pt := range pts {
				fmt.Fprintf(&b, `<path d="%s" fill="%s"><title>%s %s: %.3g</title></path>`,
					markerPath(si, l.PX(pt.X), l.PY(pt.Y), 4), Color(si), html.EscapeString(s.Name), c.X.Format.Label(pt.X), pt.Y)
			}
			b.WriteString("</g>")
		}
	}
	b.WriteString(`</g><g class="legend">`)
	for _, e := range l.Legend {
		sw := e.Swatch
		if c.Bars {
			fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="%s" stroke="#333" stroke-width="0.5"/>`, sw.X0+4, sw.Y0, sw.Y1-sw.Y0, sw.Y1-sw.Y0, Color(e.Series))
		} else {
			my := (sw.Y0 + sw.Y1) / 2
			dashAttr := ""
			if dash(e.Series) != "" {
				dashAttr = fmt.Sprintf(` stroke-dasharray="%s"`, dash(e.Series))
			}
			fmt.Fprintf(&b, `<path d="M%g %gH%g" stroke="%s" stroke-width="2"%s/><path d="%s" fill="%s"/>`,
				sw.X0, my, sw.X1, Color(e.Series), dashAttr, markerPath(e.Series, (sw.X0+sw.X1)/2, my, 4), Color(e.Series))
		}
	}
	writeTexts(&b, l, RoleLegend)
	b.WriteString("</g></svg>")
	return b.String()
}

// writeTexts writes the layout's texts of the given roles.
func writeTexts(b *strings.Builder, l *Layout, roles ...Role) {
	open := false
	for _, r := range roles {
		for _, t := range l.Texts {
			if t.Role != r {
				continue
			}
			anchor := "start"
			switch t.Anchor {
			case 0.5:
				anchor = "middle"
			case 1:
				anchor = "end"
			}
			extra := ""
			if r == RoleTitle {
				extra = ` font-size="13" font-weight="bold"`
			}
			if t.Line > 0 {
				// The next line of a wrapped label.
				fmt.Fprintf(b, `<tspan x="%.1f" dy="%g">%s</tspan>`, t.X, lineH, html.EscapeString(t.S))
				continue
			}
			if open {
				b.WriteString("</text>")
			}
			fmt.Fprintf(b, `<text class="%s" x="%.1f" y="%.1f" text-anchor="%s"%s>%s`, r, t.X, t.Y, anchor, extra, html.EscapeString(t.S))
			open = true
		}
	}
	if open {
		b.WriteString("</text>")
	}
}

// bar returns the left edge and width of series si's bar (of n) in
// category cat's slot.
func (l *Layout) bar(si, n int, cat string) (x, w float64) {
	i := 0
	for k, c := range l.Categories {
		if c == cat {
			i = k
		}
	}
	x0, slot := l.Slot(i)
	w = slot * 0.8 / float64(max(1, n))
	return x0 + slot*0.1 + float64(si)*w, w
}

// markerPath is series si's marker (Shapes) of radius r at (x, y).
func markerPath(si int, x, y, r float64) string {
	switch shape(si) {
	case "square":
		r *= 0.85
		return fmt.Sprintf("M%.1f %.1fh%.1fv%.1fh%.1fz", x-r, y-r, 2*r, 2*r, -2*r)
	case "triangle-up":
		return fmt.Sprintf("M%.1f %.1fL%.1f %.1fL%.1f %.1fz", x, y-r*1.15, x+r, y+r*0.85, x-r, y+r*0.85)
	case "diamond":
		return fmt.Sprintf("M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fz", x, y-r*1.2, x+r, y, x, y+r*1.2, x-r, y)
	}
	return fmt.Sprintf("M%.1f %.1fa%g %g 0 1 0 %g 0a%g %g 0 1 0 %g 0z", x-r, y, r, r, 2*r, r, r, -2*r)
}
