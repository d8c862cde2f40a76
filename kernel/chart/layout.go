package chart

import (
	"math"
	"slices"
	"strings"
)

// Text metrics the layout measures with. They are those of the PNG's
// 7×13 bitmap face; the SVG's 11 px sans-serif is no wider on average and
// its bold 13 px title no wider than titleCharW, so boxes measured with
// them hold the text in both.
const (
	charW      = 7.0
	titleCharW = 8.0
	ascent     = 11.0
	descent    = 3.0
	lineH      = 14.0
	// Width is the width of every chart; the height grows from baseHeight
	// with the lines bar labels need.
	Width      = 560.0
	baseHeight = 320.0
	// xGap and yGap are the least room between two tick labels.
	xGap, yGap = 8.0, 2.0
)

// Box is a rectangle in image coordinates (y grows downwards).
type Box struct{ X0, Y0, X1, Y1 float64 }

// Overlaps reports whether b and o share more than an edge.
func (b Box) Overlaps(o Box) bool {
	return b.X0 < o.X1 && o.X0 < b.X1 && b.Y0 < o.Y1 && o.Y0 < b.Y1
}

// Within reports whether b lies inside o.
func (b Box) Within(o Box) bool {
	return b.X0 >= o.X0 && b.X1 <= o.X1 && b.Y0 >= o.Y0 && b.Y1 <= o.Y1
}

// Role says what a text is.
type Role string

// The roles of a chart's texts.
const (
	RoleTitle    Role = "title"
	RoleXTitle   Role = "x-title"
	RoleYTitle   Role = "y-title"
	RoleXTick    Role = "x-tick"
	RoleYTick    Role = "y-tick"
	RoleCategory Role = "category"
	RoleLegend   Role = "legend"
)

// Text is one text of a chart: S with its baseline at Y, anchored at X
// (Anchor 0 left, 0.5 middle, 1 right).
type Text struct {
	S      string
	X, Y   float64
	Anchor float64
	Role   Role
	Line   int // the line of a wrapped label: 0, 1, ...
}

// Box returns the text's box.
func (t Text) Box() Box {
	w := textWidth(t.S, t.Role == RoleTitle)
	x0 := t.X - w*t.Anchor
	return Box{x0, t.Y - ascent, x0 + w, t.Y + descent}
}

func textWidth(s string, title bool) float64 {
	cw := charW
	if title {
		cw = titleCharW
	}
	return float64(len([]rune(s))) * cw
}

// Tick is a labelled tick of an axis at Value, Pos pixels along it.
type Tick struct {
	Value float64
	Label string
	Pos   float64
}

// AxisLayout is an axis as drawn: its scale, its domain and its ticks.
type AxisLayout struct {
	Scale  Scale
	Domain [2]float64
	Ticks  []Tick
}

// Legend is one legend entry: series Series, its swatch drawn in Swatch.
type Legend struct {
	Series int
	Swatch Box
	Text   Text
}

// Layout is a chart laid out: what every renderer draws, where.
type Layout struct {
	W, H       float64
	Plot       Box
	X, Y       AxisLayout // X is empty for bars
	Categories []string   // bars: the x categories, in order
	// Texts are all the chart's texts: titles, tick and category labels,
	// legend names. No two boxes overlap and all lie inside the image.
	Texts  []Text
	Legend []Legend
}

// PX maps an x value to image coordinates.
func (l *Layout) PX(x float64) float64 { return l.Plot.X0 + l.X.frac(x)*(l.Plot.X1-l.Plot.X0) }

// PY maps a y value to image coordinates.
func (l *Layout) PY(y float64) float64 { return l.Plot.Y1 - l.Y.frac(y)*(l.Plot.Y1-l.Plot.Y0) }

// Slot returns the left edge and the width of category i's slot.
func (l *Layout) Slot(i int) (x0, w float64) {
	w = (l.Plot.X1 - l.Plot.X0) / float64(max(1, len(l.Categories)))
	return l.Plot.X0 + float64(i)*w, w
}

// Drawable reports whether point p of a line can be drawn (a log axis
// has no place for zero or a negative value).
func (l *Layout) Drawable(p Point) bool {
	ok := func(a AxisLayout, v float64) bool {
		return !math.IsNaN(v) && !math.IsInf(v, 0) && (a.Scale != Log || v > 0)
	}
	return ok(l.X, p.X) && ok(l.Y, p.Y)
}

