package chart

import (
	"image"
	"image/color"
	"image/draw"
	"math"
	"strconv"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Image draws the chart as a raster image from the same layout as the
// SVG: the fallback for views that show no SVG.
func (c *Chart) Image() *image.RGBA {
	l := c.Layout()
	r := raster{image.NewRGBA(image.Rect(0, 0, int(l.W), int(math.Ceil(l.H))))}
	axis, grid, ink := rgb("#333333"), rgb("#dddddd"), color.RGBA{0, 0, 0, 0xff}
	r.rect(0, 0, l.W, l.H, color.White)
	p := l.Plot
	for _, t := range l.Y.Ticks {
		r.line(p.X0, t.Pos, p.X1, t.Pos, 1, grid)
	}
	for _, t := range l.X.Ticks {
		r.line(t.Pos, p.Y0, t.Pos, p.Y1+4, 1, grid)
	}
	r.line(p.X0, p.Y0, p.X0, p.Y1, 1, axis)
	r.line(p.X0, p.Y1, p.X1, p.Y1, 1, axis)
	for _, t := range l.Texts {
		r.text(t, ink)
	}
	if c.Bars {
		for si, s := range c.Series {
			for _, pt := range s.Points {
				x, w := l.bar(si, len(c.Series), pt.Label)
				y0, y1 := min(l.PY(pt.Y), l.PY(0)), max(l.PY(pt.Y), l.PY(0))
				r.rect(x, y0, x+w, y1, rgb(Color(si)))
			}
		}
	} else {
		for si, s := range c.Series {
			col := rgb(Color(si))
			pat := dashPattern(si)
			var prev *Point
			phase := 0.0
			for _, pt := range s.Points {
				if !l.Drawable(pt) {
					continue
				}
				if prev != nil {
					phase = r.dashed(l.PX(prev.X), l.PY(prev.Y), l.PX(pt.X), l.PY(pt.Y), 2, pat, phase, col)
				}
				prev = &pt
			}
			for _, pt := range s.Points {
				if l.Drawable(pt) {
					r.marker(si, l.PX(pt.X), l.PY(pt.Y), 4, col)
				}
			}
		}
	}
	for _, e := range l.Legend {
		sw, col := e.Swatch, rgb(Color(e.Series))
		if c.Bars {
			r.rect(sw.X0+4, sw.Y0, sw.X0+4+sw.Y1-sw.Y0, sw.Y1, col)
			continue
		}
		my := (sw.Y0 + sw.Y1) / 2
		r.dashed(sw.X0, my, sw.X1, my, 2, dashPattern(e.Series), 0, col)
		r.marker(e.Series, (sw.X0+sw.X1)/2, my, 4, col)
	}
	return r.img
}

func rgb(s string) color.RGBA {
	v, _ := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
}

func dashPattern(si int) []float64 {
	var pat []float64
	for _, f := range strings.Fields(dash(si)) {
		v, _ := strconv.ParseFloat(f, 64)
		pat = append(pat, v)
	}
	return pat
}

// raster is an image being drawn on.
type raster struct{ img *image.RGBA }

func (r raster) rect(x0, y0, x1, y1 float64, c color.Color) {
	draw.Draw(r.img, image.Rect(int(math.Round(x0)), int(math.Round(y0)), int(math.Round(x1)), int(math.Round(y1))),
		image.NewUniform(c), image.Point{}, draw.Src)
}

// dashed draws a line w pixels wide with the dash pattern pat (on, off,
// ...; nil is solid) starting phase pixels into it, and returns the phase
// where it ends, for the next segment of a polyline.
func (r raster) dashed(x0, y0, x1, y1, w float64, pat []float64, phase float64, c color.Color) float64 {
	length := math.Hypot(x1-x0, y1-y0)
	period := 0.0
	for _, v := range pat {
		period += v
	}
	n := int(length) + 1
	for i := 0; i <= n; i++ {
		t := float64(i) / float64(n)
		if period > 0 {
			at := math.Mod(phase+t*length, period)
			on := true
			for k, v := range pat {
				if at < v {
					on = k%2 == 0
					break
				}
				at -= v
			}
			if !on {
				continue
			}
		}
		x, y := x0+(x1-x0)*t, y0+(y1-y0)*t
		r.rect(x-w/2, y-w/2, x+w/2, y+w/2, c)
	}
	if period == 0 {
		return 0
	}
	return math.Mod(phase+length, period)
}

func (r raster) line(x0, y0, x1, y1, w float64, c color.Color) {
	r.dashed(x0, y0, x1, y1, w, nil, 0, c)
}

// marker draws series si's marker shape of radius s at (x, y).
func (r raster) marker(si int, x, y, s float64, c color.Color) {
	inside := func(dx, dy float64) bool { return dx*dx+dy*dy <= s*s }
	switch shape(si) {
	case "square":
		inside = func(dx, dy float64) bool { return math.Abs(dx) <= s*0.85 && math.Abs(dy) <= s*0.85 }
	case "triangle-up":
		inside = func(dx, dy float64) bool {
			return dy <= s*0.85 && dy >= -s*1.15 && math.Abs(dx) <= (dy+s*1.15)/(2*s)*s
		}
	case "diamond":
		inside = func(dx, dy float64) bool { return math.Abs(dx)/s+math.Abs(dy)/(s*1.2) <= 1 }
	}
	for py := int(math.Floor(y - 1.2*s)); py <= int(math.Ceil(y+1.2*s)); py++ {
		for px := int(math.Floor(x - s)); px <= int(math.Ceil(x+s)); px++ {
			if inside(float64(px)+0.5-x, float64(py)+0.5-y) {
				r.img.Set(px, py, c)
			}
		}
	}
}

// text draws t with the 7×13 face the layout measures with.
func (r raster) text(t Text, c color.Color) {
	d := font.Drawer{Dst: r.img, Src: image.NewUniform(c), Face: basicfont.Face7x13}
	w := float64(d.MeasureString(t.S).Round())
	d.Dot = fixed.P(int(math.Round(t.X-w*t.Anchor)), int(math.Round(t.Y)))
	d.DrawString(t.S)
}
