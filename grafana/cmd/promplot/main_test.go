package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"image"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakePrometheus mimics /api/v1/query_range: it answers every query with one
// series per label set that seriesFor returns, sampled every step from start
// to end, with warnings if any, and records the forms it was sent.
type fakePrometheus struct {
	t         *testing.T
	seriesFor func(query string) []map[string]string
	warnings  []string

	mu    sync.Mutex
	forms []map[string]string
}

// ServeHTTP implements http.Handler.
func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query_range" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	form := map[string]string{}
	for _, k := range []string{"query", "start", "end", "step"} {
		form[k] = r.PostForm.Get(k)
	}
	f.mu.Lock()
	f.forms = append(f.forms, form)
	f.mu.Unlock()

	start, err1 := strconv.ParseFloat(form["start"], 64)
	end, err2 := strconv.ParseFloat(form["end"], 64)
	step, err3 := strconv.ParseFloat(form["step"], 64)
	if err := errors.Join(err1, err2, err3); err != nil || step <= 0 {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"invalid start, end or step"}`))
		return
	}
	type result struct {
		Metric map[string]string `json:"metric"`
		Values [][2]any          `json:"values"`
	}
	results := []result{}
	for i, labels := range f.seriesFor(form["query"]) {
		res := result{Metric: labels}
		for n, ts := 0, start; ts <= end; n, ts = n+1, ts+step {
			v := strconv.FormatFloat(float64(i+1)*(2+math.Sin(float64(n)/20)), 'f', -1, 64)
			if n == 10 {
				v = "NaN" // as histogram_quantile gives for a window without handlings
			}
			res.Values = append(res.Values, [2]any{ts, v})
		}
		results = append(results, res)
	}
	body, err := json.Marshal(map[string]any{
		"status":   "success",
		"data":     map[string]any{"resultType": "matrix", "result": results},
		"warnings": f.warnings,
	})
	if err != nil {
		f.t.Errorf("could not encode the fake response: %v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// received returns the forms of the queries received so far.
func (f *fakePrometheus) received() []map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.forms)
}

// twoControllers is what every default query returns from a cluster running
// two operators.
func twoControllers(string) []map[string]string {
	return []map[string]string{{"controller": "pod-terminator"}, {"controller": "multi-resource"}}
}

func TestRunWritesAPNGOfTheDefaultPanels(t *testing.T) {
	fake := &fakePrometheus{t: t, seriesFor: twoControllers, warnings: []string{"PromQL warning: some samples were dropped"}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "kooper-under-load.png")

	var stdout bytes.Buffer
	err := run(context.Background(), []string{
		"-prometheus", srv.URL, "-end", "2025-11-22T15:00:00Z", "-range", "10m",
		"-out", out, "-width", "800", "-panel-height", "200", "-title", "Kooper under load",
	}, &stdout)
	if err != nil {
		t.Fatalf("got error %v, want none", err)
	}

	// One query per default panel, over the range, every range/300 = 2s.
	var gotQueries []string
	for _, f := range fake.received() {
		gotQueries = append(gotQueries, f["query"])
		if f["start"] != "1763823000.000" || f["end"] != "1763823600.000" || f["step"] != "2" {
			t.Errorf("got start=%s end=%s step=%s, want 1763823000.000, 1763823600.000 and 2", f["start"], f["end"], f["step"])
		}
	}
	wantQueries := []string{
		"histogram_quantile(0.99, sum by (controller, le) (rate(kooper_controller_handle_duration_seconds_bucket[1m])))",
		"histogram_quantile(0.5, sum by (controller, le) (rate(kooper_controller_handle_duration_seconds_bucket[1m])))",
		"sum by (controller) (kooper_controller_queue_length)",
		"sum by (controller) (rate(kooper_controller_handle_duration_seconds_count[1m]))",
	}
	if !slices.Equal(gotQueries, wantQueries) {
		t.Errorf("got queries\n%s\nwant\n%s", strings.Join(gotQueries, "\n"), strings.Join(wantQueries, "\n"))
	}

	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("could not decode %s: %v", out, err)
	}
	if got, want := img.Bounds().Size(), image.Pt(800, titleHeight+4*200); got != want {
		t.Errorf("got size %v, want %v", got, want)
	}
	// Each panel, left of the legends, has both series' lines across it.
	for i := range 4 {
		band := image.Rect(0, titleHeight+i*200, 800-legendWidth(800), titleHeight+(i+1)*200)
		for j, c := range palette[:2] {
			if got := countNear(img, band, c); got < band.Dx() {
				t.Errorf("panel %d: got %d pixels of series %d's color in %v, want at least %d", i, got, j, band, band.Dx())
			}
		}
	}
	for _, want := range []string{
		`warning: panel "Queue length by controller": PromQL warning: some samples were dropped`,
		"wrote " + out + " (800x830): 4 panels, 8 series, 2025-11-22T14:50:00Z to 2025-11-22T15:00:00Z every 2s",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("got stdout %q, want it to contain %q", stdout.String(), want)
		}
	}
}

func TestRunFailsNamingAPanelWithoutSeries(t *testing.T) {
	fake := &fakePrometheus{t: t, seriesFor: func(q string) []map[string]string {
		if strings.Contains(q, "queue_length") {
			return nil // the operators expose no queue: not scraped
		}
		return twoControllers(q)
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "out.png")

	err := run(context.Background(), []string{"-prometheus", srv.URL, "-out", out}, &bytes.Buffer{})
	if !errors.Is(err, errNoSeries) {
		t.Fatalf("got error %v, want one wrapping errNoSeries", err)
	}
	for _, want := range []string{
		`panel "Queue length by controller"`,
		"sum by (controller) (kooper_controller_queue_length)",
		"is Prometheus scraping the operators?",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got error %q, want it to contain %q", err, want)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %s written or %v, want no file", out, err)
	}
}

func TestRunReportsPrometheusErrorsWithThePanel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"execution","error":"expanding series: too many samples"}`))
	}))
	defer srv.Close()

	err := run(context.Background(), []string{
		"-prometheus", srv.URL, "-out", filepath.Join(t.TempDir(), "out.png"), "-panel", "Up=up",
	}, &bytes.Buffer{})
	var apiErr *apiError
	if !errors.As(err, &apiErr) {
		t.Fatalf("got error %v, want an *apiError", err)
	}
	if apiErr.Type != "execution" || apiErr.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("got errorType %q and status %d, want execution and 422", apiErr.Type, apiErr.StatusCode)
	}
	if want := `panel "Up": query_range at ` + srv.URL; !strings.Contains(err.Error(), want) {
		t.Errorf("got error %q, want it to contain %q", err, want)
	}
}

