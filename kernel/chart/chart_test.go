package chart

import (
	"fmt"
	"strings"
	"testing"
)

func TestLabels(t *testing.T) {
	tests := []struct {
		f    Format
		v    float64
		want string
	}{
		{Bytes, 512, "512 B"},
		{Bytes, 4096, "4 KiB"},
		{Bytes, 1 << 20, "1 MiB"},
		{Bytes, 1.5 * (1 << 20), "1.5 MiB"},
		{Number, 0.5, "0.5"},
		{Number, 0.25, "0.25"},
		{Number, 64, "64"},
		{Number, 1000, "1k"},
		{Number, 1024, "1.02k"},
		{Number, 100000, "100k"},
		{Number, 1e6, "1M"},
		{Number, 2.5e9, "2.5G"},
		{Number, 0.30000000000000004, "0.3"},
	}
	for _, tt := range tests {
		if got := tt.f.Label(tt.v); got != tt.want {
			t.Errorf("Label(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func line(xs []float64, y func(float64) float64) []Point {
	var ps []Point
	for _, x := range xs {
		ps = append(ps, Point{X: x, Y: y(x)})
	}
	return ps
}

func pow2(lo, hi float64) []float64 {
	var xs []float64
	for x := lo; x <= hi; x *= 2 {
		xs = append(xs, x)
	}
	return xs
}

// TestLayoutNoOverlap lays out charts that tempt collisions — wide byte
// ranges, long categories, many series, one point, negative values,
// narrow log ranges — and wants every text inside the image, no two
// overlapping, at least two labelled ticks on every numeric axis, and
// every labelled tick inside its axis's domain.
func TestLayoutNoOverlap(t *testing.T) {
	var long []Point
	for i := range 9 {
		long = append(long, Point{Label: fmt.Sprintf("variant %d · with huge pages and prefetch", i), Y: float64(i)})
	}
	many := []Series{}
	for i := range 9 {
		many = append(many, Series{Name: fmt.Sprintf("a series with a rather long name %d", i), Points: line(pow2(1, 64), func(x float64) float64 { return x * float64(i+1) })})
	}
	charts := map[string]*Chart{
		"latency 1K-1G": {Title: "Memory latency", X: Axis{Scale: Log, Format: Bytes}, Y: Axis{Scale: Log},
			Series: []Series{{Name: "latency", Points: line(pow2(1024, 1<<30), func(x float64) float64 { return 1 + x/1e7 })}}},
		"narrow log y": {X: Axis{Scale: Log}, Y: Axis{Scale: Log},
			Series: []Series{{Name: "s", Points: line(pow2(1, 8), func(x float64) float64 { return 3 + x/10 })}}},
		"one point":    {X: Axis{Scale: Log, Format: Bytes}, Y: Axis{Scale: Log}, Series: []Series{{Name: "s", Points: []Point{{X: 4096, Y: 2}}}}},
		"negative":     {X: Axis{Scale: Linear}, Y: Axis{Scale: Linear}, Series: []Series{{Name: "s", Points: line([]float64{-3, 0, 7}, func(x float64) float64 { return x * 1e6 })}}},
		"many":         {Title: strings.Repeat("a very long title ", 8), X: Axis{Scale: Log}, Y: Axis{Scale: Linear}, Series: many},
		"bars":         {Bars: true, Y: Axis{Scale: Linear}, Series: []Series{{Name: "s", Points: long}}},
		"counts":       {X: Axis{Scale: Log}, Y: Axis{Scale: Linear}, Series: []Series{{Name: "s", Points: line([]float64{3, 17, 900, 123456, 9e7}, func(x float64) float64 { return 1 })}}},
		"huge, narrow": {X: Axis{Scale: Linear}, Y: Axis{Scale: Linear}, Series: []Series{{Name: "s", Points: line([]float64{1e17, 1e17 + 64}, func(x float64) float64 { return x })}}},
	}
	for name, c := range charts {
		t.Run(name, func(t *testing.T) {
			l := c.Layout()
			all := Box{0, 0, l.W, l.H}
			for i, a := range l.Texts {
				if a.S == "" {
					continue
				}
				if !a.Box().Within(all) {
					t.Errorf("%s %q %+v leaves the %gx%g image", a.Role, a.S, a.Box(), l.W, l.H)
				}
				for _, b := range l.Texts[i+1:] {
					if b.S != "" && a.Box().Overlaps(b.Box()) {
						t.Errorf("%s %q overlaps %s %q", a.Role, a.S, b.Role, b.S)
					}
				}
			}
			axes := map[string]AxisLayout{"y": l.Y}
			if !c.Bars {
				axes["x"] = l.X
			}
			for n, a := range axes {
				if len(a.Ticks) < 2 && name != "one point" && !(name == "huge, narrow" && n == "x") {
					t.Errorf("%s axis has %d ticks: %+v", n, len(a.Ticks), a)
				}
				tol := (a.Domain[1] - a.Domain[0]) * 1e-9
				for _, tk := range a.Ticks {
					if tk.Value < a.Domain[0]-tol || tk.Value > a.Domain[1]+tol {
						t.Errorf("%s tick %v outside the domain %v", n, tk.Value, a.Domain)
					}
				}
			}
			if !strings.Contains(c.SVG(), "</svg>") || c.Image().Bounds().Dx() != int(Width) {
				t.Errorf("renderers failed")
			}
		})
	}
}