func (a AxisLayout) frac(v float64) float64 {
	lo, hi := a.Domain[0], a.Domain[1]
	if a.Scale == Log {
		if v <= 0 {
			return 0
		}
		v, lo, hi = math.Log(v), math.Log(lo), math.Log(hi)
	}
	if !(hi > lo) {
		return 0.5
	}
	return (v - lo) / (hi - lo)
}

// Layout lays the chart out.
func (c *Chart) Layout() *Layout {
	l := &Layout{W: Width}
	var xs, ys []float64
	seen := map[string]bool{}
	for _, s := range c.Series {
		for _, p := range s.Points {
			if finite(p.Y) && (c.Y.Scale != Log || p.Y > 0) {
				ys = append(ys, p.Y)
			}
			if c.Bars {
				if !seen[p.Label] {
					seen[p.Label] = true
					l.Categories = append(l.Categories, p.Label)
				}
			} else if finite(p.X) && (c.X.Scale != Log || p.X > 0) {
				xs = append(xs, p.X)
			}
		}
	}
	// Top: the title (wrapped to the width), the y title under it, left,
	// where it never meets the rotated text of the ticks.
	y := 0.0
	for _, line := range wrap(c.Title, int((Width-8)/titleCharW), 2) {
		y += 17
		l.Texts = append(l.Texts, Text{S: line, X: 4, Y: y, Role: RoleTitle})
	}
	y += 17
	l.Texts = append(l.Texts, Text{S: c.Y.Title, X: 4, Y: y, Role: RoleYTitle})
	l.Plot.Y0 = y + descent + 12

	// Right: the legend, as wide as its longest name (within bounds).
	legendW := 0.0
	for _, s := range c.Series {
		legendW = max(legendW, textWidth(s.Name, false))
	}
	legendW = min(legendW, 26*charW) + 36
	l.Plot.X1 = Width - legendW - 8

	// Bottom: tick labels (bars: category labels of up to three lines)
	// and the x title.
	// Left: as wide as the y tick labels, which depend on the height,
	// which depends on the lines the category labels need in the width
	// the left margin leaves them: the second round settles it.
	var lines [][]string
	left := 40.0
	for range 2 {
		lines = lines[:0]
		extra := 0.0
		if c.Bars {
			slot := (l.Plot.X1 - left) / float64(max(1, len(l.Categories)))
			fit := max(3, int((slot-xGap)/charW))
			for _, cat := range l.Categories {
				ls := wrap(cat, fit, 3)
				lines = append(lines, ls)
				extra = max(extra, float64(len(ls)-1)*lineH)
			}
		}
		l.H = baseHeight + extra
		l.Plot.Y1 = l.H - 2*lineH - 18 - extra
		l.Y = c.yAxis(ys, l.Plot.Y0, l.Plot.Y1)
		for _, t := range l.Y.Ticks {
			left = max(left, textWidth(t.Label, false)+14)
		}
	}
	l.Plot.X0 = left
	for i, t := range l.Y.Ticks {
		l.Y.Ticks[i].Pos = l.PY(t.Value)
		l.Texts = append(l.Texts, Text{S: t.Label, X: left - 6, Y: l.PY(t.Value) + 4, Anchor: 1, Role: RoleYTick})
	}

	// Tick labels start below the lowest y tick label's box.
	tickY := l.Plot.Y1 + 8 + ascent
	if c.Bars {
		for i := range l.Categories {
			x0, w := l.Slot(i)
			for k, s := range lines[i] {
				l.Texts = append(l.Texts, Text{S: s, X: x0 + w/2, Y: tickY + float64(k)*lineH, Anchor: 0.5, Role: RoleCategory, Line: k})
			}
		}
	} else {
		l.X = c.xAxis(xs, l.Plot.X0, l.Plot.X1)
		for i, t := range l.X.Ticks {
			l.X.Ticks[i].Pos = l.PX(t.Value)
			l.Texts = append(l.Texts, Text{S: t.Label, X: l.PX(t.Value), Y: tickY, Anchor: 0.5, Role: RoleXTick})
		}
	}
	l.Texts = append(l.Texts, Text{S: c.X.Title, X: (l.Plot.X0 + l.Plot.X1) / 2, Y: l.H - 8, Anchor: 0.5, Role: RoleXTitle})

	for i, s := range c.Series {
		ty := l.Plot.Y0 + 10 + float64(i)*16
		x := l.Plot.X1 + 12
		name := cut(s.Name, int((Width-x-26)/charW))
		l.Legend = append(l.Legend, Legend{Series: i, Swatch: Box{x, ty - 9, x + 18, ty + 1},
			Text: Text{S: name, X: x + 24, Y: ty, Role: RoleLegend}})
		l.Texts = append(l.Texts, l.Legend[i].Text)
	}
	return l
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// yAxis lays out the y axis over pixels [top, bottom]: linear from zero
// (or below, for negative values), or logarithmic over 1-2-5 values.
func (c *Chart) yAxis(ys []float64, top, bottom float64) AxisLayout {
	fits := func(a AxisLayout) bool {
		h := bottom - top
		last := math.Inf(1)
		for _, t := range a.Ticks {
			pos := bottom - a.frac(t.Value)*h
			if last-pos < ascent+descent+yGap {
				return false
			}
			last = pos
		}
		return true
	}
	if c.Y.Scale == Log {
		lo, hi := 1.0, 10.0
		if len(ys) > 0 {
			lo, hi = nice125(slices.Min(ys), false), nice125(slices.Max(ys), true)
		}
		if !(hi > lo) {
			lo, hi = nice125(lo*0.99, false), nice125(hi*1.01, true)
		}
		return logAxis(lo, hi, c.Y.Format, false, fits)
	}
	lo, hi := 0.0, 1.0
	if len(ys) > 0 {
		lo, hi = min(0, slices.Min(ys)), max(0, slices.Max(ys))
	}
	return linearAxis(lo, hi, c.Y.Format, false, true, fits)
}

// xAxis lays out a line chart's x axis over pixels [left, right].
func (c *Chart) xAxis(xs []float64, left, right float64) AxisLayout {
	fits := func(a AxisLayout) bool {
		last := math.Inf(-1)
		for _, t := range a.Ticks {
			pos := left + a.frac(t.Value)*(right-left)
			w := textWidth(t.Label, false)
			if pos-w/2 < max(last+xGap, 0) || pos+w/2 > Width {
				return false
			}
			last = pos + w/2
		}
		return true
	}
	lo, hi := 1.0, 2.0
	if len(xs) > 0 {
		lo, hi = slices.Min(xs), slices.Max(xs)
	}
	ints := true
	for _, x := range xs {
		ints = ints && x == math.Trunc(x)
	}
	if c.X.Scale == Log {
		if !(hi > lo) {
			lo, hi = lo/2, hi*2
		}
		pow2 := c.X.Format == Bytes
		if !pow2 && ints && hi/lo <= 1<<12 {
			pow2 = true
			for _, x := range xs {
				pow2 = pow2 && x == math.Exp2(math.Round(math.Log2(x)))
			}
		}
		return logAxis(lo, hi, c.X.Format, pow2, fits)
	}
	if !(hi > lo) {
		lo, hi = lo-1, hi+1
	}
	return linearAxis(lo, hi, c.X.Format, ints, false, fits)
}

// logAxis returns a log axis over [lo, hi] with the densest set of ticks
// that fits: powers of two (pow2) thinned to every k-th, or 1-2-5 values,
// then powers of ten thinned likewise.
func logAxis(lo, hi float64, f Format, pow2 bool, fits func(AxisLayout) bool) AxisLayout {
	a := AxisLayout{Scale: Log, Domain: [2]float64{lo, hi}}
	var cands [][]float64
	if pow2 {
		e0, e1 := int(math.Ceil(math.Log2(lo)-1e-9)), int(math.Floor(math.Log2(hi)+1e-9))
		for _, k := range []int{1, 2, 4, 10, 20} {
			var vs []float64
			for e := e0; e <= e1; e++ {
				if ((e%k)+k)%k == 0 {
					vs = append(vs, math.Exp2(float64(e)))
				}
			}
			cands = append(cands, vs)
		}
	}
	d0, d1 := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	in := func(v float64) bool { return v >= lo*(1-1e-9) && v <= hi*(1+1e-9) }
	for _, ms := range [][]float64{{1, 2, 5}, {1, 3}} {
		var vs []float64
		for d := d0; d <= d1; d++ {
			for _, m := range ms {
				if v := m * math.Pow(10, float64(d)); in(v) {
					vs = append(vs, round(v))
				}
			}
		}
		cands = append(cands, vs)
	}
	for _, k := range []int{1, 2, 3, 4, 6} {
		var vs []float64
		for d := d0; d <= d1; d++ {
			if v := math.Pow(10, float64(d)); ((d%k)+k)%k == 0 && in(v) {
				vs = append(vs, round(v))
			}
		}
		cands = append(cands, vs)
	}
	return pick(a, cands, f, fits, lo, hi)
}

// linearAxis returns a linear axis over [lo, hi] extended to round ticks,
// with the most ticks (up to about six) that fit; ints keeps the step whole,
// zero keeps zero in the domain.
func linearAxis(lo, hi float64, f Format, ints, zero bool, fits func(AxisLayout) bool) AxisLayout {
	for n := 6.0; n >= 2; n-- {
		step := niceStep((hi - lo) / n)
		if ints {
			step = max(step, 1)
		}
		a := AxisLayout{Scale: Linear, Domain: [2]float64{math.Floor(lo/step) * step, math.Ceil(hi/step-1e-9) * step}}
		if zero && lo >= 0 {
			a.Domain[0] = 0
		}
		if !(a.Domain[1] > a.Domain[0]) {
			a.Domain[1] = a.Domain[0] + step
		}
		// Ticks by index, not by adding steps: a step below the values'
		// precision would never reach the end.
		for i := 0.0; i <= n*4 && a.Domain[0]+i*step <= a.Domain[1]+step*1e-9; i++ {
			v := min(max(round(a.Domain[0]+i*step), a.Domain[0]), a.Domain[1])
			a.Ticks = append(a.Ticks, Tick{Value: v, Label: f.Label(v)})
		}
		if fits(a) && distinct(a.Ticks) {
			return a
		}
	}
	// No round ticks tell the values apart (a range far below their
	// precision of three digits): the ends, or the first alone.
	a := AxisLayout{Scale: Linear, Domain: [2]float64{lo, hi}}
	a.Ticks = []Tick{{Value: lo, Label: f.Label(lo)}, {Value: hi, Label: f.Label(hi)}}
	if !fits(a) || !distinct(a.Ticks) {
		a.Ticks = a.Ticks[:1]
	}
	return a
}

// pick returns the first candidate tick set that fits and has at least
// two ticks; failing that, the domain's ends.
func pick(a AxisLayout, cands [][]float64, f Format, fits func(AxisLayout) bool, lo, hi float64) AxisLayout {
	for _, vs := range cands {
		if len(vs) < 2 {
			continue
		}
		b := a
		b.Ticks = nil
		for _, v := range vs {
			b.Ticks = append(b.Ticks, Tick{Value: v, Label: f.Label(v)})
		}
		if fits(b) && distinct(b.Ticks) {
			return b
		}
	}
	a.Ticks = []Tick{{Value: lo, Label: f.Label(lo)}, {Value: hi, Label: f.Label(hi)}}
	if !fits(a) {
		a.Ticks = a.Ticks[:1]
	}
	return a
}

// distinct reports whether no two ticks share a label (a label that
// rounds two values to one would mislead).
func distinct(ts []Tick) bool {
	seen := map[string]bool{}
	for _, t := range ts {
		if seen[t.Label] {
			return false
		}
		seen[t.Label] = true
	}
	return true
}

// nice125 rounds v to a 1, 2 or 5 times a power of ten: up, or down.
func nice125(v float64, up bool) float64 {
	if !(v > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	ms := []float64{1, 2, 5, 10}
	if up {
		for _, m := range ms {
			if m*p >= v*(1-1e-9) {
				return round(m * p)
			}
		}
	}
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i]*p <= v*(1+1e-9) {
			return round(ms[i] * p)
		}
	}
	return round(p)
}

// niceStep rounds a raw tick step up to 1, 2, 2.5 or 5 times a power of
// ten.
func niceStep(raw float64) float64 {
	if !(raw > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// round removes the float noise of sums and powers (0.30000000000000004).
func round(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, 12-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// wrap breaks s into at most n lines of at most width characters, at
// " · " and then at spaces; what does not fit is cut with "…".
func wrap(s string, width, n int) []string {
	if len([]rune(s)) <= width {
		return []string{s}
	}
	var words []string
	for i, part := range strings.Split(s, " · ") {
		if i > 0 {
			words = append(words, "·")
		}
		words = append(words, strings.Fields(part)...)
	}
	var lines []string
	cur := ""
	for _, w := range words {
		switch {
		case cur == "":
			cur = w
		case len([]rune(cur))+1+len([]rune(w)) <= width:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	if len(lines) > n {
		lines[n-1] = strings.Join(lines[n-1:], " ")
		lines = lines[:n]
	}
	for i, line := range lines {
		lines[i] = strings.TrimSuffix(cut(strings.TrimPrefix(line, "· "), width), " ·")
	}
	return lines
}

// cut shortens s to n characters, the last an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return string(r[:n-1]) + "…"
}