func TestRunPrintsUsageForHelp(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &stdout); err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	for _, want := range []string{"Usage: promplot", "-prometheus", "-rate-window", "-panel Title=PromQL"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("got usage %q, want it to contain %q", stdout.String(), want)
		}
	}
}

func TestParseFlagsSetsDefaults(t *testing.T) {
	now := time.Date(2025, 11, 22, 15, 0, 0, 700_000_000, time.UTC)
	cfg, err := parseFlags([]string{"-out", "x.png"}, &bytes.Buffer{}, now)
	if err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	want := config{
		Prometheus:  "http://127.0.0.1:9090",
		Start:       time.Date(2025, 11, 22, 14, 45, 0, 0, time.UTC),
		End:         time.Date(2025, 11, 22, 15, 0, 0, 0, time.UTC),
		Step:        3 * time.Second,
		Timeout:     30 * time.Second,
		Out:         "x.png",
		Width:       1200,
		PanelHeight: 320,
		Panels:      defaultPanels("1m"),
	}
	if !cfg.Start.Equal(want.Start) || !cfg.End.Equal(want.End) {
		t.Errorf("got range %s to %s, want %s to %s", cfg.Start, cfg.End, want.Start, want.End)
	}
	cfg.Start, cfg.End = want.Start, want.End
	if !equalConfig(cfg, want) {
		t.Errorf("got %+v, want %+v", cfg, want)
	}
}

func TestParseFlagsReadsEveryFlag(t *testing.T) {
	cfg, err := parseFlags([]string{
		"-prometheus", "https://prom.example/sub", "-range", "1h", "-end", "2025-11-22T16:00:00+01:00",
		"-step", "30s", "-rate-window", "5m", "-timeout", "5s", "-out", "y.png", "-width", "640",
		"-panel-height", "200", "-title", "Load test",
		"-panel", `Errors = sum by (controller) (rate(kooper_controller_handle_duration_seconds_count{success="false"}[5m]))`,
		"-panel", "Leader=max(kooper_controller_leader)",
	}, &bytes.Buffer{}, time.Time{})
	if err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	want := config{
		Prometheus:  "https://prom.example/sub",
		Start:       time.Date(2025, 11, 22, 14, 0, 0, 0, time.UTC),
		End:         time.Date(2025, 11, 22, 15, 0, 0, 0, time.UTC),
		Step:        30 * time.Second,
		Timeout:     5 * time.Second,
		Out:         "y.png",
		Title:       "Load test",
		Width:       640,
		PanelHeight: 200,
		Panels: []panelSpec{
			{"Errors", `sum by (controller) (rate(kooper_controller_handle_duration_seconds_count{success="false"}[5m]))`},
			{"Leader", "max(kooper_controller_leader)"},
		},
	}
	if !equalConfig(cfg, want) {
		t.Errorf("got %+v, want %+v", cfg, want)
	}
}

