package jupyter

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/draw"
	"image/png"
)

// MIMEPNG is the MIME type of the raster fallback.
const MIMEPNG = "image/png"

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
