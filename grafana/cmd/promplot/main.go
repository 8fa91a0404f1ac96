package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/kooperkit/kooper/grafana/internal/catalog"
)

// maxPoints is Prometheus' limit of samples per series in a range query,
// checked here so that a too-small -step fails before any request.
const maxPoints = 11000

// errNoSeries is wrapped by the error for a panel whose query matched nothing.
var errNoSeries = errors.New("query returned no series")

// panelSpec is a panel to query: a title and the PromQL expression it charts.
type panelSpec struct {
	Title string
	Expr  string
}

// panelFlags collects the repeatable -panel 'Title=PromQL' flag.
type panelFlags []panelSpec

// String implements flag.Value.
func (p *panelFlags) String() string {
	parts := make([]string, len(*p))
	for i, s := range *p {
		parts[i] = s.Title + "=" + s.Expr
	}
	return strings.Join(parts, "; ")
}

// Set implements flag.Value. The title ends at the first "=": a title has no
// use for one, while the expression often holds label matchers.
func (p *panelFlags) Set(v string) error {
	title, expr, ok := strings.Cut(v, "=")
	title, expr = strings.TrimSpace(title), strings.TrimSpace(expr)
	if !ok || title == "" || expr == "" {
		return fmt.Errorf("panel %q is not 'Title=PromQL expression'", v)
	}
	*p = append(*p, panelSpec{Title: title, Expr: expr})
	return nil
}

// defaultPanels are the Kooper controller panels, one line per controller,
// with rates over window (a Prometheus duration such as 1m). Metric names
// come from the catalog, like the dashboards'.
func defaultPanels(window string) []panelSpec {
	quantile := func(q string) string {
		return "histogram_quantile(" + q + ", sum by (controller, le) " +
			"(rate(" + catalog.HandleDuration + "_bucket[" + window + "])))"
	}
	return []panelSpec{
		{Title: "Handling latency p99 by controller (s)", Expr: quantile("0.99")},
		{Title: "Handling latency p50 by controller (s)", Expr: quantile("0.5")},
		{Title: "Queue length by controller", Expr: "sum by (controller) (" + catalog.QueueLength + ")"},
		{
			Title: "Handlings per second by controller",
			Expr:  "sum by (controller) (rate(" + catalog.HandleDuration + "_count[" + window + "]))",
		},
	}
}

// config is what the command line asks for, validated and with defaults set.
type config struct {
	Prometheus  string        // Prometheus base URL. Default http://127.0.0.1:9090.
	Start, End  time.Time     // End defaults to now; Start is End minus -range (default 15m).
	Step        time.Duration // Step between samples. Default range/300 rounded up to seconds, at least 1s.
	Timeout     time.Duration // Timeout of each query. Default 30s.
	Out         string        // Out is the image's path: an SVG if it ends in .svg, else a PNG. Required.
	Title       string        // Title of the image; none by default.
	Width       int           // Width of the image. Default 1200.
	PanelHeight int           // PanelHeight of each panel. Default 320.
	Panels      []panelSpec   // Panels from -panel, else defaultPanels over -rate-window (default 1m).
}

// parseFlags turns args into a config. now is the default -end. It returns
// flag.ErrHelp, after printing the usage to stdout, for -h.
func parseFlags(args []string, stdout io.Writer, now time.Time) (config, error) {
	var (
		cfg        config
		end        string
		rng        time.Duration
		rateWindow time.Duration
		panels     panelFlags
	)
	fs := flag.NewFlagSet("promplot", flag.ContinueOnError)
	fs.StringVar(&cfg.Prometheus, "prometheus", "http://127.0.0.1:9090", "Prometheus base `URL`")
	fs.DurationVar(&rng, "range", 15*time.Minute, "time range to plot, ending at -end")
	fs.StringVar(&end, "end", "", "end of the range, RFC3339 (default now)")
	fs.DurationVar(&cfg.Step, "step", 0, "query resolution (default range/300 rounded up to whole seconds, at least 1s)")
	fs.DurationVar(&rateWindow, "rate-window", time.Minute, "window of rate() in the default panels")
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Second, "timeout of each query")
	fs.StringVar(&cfg.Out, "out", "", "image file to write (required): a PNG, or an SVG if it ends in .svg")
	fs.IntVar(&cfg.Width, "width", 1200, "image width in pixels")
	fs.IntVar(&cfg.PanelHeight, "panel-height", 320, "height of each panel in pixels")
	fs.StringVar(&cfg.Title, "title", "", "image title (default none)")
	fs.Var(&panels, "panel", "`Title=PromQL` panel, repeatable; replaces the default panels")
	fs.Usage = func() {
		out := fs.Output()
		_, _ = fmt.Fprintln(out, "Usage: promplot -out FILE.png [flags]")
		_, _ = fmt.Fprintln(out, "Plots Kooper controller metrics from Prometheus as a PNG (or an SVG: -out FILE.svg).")
		fs.PrintDefaults()
	}
	// Parse errors are returned, not printed, so they are reported once.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
		}
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q: every option is a flag", fs.Args())
	}

	if cfg.Out == "" {
		return config{}, errors.New("-out is required")
	}
	u, err := url.Parse(cfg.Prometheus)
	if err != nil {
		return config{}, fmt.Errorf("invalid -prometheus: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return config{}, fmt.Errorf("-prometheus %q is not an http(s) URL", cfg.Prometheus)
	}
	if rng <= 0 {
		return config{}, fmt.Errorf("-range %s must be positive", rng)
	}
	cfg.End = now.UTC().Truncate(time.Second)
	if end != "" {
		if cfg.End, err = time.Parse(time.RFC3339, end); err != nil {
			return config{}, fmt.Errorf("invalid -end: %w", err)
		}
		cfg.End = cfg.End.UTC()
	}
	cfg.Start = cfg.End.Add(-rng)
	switch {
	case cfg.Step < 0:
		return config{}, fmt.Errorf("-step %s must not be negative", cfg.Step)
	case cfg.Step == 0:
		cfg.Step = defaultStep(rng)
	case rng/cfg.Step > maxPoints:
		return config{}, fmt.Errorf("-step %s gives more than %d points over %s: Prometheus would refuse it", cfg.Step, maxPoints, rng)
	}
	if cfg.Timeout <= 0 {
		return config{}, fmt.Errorf("-timeout %s must be positive", cfg.Timeout)
	}
	if cfg.Width < minWidth || cfg.Width > maxWidth {
		return config{}, fmt.Errorf("-width %d is outside [%d, %d]", cfg.Width, minWidth, maxWidth)
	}
	if cfg.PanelHeight < minPanelHeight || cfg.PanelHeight > maxPanelHeight {
		return config{}, fmt.Errorf("-panel-height %d is outside [%d, %d]", cfg.PanelHeight, minPanelHeight, maxPanelHeight)
	}
	cfg.Panels = panels
	if len(cfg.Panels) == 0 {
		window, err := promDuration(rateWindow)
		if err != nil {
			return config{}, fmt.Errorf("invalid -rate-window: %w", err)
		}
		cfg.Panels = defaultPanels(window)
	}
	return cfg, nil
}

