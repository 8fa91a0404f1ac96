package report

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
)

// Sharding chart layout, in pixels (width chartWidth).
const (
	shardHeight    = 560
	shardLeft      = 70
	shardRight     = 150 // the legend, right of the plot
	shardTop       = 96
	shardBottom    = 64
	shardLabelRows = 2
)

// Colors of the replicas, in start order, and of the unbalanced bands.
var (
	replicaColors = []color.RGBA{
		{0x1f, 0x6f, 0xd1, 0xff}, // blue
		{0xe8, 0x6a, 0x10, 0xff}, // orange
		{0x2e, 0x9e, 0x3f, 0xff}, // green
		{0x7b, 0x4f, 0xc4, 0xff}, // purple
		{0xc2, 0x4c, 0x9a, 0xff}, // magenta
	}
	unbalancedColor = color.RGBA{0xfd, 0xe6, 0xc8, 0xff}
	markerColor     = color.RGBA{0x8c, 0x95, 0x9f, 0xff}
)

// WriteShardingPNG draws the first completed membership run of scenario 6
// (ShardingChart) to path.
func WriteShardingPNG(path string, res runner.Results) error {
	img, err := ShardingChart(res)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("could not create %s: %w", path, err)
	}
	if err := png.Encode(f, img); err != nil {
		_ = f.Close()
		return fmt.Errorf("could not write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("could not write %s: %w", path, err)
	}
	return nil
}

