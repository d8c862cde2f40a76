// Package chart describes a measurement chart once and renders that one
// description three ways: as a Vega-Lite specification (VegaLite), as a
// static SVG image (SVG) and as a raster image (Image), the forms a Jupyter
// front end shows. The three share one layout (Layout): the scales, their
// domains, the tick values and labels, and the place of every text, so
// that a log axis is a log axis in every renderer and a label that would
// collide with its neighbour is left out of all three.
//
// A chart is lines over a numeric x axis (linear or logarithmic), or
// grouped bars over categories. Its series are told apart by colour
// (the Okabe–Ito palette, safe for colour-blind readers), and lines also by
// dash and marker shape, so that a greyscale print keeps them apart.
package chart

import (
	"math"
	"strconv"
	"strings"
)

// Scale is an axis's scale type.
type Scale string

// The scale types.
const (
	Linear Scale = "linear"
	Log    Scale = "log"
)

// Format is how an axis labels its values.
type Format int

// The label formats.
const (
	// Number labels decimal values: 0.5, 20, 1k, 10k, 1M (SI, powers of
	// ten: a count of groups is never labelled in binary units).
	Number Format = iota
	// Bytes labels sizes in binary units: 512 B, 4 KiB, 1 MiB.
	Bytes
)

// Axis describes one axis.
type Axis struct {
	Title  string
	Scale  Scale
	Format Format
}

// Chart is one chart: the description every renderer draws.
type Chart struct {
	Title string
	X, Y  Axis // X is ignored by bars, whose x is the points' labels
	Bars  bool
	// Series are the lines or the bar groups, in legend order.
	Series []Series
}

// Series is a named line or set of bars.
type Series struct {
	Name   string
	Points []Point
}

// Point is one data point: X on a numeric axis, or Label for a bar.
type Point struct {
	X     float64
	Label string
	Y     float64
}

// Palette is the Okabe–Ito palette, ordered so that the first three
// colours also differ in lightness (they stay apart in greyscale).
var Palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000"}

// Dashes are the lines' dash patterns (SVG stroke-dasharray; "" is
// solid), one per series, cycling like Palette.
var Dashes = []string{"", "6 3", "2 2", "8 3 2 3"}

// Shapes are the lines' point markers (Vega-Lite shape names), one per
// series.
var Shapes = []string{"circle", "square", "triangle-up", "diamond"}

// Color returns the colour of series i.
func Color(i int) string { return Palette[i%len(Palette)] }

func dash(i int) string  { return Dashes[i%len(Dashes)] }
func shape(i int) string { return Shapes[i%len(Shapes)] }

// Label formats v as a tick label of format f.
func (f Format) Label(v float64) string {
	if f == Bytes {
		return bytesLabel(v)
	}
	return numberLabel(v)
}

func bytesLabel(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return trim(v) + " " + units[i]
}

func numberLabel(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e12:
		return trim(v/1e12) + "T"
	case a >= 1e9:
		return trim(v/1e9) + "G"
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e3:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

// trim writes v with at most three significant digits (more for whole
// numbers below 10000) and no trailing zeros.
func trim(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e4 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	s := strconv.FormatFloat(v, 'g', 3, 64)
	if strings.ContainsAny(s, "e") {
		f, _ := strconv.ParseFloat(s, 64)
		s = strconv.FormatFloat(f, 'f', -1, 64)
	}
	return s
}