func TestParseFlagsUsesTheRateWindowInTheDefaultPanels(t *testing.T) {
	cfg, err := parseFlags([]string{"-out", "x.png", "-rate-window", "30s"}, &bytes.Buffer{}, time.Now())
	if err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	want := "sum by (controller) (rate(kooper_controller_handle_duration_seconds_count[30s]))"
	if got := cfg.Panels[3].Expr; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestParseFlagsRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no output", []string{}, "-out is required"},
		{"a panel without a title", []string{"-out", "x.png", "-panel", "=up"}, "is not 'Title=PromQL expression'"},
		{"a panel without an expression", []string{"-out", "x.png", "-panel", "Up"}, "is not 'Title=PromQL expression'"},
		{"an end that is not RFC3339", []string{"-out", "x.png", "-end", "15:00"}, "invalid -end"},
		{"an address that is no URL", []string{"-out", "x.png", "-prometheus", "127.0.0.1:9090"}, "invalid -prometheus"},
		{"a host without a scheme", []string{"-out", "x.png", "-prometheus", "localhost:9090"}, "is not an http(s) URL"},
		{"an empty range", []string{"-out", "x.png", "-range", "0s"}, "-range 0s must be positive"},
		{"a negative step", []string{"-out", "x.png", "-step", "-1s"}, "must not be negative"},
		{"more points than Prometheus allows", []string{"-out", "x.png", "-range", "24h", "-step", "1s"}, "more than 11000 points"},
		{"a rate window finer than milliseconds", []string{"-out", "x.png", "-rate-window", "1500us"}, "invalid -rate-window"},
		{"a narrow image", []string{"-out", "x.png", "-width", "100"}, "-width 100 is outside"},
		{"a flat panel", []string{"-out", "x.png", "-panel-height", "20"}, "-panel-height 20 is outside"},
		{"an unknown flag", []string{"-out", "x.png", "-grafana", "x"}, "flag provided but not defined"},
		{"a positional argument", []string{"-out", "x.png", "extra"}, `unexpected arguments ["extra"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(tt.args, &bytes.Buffer{}, time.Now())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
			if errors.Is(err, flag.ErrHelp) {
				t.Error("got flag.ErrHelp, want a real error")
			}
		})
	}
}

func TestDefaultStepIsAboutThreeHundredPoints(t *testing.T) {
	tests := []struct {
		rng, want time.Duration
	}{
		{15 * time.Minute, 3 * time.Second},
		{10 * time.Minute, 2 * time.Second},
		{time.Hour, 12 * time.Second},
		{901 * time.Second, 4 * time.Second}, // rounded up
		{time.Minute, time.Second},           // at least 1s
		{time.Second, time.Second},
	}
	for _, tt := range tests {
		if got := defaultStep(tt.rng); got != tt.want {
			t.Errorf("defaultStep(%s): got %s, want %s", tt.rng, got, tt.want)
		}
	}
}

func TestPromDurationWritesPromQLDurations(t *testing.T) {
	tests := []struct {
		d       time.Duration
		want    string
		wantErr bool
	}{
		{time.Minute, "1m", false},
		{30 * time.Second, "30s", false},
		{90 * time.Minute, "1h30m", false},
		{1500 * time.Millisecond, "1s500ms", false},
		{48 * time.Hour, "48h", false},
		{0, "", true},
		{-time.Minute, "", true},
		{1500 * time.Microsecond, "", true},
	}
	for _, tt := range tests {
		got, err := promDuration(tt.d)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("promDuration(%s): got %q, %v, want %q and error %v", tt.d, got, err, tt.want, tt.wantErr)
		}
	}
}

// equalConfig compares configs field by field; times with Equal.
func equalConfig(a, b config) bool {
	return a.Prometheus == b.Prometheus && a.Start.Equal(b.Start) && a.End.Equal(b.End) &&
		a.Step == b.Step && a.Timeout == b.Timeout && a.Out == b.Out && a.Title == b.Title &&
		a.Width == b.Width && a.PanelHeight == b.PanelHeight && slices.Equal(a.Panels, b.Panels)
}
