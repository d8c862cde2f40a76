package jupyter

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"strconv"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// MIMEPNG is the MIME type of the raster fallback.
const MIMEPNG = "image/png"

// Chart geometry shared by the SVG and PNG forms.
const (
	chartW, chartH                       = 560.0, 320.0
	padLeft, padRight, padTop, padBottom = 64.0, 120.0, 32.0, 48.0
)

// scales is a chart's scales.
type scales struct {
	c          *chart
	xmin, xmax float64
	ymax       float64
	cats       []string
}

func (c *chart) scales() scales {
	f := scales{c: c, xmin: math.Inf(1), xmax: math.Inf(-1)}
	seen := map[string]bool{}
	for _, s := range c.series {
		for _, p := range s.pts {
			f.ymax = math.Max(f.ymax, p.y)
			x := f.tx(p.x)
			f.xmin, f.xmax = math.Min(f.xmin, x), math.Max(f.xmax, x)
			if c.bars && !seen[p.label] {
				seen[p.label] = true
				f.cats = append(f.cats, p.label)
			}
		}
	}
	if f.ymax <= 0 {
		f.ymax = 1
	}
	if !(f.xmax > f.xmin) {
		f.xmin, f.xmax = 0, 1
	}
	f.ymax = niceCeil(f.ymax)
	return f
}

func (f scales) tx(x float64) float64 {
	if f.c.logX && x > 0 {
		return math.Log2(x)
	}
	return x
}

// X and Y map data to image coordinates.
func (f scales) X(x float64) float64 {
	return padLeft + (f.tx(x)-f.xmin)/(f.xmax-f.xmin)*(chartW-padLeft-padRight)
}

func (f scales) Y(y float64) float64 {
	ph := chartH - padTop - padBottom
	return padTop + ph - y/f.ymax*ph
}

func parseHex(s string) color.RGBA {
	v, _ := strconv.ParseUint(s[1:], 16, 32)
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
}

// raster is an image being drawn on.
type raster struct{ img *image.RGBA }

func (r raster) rect(x0, y0, x1, y1 float64, c color.Color) {
	draw.Draw(r.img, image.Rect(int(math.Round(x0)), int(math.Round(y0)), int(math.Round(x1)), int(math.Round(y1))),
		image.NewUniform(c), image.Point{}, draw.Src)
}

// line draws a line w pixels wide.
func (r raster) line(x0, y0, x1, y1, w float64, c color.Color) {
	n := int(math.Max(math.Abs(x1-x0), math.Abs(y1-y0))) + 1
	for i := 0; i <= n; i++ {
		t := float64(i) / float64(n)
		x, y := x0+(x1-x0)*t, y0+(y1-y0)*t
		r.rect(x-w/2, y-w/2, x+w/2, y+w/2, c)
	}
}

// text draws s with its baseline at y; align is 0 (left), 0.5 or 1 (right).
func (r raster) text(x, y float64, s string, align float64, c color.Color) {
	d := font.Drawer{Dst: r.img, Src: image.NewUniform(c), Face: basicfont.Face7x13}
	w := float64(d.MeasureString(s).Round())
	d.Dot = fixed.P(int(math.Round(x-w*align)), int(math.Round(y)))
	d.DrawString(s)
}

// image draws the chart as a raster image, the PNG fallback that renders
// everywhere, also where SVG is not shown (Notebook 6 shows no SVG of an
// untrusted notebook).
func (c *chart) image() *image.RGBA {
	f := c.scales()
	r := raster{image.NewRGBA(image.Rect(0, 0, int(chartW), int(chartH)))}
	black, grid, ink := color.RGBA{0x33, 0x33, 0x33, 0xff}, color.RGBA{0xdd, 0xdd, 0xdd, 0xff}, color.RGBA{0, 0, 0, 0xff}
	r.rect(0, 0, chartW, chartH, color.White)
	pw, ph := chartW-padLeft-padRight, chartH-padTop-padBottom
	r.text(padLeft, 14, c.title, 0, ink)
	for i := 0; i <= 4; i++ {
		v := f.ymax * float64(i) / 4
		y := f.Y(v)
		r.line(padLeft, y, padLeft+pw, y, 1, grid)
		r.text(padLeft-4, y+4, strconv.FormatFloat(v, 'g', 4, 64), 1, ink)
	}
	r.line(padLeft, padTop, padLeft, padTop+ph, 1, black)
	r.line(padLeft, padTop+ph, padLeft+pw, padTop+ph, 1, black)
	r.text(4, padTop-4, c.yTitle, 0, ink)
	r.text(padLeft+pw/2, chartH-8, c.xTitle, 0.5, ink)
	if c.bars {
		slot := pw / float64(max(len(f.cats), 1))
		bw := slot * 0.8 / float64(max(len(c.series), 1))
		for ci, cat := range f.cats {
			x0 := padLeft + float64(ci)*slot + slot*0.1
			r.text(x0+slot*0.4, padTop+ph+14, cat, 0.5, ink)
			for si, s := range c.series {
				for _, p := range s.pts {
					if p.label == cat {
						r.rect(x0+float64(si)*bw, f.Y(p.y), x0+float64(si+1)*bw, padTop+ph, parseHex(palette[si%len(palette)]))
					}
				}
			}
		}
	} else {
		if c.logX {
			for e := math.Ceil(f.xmin); e <= f.xmax; e++ {
				if int(e)%2 != 0 && f.xmax-f.xmin > 12 {
					continue
				}
				r.text(f.X(math.Exp2(e)), padTop+ph+14, humanPow2(e), 0.5, ink)
			}
		}
		for si, s := range c.series {
			col := parseHex(palette[si%len(palette)])
			for i, p := range s.pts {
				if i > 0 {
					q := s.pts[i-1]
					r.line(f.X(q.x), f.Y(q.y), f.X(p.x), f.Y(p.y), 2, col)
				}
				r.rect(f.X(p.x)-2.5, f.Y(p.y)-2.5, f.X(p.x)+2.5, f.Y(p.y)+2.5, col)
			}
		}
	}
	for si, s := range c.series {
		y := padTop + 12 + float64(si)*16
		r.rect(padLeft+pw+12, y-9, padLeft+pw+22, y+1, parseHex(palette[si%len(palette)]))
		r.text(padLeft+pw+26, y, s.name, 0, ink)
	}
	return r.img
}

// encodePNG returns img as a base64 PNG, as nbformat stores images ("" if
// it cannot be encoded).
func encodePNG(img image.Image) string {
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// stackImages puts two images one under the other, as stackSVG does.
func stackImages(top, bottom image.Image) *image.RGBA {
	a, b := top.Bounds(), bottom.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, max(a.Dx(), b.Dx()), a.Dy()+b.Dy()))
	draw.Draw(out, out.Bounds(), image.White, image.Point{}, draw.Src)
	draw.Draw(out, image.Rect(0, 0, a.Dx(), a.Dy()), top, a.Min, draw.Src)
	draw.Draw(out, image.Rect(0, a.Dy(), b.Dx(), a.Dy()+b.Dy()), bottom, b.Min, draw.Src)
	return out
}
