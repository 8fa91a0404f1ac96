package main

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// queueLengthResponse is a query_range response as Prometheus 3 writes it for
// sum by (controller) (kooper_controller_queue_length), out of label order,
// with a NaN and an +Inf sample and both kinds of annotations.
const queueLengthResponse = `{
  "status": "success",
  "data": {
    "resultType": "matrix",
    "result": [
      {
        "metric": {"controller": "pod-terminator"},
        "values": [[1763824400, "3"], [1763824403.5, "NaN"], [1763824407, "+Inf"]]
      },
      {
        "metric": {"controller": "multi-resource"},
        "values": [[1763824400, "0"], [1763824403.5, "1.25e3"]]
      }
    ]
  },
  "warnings": ["PromQL warning: encountered a mix of histograms and floats for metric name"],
  "infos": ["PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket"]
}`

func TestParseQueryRangeDecodesAMatrixWithSpecialValues(t *testing.T) {
	res, err := parseQueryRange(http.StatusOK, []byte(queueLengthResponse))
	if err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	if len(res.Series) != 2 {
		t.Fatalf("got %d series, want 2", len(res.Series))
	}
	// Sorted by label set, whatever the response order.
	if got, want := res.Series[0].Labels["controller"], "multi-resource"; got != want {
		t.Errorf("got first series controller %q, want %q", got, want)
	}
	if got, want := res.Series[1].Points[1].T, time.UnixMilli(1763824403500).UTC(); !got.Equal(want) {
		t.Errorf("got timestamp %s, want %s", got, want)
	}
	if got := res.Series[0].Points[1].V; got != 1250 {
		t.Errorf("got value %v, want 1250", got)
	}
	pts := res.Series[1].Points
	if len(pts) != 3 || pts[0].V != 3 || !math.IsNaN(pts[1].V) || !math.IsInf(pts[2].V, 1) {
		t.Errorf("got points %v, want 3, NaN, +Inf", pts)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "a mix of histograms and floats") {
		t.Errorf("got warnings %q, want the one of the response", res.Warnings)
	}
	if len(res.Infos) != 1 || !strings.Contains(res.Infos[0], "might not be a counter") {
		t.Errorf("got infos %q, want the one of the response", res.Infos)
	}
}

