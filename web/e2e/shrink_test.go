package e2e

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"sort"
	"testing"
)

// shrinkPNG re-encodes a screenshot with a palette of its 256 most
// frequent colours (a UI is mostly flat colours), which makes the PNGs
// committed for the README several times smaller without dithering noise.
func shrinkPNG(b []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("decode screenshot: %w", err)
	}
	r := img.Bounds()
	counts := map[color.RGBA]int{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	cols := make([]color.RGBA, 0, len(counts))
	for c := range counts {
		cols = append(cols, c)
	}
	sort.Slice(cols, func(i, j int) bool {
		if counts[cols[i]] != counts[cols[j]] {
			return counts[cols[i]] > counts[cols[j]]
		}
		a, b := cols[i], cols[j]
		return uint32(a.R)<<24|uint32(a.G)<<16|uint32(a.B)<<8|uint32(a.A) < uint32(b.R)<<24|uint32(b.G)<<16|uint32(b.B)<<8|uint32(b.A)
	})
	if len(cols) > 256 {
		cols = cols[:256]
	}
	pal := make(color.Palette, len(cols))
	for i, c := range cols {
		pal[i] = c
	}
	out := image.NewPaletted(r, pal)
	index := map[color.RGBA]uint8{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			i, ok := index[c]
			if !ok {
				i = uint8(pal.Index(c))
				index[c] = i
			}
			out.SetColorIndex(x, y, i)
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, out); err != nil {
		return nil, fmt.Errorf("encode screenshot: %w", err)
	}
	return buf.Bytes(), nil
}

func TestShrinkPNG(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for y := 0; y < 30; y++ {
		for x := 0; x < 40; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 6), uint8(y * 8), 200, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	small, err := shrinkPNG(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got, err := png.Decode(bytes.NewReader(small))
	if err != nil {
		t.Fatal(err)
	}
	if got.Bounds() != img.Bounds() {
		t.Fatalf("bounds %v, want %v", got.Bounds(), img.Bounds())
	}
	// 1200 distinct colours: the 256 kept are exact, the rest map to the
	// nearest kept one.
	if c := color.RGBAModel.Convert(got.At(0, 0)).(color.RGBA); c.B != 200 {
		t.Errorf("pixel (0,0) = %v", c)
	}
	if _, err := shrinkPNG([]byte("not a png")); err == nil {
		t.Error("want an error for a non-PNG")
	}
}