// defaultStep is rng/300 rounded up to whole seconds, at least 1s: about 300
// points per line, enough for a chart a thousand pixels wide.
func defaultStep(rng time.Duration) time.Duration {
	const points = 300
	secs := (rng + points*time.Second - 1) / (points * time.Second)
	return max(secs, 1) * time.Second
}

// promDuration formats d the way PromQL writes durations: 1m, 30s, 1h30m,
// 1s500ms. d must be a positive whole number of milliseconds.
func promDuration(d time.Duration) (string, error) {
	if d <= 0 || d%time.Millisecond != 0 {
		return "", fmt.Errorf("%s is not a positive whole number of milliseconds", d)
	}
	var b strings.Builder
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.unit
		}
	}
	return b.String(), nil
}

// run is the whole command: it parses args, queries every panel, renders them
// and writes the image, then reports what it wrote on stdout.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseFlags(args, stdout, time.Now())
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}

	prom := client{BaseURL: cfg.Prometheus, HTTP: &http.Client{}, Timeout: cfg.Timeout}
	c := chart{
		Title:       cfg.Title,
		Start:       cfg.Start,
		End:         cfg.End,
		Step:        cfg.Step,
		Width:       cfg.Width,
		PanelHeight: cfg.PanelHeight,
	}
	nSeries := 0
	for _, p := range cfg.Panels {
		res, err := prom.queryRange(ctx, rangeQuery{Expr: p.Expr, Start: cfg.Start, End: cfg.End, Step: cfg.Step})
		if err != nil {
			return fmt.Errorf("panel %q: %w", p.Title, err)
		}
		for _, w := range res.Warnings {
			_, _ = fmt.Fprintf(stdout, "warning: panel %q: %s\n", p.Title, w)
		}
		for _, info := range res.Infos {
			_, _ = fmt.Fprintf(stdout, "info: panel %q: %s\n", p.Title, info)
		}
		if len(res.Series) == 0 {
			return fmt.Errorf("panel %q: %w for %s from %s to %s (is Prometheus scraping the operators?)",
				p.Title, errNoSeries, p.Expr, cfg.Start.Format(time.RFC3339), cfg.End.Format(time.RFC3339))
		}
		nSeries += len(res.Series)
		c.Panels = append(c.Panels, Panel{Title: p.Title, Expr: p.Expr, Series: res.Series})
	}

	// Encode in memory first so a failure leaves no truncated file behind.
	format := "png"
	if strings.EqualFold(filepath.Ext(cfg.Out), ".svg") {
		format = "svg"
	}
	img, err := render(c, format)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfg.Out, img, 0o644); err != nil {
		return fmt.Errorf("could not write the %s image: %w", format, err)
	}
	size := imageSize(c)
	if _, err := fmt.Fprintf(stdout, "wrote %s (%dx%d): %d panels, %d series, %s to %s every %s\n",
		cfg.Out, size.X, size.Y, len(c.Panels), nSeries,
		cfg.Start.Format(time.RFC3339), cfg.End.Format(time.RFC3339), cfg.Step); err != nil {
		return fmt.Errorf("could not report the image written: %w", err)
	}
	return nil
}

// main runs the command until it is done or interrupted, and exits 1 with the
// error on stderr if it fails.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "promplot:", err)
		os.Exit(1)
	}
}