// ShardingChart draws the handlings per second of each replica of a
// membership run over time (a log scale: slot moves handle hundreds of
// pods at once, the writer a few per second), with each change marked and
// the time until the slots were balanced again shaded.
func ShardingChart(res runner.Results) (*image.RGBA, error) {
	var m *runner.ShardMoves
	round := 0
	for _, r := range res.Runs {
		if r.Moves != nil && len(r.Moves.Rates.Counts) > 0 {
			m, round = r.Moves, r.Round
			if r.Err == "" {
				break
			}
		}
	}
	if m == nil {
		return nil, errors.New("no membership run (scenario 6) to chart")
	}
	img := image.NewRGBA(image.Rect(0, 0, chartWidth, shardHeight))
	fill(img, img.Bounds(), white)
	title := "Kooper sharding: handlings per second of each replica as replicas come and go (log scale)"
	drawText(img, (chartWidth-textWidth(title))/2, 20, title, textColor)
	st := res.Sharding
	if st == nil {
		st = &runner.ShardingSettings{}
	}
	l := res.Lease
	sub := fmt.Sprintf("%d pods, gate on (%s), %d slots; a writer updates a random pod every %s; each handling sleeps %s; Lease %s/%s/%s; round %d; GOMAXPROCS %d",
		m.Pods, m.Mode, st.Slots, st.WriteEvery, st.Handle, l.LeaseDuration, l.RenewDeadline, l.RetryPeriod, round, res.GOMAXPROCS)
	drawText(img, (chartWidth-textWidth(sub))/2, 40, sub, labelColor)

	left, right := shardLeft, chartWidth-shardRight
	top, bottom := shardTop, shardHeight-shardBottom
	buckets := 0
	peak := 1
	for _, counts := range m.Rates.Counts {
		buckets = max(buckets, len(counts))
		for _, n := range counts {
			peak = max(peak, n)
		}
	}
	width := m.Rates.Width.Seconds()
	span := float64(max(buckets, 1)) * width
	xOf := func(s float64) int { return left + int(math.Round(s/span*float64(right-left))) }
	yMax := math.Pow(10, math.Ceil(math.Log10(float64(peak+1))))
	yOf := func(v float64) int {
		return bottom - int(math.Round(math.Log10(1+v)/math.Log10(1+yMax)*float64(bottom-top)))
	}

	// The time from each change until its slots were balanced again.
	for i, c := range m.Changes {
		if c.Balanced == 0 {
			continue
		}
		end := c.At + c.Balanced
		if c.Balanced < 0 {
			end = m.Changes[min(i+1, len(m.Changes)-1)].At
		}
		fill(img, image.Rect(xOf(c.At.Seconds()), top, max(xOf(end.Seconds()), xOf(c.At.Seconds())+2), bottom), unbalancedColor)
	}
	// Grid and axes.
	for v := 1.0; v <= yMax; v *= 10 {
		y := yOf(v)
		fill(img, image.Rect(left, y, right, y+1), gridColor)
		label := fmt.Sprintf("%.0f", v)
		drawText(img, left-8-textWidth(label), y+4, label, labelColor)
	}
	drawText(img, left-8-textWidth("0"), bottom+4, "0", labelColor)
	step := niceStep(span)
	for s := 0.0; s <= span+1e-9; s += step {
		x := xOf(s)
		fill(img, image.Rect(x, bottom, x+1, bottom+4), labelColor)
		label := fmt.Sprintf("%.0f s", s)
		drawText(img, x-textWidth(label)/2, bottom+17, label, labelColor)
	}
	fill(img, image.Rect(left, top, left+1, bottom+1), labelColor)
	fill(img, image.Rect(left, bottom, right, bottom+1), labelColor)

	// The changes.
	for i, c := range m.Changes {
		x := xOf(c.At.Seconds())
		for y := top - 4; y < bottom; y += 6 {
			fill(img, image.Rect(x, y, x+1, min(y+3, bottom)), markerColor)
		}
		label := shortChange(c.What)
		row := i % shardLabelRows
		drawText(img, min(x+3, right-textWidth(label)), top-22+row*13, label, textColor)
	}

	// One line per replica, from its first bucket with a handling to its
	// last (before it joined and after it left, it handled nothing).
	for i, counts := range m.Rates.Counts {
		clr := replicaColors[i%len(replicaColors)]
		first := slices.IndexFunc(counts, func(n int) bool { return n > 0 })
		if first < 0 {
			continue
		}
		last := len(counts) - 1
		for counts[last] == 0 {
			last--
		}
		var px, py int
		for b := first; b <= last; b++ {
			x, y := xOf((float64(b)+0.5)*width), yOf(float64(counts[b]))
			if b > first {
				line(img, px, py, x, y, clr)
				line(img, px, py+1, x, y+1, clr)
			}
			px, py = x, y
		}
	}

	// The legend.
	lx, ly := right+16, top+8
	drawText(img, lx, ly, "replica", textColor)
	for i, name := range m.Rates.Replicas {
		y := ly + 18 + i*17
		fill(img, image.Rect(lx, y-6, lx+18, y-3), replicaColors[i%len(replicaColors)])
		drawText(img, lx+24, y, fmt.Sprintf("%s %d", name, m.Handlings[name]), labelColor)
	}
	y := ly + 18 + len(m.Rates.Replicas)*17 + 10
	fill(img, image.Rect(lx, y-10, lx+18, y), unbalancedColor)
	drawText(img, lx+24, y, "unbalanced", labelColor)

	foot := fmt.Sprintf("Handlings per second (1 s buckets, by their end); dashed: membership changes; shaded: until the slots were balanced again. %d overlaps, %d final versions lost.",
		m.Overlaps, m.Lost)
	drawText(img, (chartWidth-textWidth(foot))/2, shardHeight-14, foot, labelColor)
	return img, nil
}

// shortChange labels a change on the chart: "start d: 4 replicas" is
// "+d (4)".
func shortChange(what string) string {
	head, count, _ := strings.Cut(what, ": ")
	count = strings.TrimSuffix(count, " replicas")
	switch {
	case strings.HasPrefix(head, "start ") && strings.Contains(head, ","):
		return strings.TrimPrefix(head, "start ")
	case strings.HasPrefix(head, "start "):
		return "+" + strings.TrimPrefix(head, "start ") + " (" + count + ")"
	case strings.HasPrefix(head, "stop "):
		return "-" + strings.Fields(head)[1] + " (" + count + ")"
	case strings.HasPrefix(head, "SIGKILL "):
		return "kill " + strings.TrimPrefix(head, "SIGKILL ") + " (" + count + ")"
	}
	return head
}

// niceStep returns a tick step of 1, 2 or 5 times a power of ten giving
// at most 12 ticks over span.
func niceStep(span float64) float64 {
	for p := 1.0; ; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if span/(m*p) <= 12 {
				return m * p
			}
		}
	}
}

// line draws a one-pixel line from (x0, y0) to (x1, y1) (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	e := dx + dy
	for {
		img.SetRGBA(x0, y0, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
