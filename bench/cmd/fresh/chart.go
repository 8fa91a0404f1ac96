package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// bar is one implementation's line in the chart.
type bar struct {
	name     string
	p50, p99 float64 // milliseconds
}

// writePNG draws p50 and p99 per implementation as horizontal bars on a
// logarithmic scale from 0.1 ms to 10 s, and writes the PNG to path.
func writePNG(path string, bars []bar) error {
	const (
		left, top, rowH, width = 190, 40, 34, 760
		lo, hi                 = -1.0, 4.0 // log10 of milliseconds
	)
	height := top + rowH*len(bars) + 40
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	text(img, 10, 20, "time from creation to handling, 100 objects created during a 10,000-object backlog (log scale)", color.Black)
	x := func(msec float64) int {
		v := math.Log10(math.Max(msec, 0.1))
		return left + int((v-lo)/(hi-lo)*float64(width-left-20))
	}
	for i, tick := range []float64{0.1, 1, 10, 100, 1000, 10000} {
		px := x(tick)
		fill(img, image.Rect(px, top-5, px+1, top+rowH*len(bars)), color.RGBA{220, 220, 220, 255})
		text(img, px-10, top+rowH*len(bars)+15, []string{"0.1ms", "1ms", "10ms", "100ms", "1s", "10s"}[i], color.Black)
	}
	p50c, p99c := color.RGBA{70, 130, 180, 255}, color.RGBA{230, 120, 40, 255}
	for i, b := range bars {
		y := top + i*rowH
		text(img, 10, y+18, b.name, color.Black)
		fill(img, image.Rect(left, y+4, x(b.p50), y+14), p50c)
		fill(img, image.Rect(left, y+16, x(b.p99), y+26), p99c)
		label := fmt.Sprintf("p50 %.1fms  p99 %.1fms", b.p50, b.p99)
		if lx := x(b.p99) + 5; lx+7*len(label) < width {
			text(img, lx, y+26, label, color.Black)
		} else {
			text(img, x(b.p50)-7*len(label)-5, y+14, label, color.White) // inside a long bar
		}
	}
	text(img, left, height-8, "p50", p50c)
	text(img, left+40, height-8, "p99", p99c)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
}

func text(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
