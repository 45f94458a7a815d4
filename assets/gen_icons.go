//go:build ignore

// gen_icons draws the state icons and the app icon and writes them as PNGs
// into assets/icons. Run it from the module root after changing the design:
//
//	go run assets/gen_icons.go
//
// The PNGs are committed and embedded; nothing runs this at build time.
package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
)

// A glyph is drawn white on the disc; shapes are in unit coordinates
// (-1..1 across the disc).
type glyph func(x, y float64) bool

func bar(x0, y0, x1, y1 float64) glyph {
	return func(x, y float64) bool { return x >= x0 && x <= x1 && y >= y0 && y <= y1 }
}

func dot(cx, cy, r float64) glyph {
	return func(x, y float64) bool { return (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r }
}

func ring(r0, r1 float64) glyph {
	return func(x, y float64) bool { d := math.Hypot(x, y); return d >= r0 && d <= r1 }
}

func any(gs ...glyph) glyph {
	return func(x, y float64) bool {
		for _, g := range gs {
			if g(x, y) {
				return true
			}
		}
		return false
	}
}

func triangle(x, y float64) bool { // a "play" triangle pointing right
	return x >= -0.28 && x <= 0.42 && math.Abs(y) <= (0.42-x)*0.62
}

type design struct {
	name  string
	fill  color.NRGBA
	glyph glyph
}

var designs = []design{
	{"attention", color.NRGBA{0xd3, 0x2f, 0x2f, 0xff}, any(bar(-0.1, -0.55, 0.1, 0.18), dot(0, 0.4, 0.12))},
	{"waiting", color.NRGBA{0xf0, 0x8c, 0x00, 0xff}, any(dot(-0.36, 0, 0.12), dot(0, 0, 0.12), dot(0.36, 0, 0.12))},
	{"recovering", color.NRGBA{0x7b, 0x1f, 0xa2, 0xff}, ring(0.3, 0.46)},
	{"working", color.NRGBA{0x2e, 0x7d, 0x32, 0xff}, triangle},
	{"idle", color.NRGBA{0x75, 0x75, 0x75, 0xff}, dot(0, 0, 0.2)},
	{"app", color.NRGBA{0x15, 0x65, 0xc0, 0xff}, any(triangle, ring(0.62, 0.7))},
}

// draw renders one design at size px with 4x4 supersampling: a dark outer
// edge and a white rim keep the disc readable on light and dark bars.
func draw(d design, size int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	const ss = 4
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			var r, g, b, a float64
			for sy := 0; sy < ss; sy++ {
				for sx := 0; sx < ss; sx++ {
					x := (float64(px)+(float64(sx)+0.5)/ss)/float64(size)*2 - 1
					y := (float64(py)+(float64(sy)+0.5)/ss)/float64(size)*2 - 1
					dist := math.Hypot(x, y)
					var c color.NRGBA
					switch {
					case dist > 0.97:
						continue
					case dist > 0.89:
						c = color.NRGBA{0x20, 0x20, 0x20, 0xff}
					case dist > 0.80:
						c = color.NRGBA{0xff, 0xff, 0xff, 0xff}
					case d.glyph(x/0.8, y/0.8):
						c = color.NRGBA{0xff, 0xff, 0xff, 0xff}
					default:
						c = d.fill
					}
					r += float64(c.R)
					g += float64(c.G)
					b += float64(c.B)
					a += 255
				}
			}
			n := float64(ss * ss)
			if a == 0 {
				continue
			}
			cov := a / n / 255
			img.SetNRGBA(px, py, color.NRGBA{
				uint8(r / (a / 255)), uint8(g / (a / 255)), uint8(b / (a / 255)), uint8(cov * 255),
			})
		}
	}
	return img
}

func main() {
	out := filepath.Join("assets", "icons")
	if err := os.MkdirAll(out, 0o755); err != nil {
		panic(err)
	}
	for _, d := range designs {
		sizes := []int{64}
		if d.name == "app" {
			sizes = []int{16, 32, 48, 64, 128, 256}
		}
		for _, s := range sizes {
			name := fmt.Sprintf("%s-%d.png", d.name, s)
			f, err := os.Create(filepath.Join(out, name))
			if err != nil {
				panic(err)
			}
			if err := png.Encode(f, draw(d, s)); err != nil {
				panic(err)
			}
			f.Close()
		}
	}
}