func TestParseQueryRangeGivesAnEmptyResultForNoSeries(t *testing.T) {
	res, err := parseQueryRange(http.StatusOK, []byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	if err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	if len(res.Series) != 0 {
		t.Errorf("got %d series, want 0", len(res.Series))
	}
}

func TestParseQueryRangeReportsErrors(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		wantAPI  *apiError // an *apiError with these fields, or nil for another error
		wantHTTP bool      // wraps errHTTPStatus
		want     []string  // substrings of the message
	}{
		{
			name:    "a Prometheus bad_data error is reported with its type and message",
			status:  http.StatusBadRequest,
			body:    `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:5: parse error: unexpected <by>"}`,
			wantAPI: &apiError{StatusCode: 400, Type: "bad_data", Message: `invalid parameter "query": 1:5: parse error: unexpected <by>`},
			want:    []string{"bad_data", "HTTP 400", "parse error"},
		},
		{
			name:    "a Prometheus timeout is reported as such",
			status:  http.StatusServiceUnavailable,
			body:    `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`,
			wantAPI: &apiError{StatusCode: 503, Type: "timeout", Message: "query timed out in expression evaluation"},
			want:    []string{"timeout", "HTTP 503"},
		},
		{
			name:     "a proxy error page is reported with its status and start",
			status:   http.StatusBadGateway,
			body:     "<html>\n<body>upstream down</body></html>",
			wantHTTP: true,
			want:     []string{"502 Bad Gateway", `"<html> <body>upstream down</body></html>"`},
		},
		{
			name:     "a 404 with an empty body says so",
			status:   http.StatusNotFound,
			wantHTTP: true,
			want:     []string{"404 Not Found", "empty body"},
		},
		{
			name:   "a 200 that is not JSON is not taken for an empty result",
			status: http.StatusOK,
			body:   "<html>Grafana</html>",
			want:   []string{"not Prometheus JSON", "Grafana"},
		},
		{
			name:   "an instant vector is not a range query result",
			status: http.StatusOK,
			body:   `{"status":"success","data":{"resultType":"vector","result":[]}}`,
			want:   []string{`result type is "vector", want "matrix"`},
		},
		{
			name:   "a value that is not a number is rejected",
			status: http.StatusOK,
			body:   `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"many"]]}]}}`,
			want:   []string{`invalid sample value "many"`},
		},
		{
			name:   "a sample that is not a pair is rejected",
			status: http.StatusOK,
			body:   `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1]]}]}}`,
			want:   []string{"sample has 1 elements, want 2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseQueryRange(tt.status, []byte(tt.body))
			if err == nil {
				t.Fatal("got no error, want one")
			}
			var apiErr *apiError
			if isAPI := errors.As(err, &apiErr); isAPI != (tt.wantAPI != nil) {
				t.Errorf("got *apiError %v, want %v", isAPI, tt.wantAPI != nil)
			} else if isAPI && *apiErr != *tt.wantAPI {
				t.Errorf("got %+v, want %+v", *apiErr, *tt.wantAPI)
			}
			if got := errors.Is(err, errHTTPStatus); got != tt.wantHTTP {
				t.Errorf("got errors.Is(err, errHTTPStatus) %v, want %v", got, tt.wantHTTP)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestQueryRangeSendsTheQueryAsAPostForm(t *testing.T) {
	var got http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("could not parse form: %v", err)
		}
		got = *r
		_, _ = w.Write([]byte(queueLengthResponse))
	}))
	defer srv.Close()

	c := client{BaseURL: srv.URL + "/prom/", HTTP: srv.Client(), Timeout: 5 * time.Second}
	end := time.Date(2025, 11, 22, 15, 0, 0, 0, time.UTC)
	res, err := c.queryRange(context.Background(), rangeQuery{
		Expr:  `sum by (controller) (kooper_controller_queue_length{controller!=""})`,
		Start: end.Add(-15 * time.Minute),
		End:   end,
		Step:  3500 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	if len(res.Series) != 2 {
		t.Errorf("got %d series, want 2", len(res.Series))
	}
	if got.Method != http.MethodPost || got.URL.Path != "/prom/api/v1/query_range" {
		t.Errorf("got %s %s, want POST /prom/api/v1/query_range", got.Method, got.URL.Path)
	}
	for key, want := range map[string]string{
		"query": `sum by (controller) (kooper_controller_queue_length{controller!=""})`,
		"start": "1763822700.000",
		"end":   "1763823600.000",
		"step":  "3.5",
	} {
		if v := got.PostForm.Get(key); v != want {
			t.Errorf("got %s=%q, want %q", key, v, want)
		}
	}
}

func TestQueryRangeWrapsTransportAndTimeoutErrors(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)

	c := client{BaseURL: srv.URL, HTTP: srv.Client(), Timeout: 50 * time.Millisecond}
	_, err := c.queryRange(context.Background(), rangeQuery{Expr: "up", End: time.Unix(60, 0), Step: time.Second})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got error %v, want one wrapping context.DeadlineExceeded", err)
	}
}

func TestLabelStringFormatsLabelSetsLikePrometheus(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"one label", map[string]string{"controller": "pod-terminator"}, `controller="pod-terminator"`},
		{"labels sorted by name", map[string]string{"pod": "a", "controller": "b"}, `controller="b", pod="a"`},
		{"no labels is the empty set", map[string]string{}, "{}"},
		{"nil labels is the empty set", nil, "{}"},
		{"the metric name leads", map[string]string{"__name__": "up", "job": "x"}, `up{job="x"}`},
		{"the metric name alone", map[string]string{"__name__": "up"}, "up{}"},
		{"quotes and non-ASCII are escaped", map[string]string{"msg": "say \"hé\""}, `msg="say \"h\u00e9\""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := labelString(tt.labels); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
