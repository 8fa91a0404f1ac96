package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxResponseBytes bounds how much of a response body is read, so a wrong
// -prometheus URL serving something huge cannot exhaust memory.
const maxResponseBytes = 64 << 20

// errHTTPStatus is wrapped by errors for non-2xx responses that do not carry a
// Prometheus error body (a proxy, a wrong URL, a server that is not Prometheus).
var errHTTPStatus = errors.New("unexpected HTTP status")

// apiError is an error that Prometheus reported in its response body, as the
// "errorType" and "error" fields of a response whose "status" is "error".
type apiError struct {
	StatusCode int    // StatusCode of the HTTP response, e.g. 400.
	Type       string // Type is Prometheus' errorType, e.g. bad_data, timeout, execution.
	Message    string // Message is Prometheus' error field.
}

// Error implements error.
func (e *apiError) Error() string {
	return fmt.Sprintf("prometheus %s error (HTTP %d): %s", e.Type, e.StatusCode, e.Message)
}

// Point is one sample of a series.
type Point struct {
	T time.Time // T is the evaluation time, in UTC, to the millisecond like Prometheus.
	V float64   // V may be NaN or ±Inf.
}

// Series is one labelled time series of a range query result.
type Series struct {
	Labels map[string]string // Labels of the series; empty for an aggregation without "by".
	Points []Point           // Points in time order, as Prometheus returns them.
}

// queryResult is what a range query returns: its series, sorted by label set so
// colors do not depend on Prometheus' ordering, and any annotations.
type queryResult struct {
	Series   []Series
	Warnings []string // Warnings may mean the result is incomplete or wrong.
	Infos    []string // Infos are hints, e.g. that rate() is applied to a gauge.
}

// rangeQuery is a PromQL expression evaluated every Step from Start to End.
type rangeQuery struct {
	Expr       string
	Start, End time.Time
	Step       time.Duration
}

// client queries one Prometheus server's HTTP API.
type client struct {
	BaseURL string        // BaseURL of the server, e.g. http://127.0.0.1:9090, without /api/v1.
	HTTP    *http.Client  // HTTP sends the requests. Required.
	Timeout time.Duration // Timeout of one query, including reading the response.
}

// queryRange runs q through /api/v1/query_range, sending the parameters as a
// POST form so long expressions do not hit URL length limits.
func (c client) queryRange(ctx context.Context, q rangeQuery) (queryResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()

	endpoint := strings.TrimSuffix(c.BaseURL, "/") + "/api/v1/query_range"
	form := url.Values{
		"query": {q.Expr},
		"start": {unixSeconds(q.Start)},
		"end":   {unixSeconds(q.End)},
		"step":  {strconv.FormatFloat(q.Step.Seconds(), 'f', -1, 64)},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return queryResult{}, fmt.Errorf("could not build request to %s: %w", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")

	resp, err := c.HTTP.Do(req)
	if err != nil {
		return queryResult{}, fmt.Errorf("could not query %s: %w", endpoint, err)
	}
	defer func() { _ = resp.Body.Close() }()

	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return queryResult{}, fmt.Errorf("could not read response from %s: %w", endpoint, err)
	}
	res, err := parseQueryRange(resp.StatusCode, body)
	if err != nil {
		return queryResult{}, fmt.Errorf("query_range at %s: %w", endpoint, err)
	}
	return res, nil
}

// unixSeconds formats t as Unix seconds with millisecond precision, the
// resolution of Prometheus timestamps.
func unixSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// response is the envelope of every Prometheus HTTP API response.
type response struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
	Infos     []string        `json:"infos"`
}

// matrix is the data of a query_range response.
type matrix struct {
	ResultType string `json:"resultType"`
	Result     []struct {
		Metric map[string]string `json:"metric"`
		Values []sample          `json:"values"`
	} `json:"result"`
}

// sample is one [unixSeconds, "value"] pair. The value is a string so that
// NaN and ±Inf survive JSON.
type sample Point

// UnmarshalJSON implements json.Unmarshaler.
func (s *sample) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil {
		return fmt.Errorf("sample is not an array: %w", err)
	}
	if len(pair) != 2 {
		return fmt.Errorf("sample has %d elements, want 2", len(pair))
	}
	var ts float64
	if err := json.Unmarshal(pair[0], &ts); err != nil {
		return fmt.Errorf("invalid sample timestamp %s: %w", pair[0], err)
	}
	var str string
	if err := json.Unmarshal(pair[1], &str); err != nil {
		return fmt.Errorf("invalid sample value %s: %w", pair[1], err)
	}
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return fmt.Errorf("invalid sample value %q: %w", str, err)
	}
	s.T = time.UnixMilli(int64(math.Round(ts * 1000))).UTC()
	s.V = v
	return nil
}

// parseQueryRange decodes a query_range response body received with the given
// HTTP status code. A Prometheus error body becomes an *apiError whatever the
// status; any other non-2xx response wraps errHTTPStatus.
func parseQueryRange(statusCode int, body []byte) (queryResult, error) {
	var env response
	jsonErr := json.Unmarshal(body, &env)
	if jsonErr == nil && env.Status == "error" {
		return queryResult{}, &apiError{StatusCode: statusCode, Type: env.ErrorType, Message: env.Error}
	}
	if statusCode < 200 || statusCode > 299 {
		return queryResult{}, fmt.Errorf("%w %d %s: %s", errHTTPStatus, statusCode, http.StatusText(statusCode), snippet(body))
	}
	if jsonErr != nil {
		return queryResult{}, fmt.Errorf("response is not Prometheus JSON (%s): %w", snippet(body), jsonErr)
	}
	if env.Status != "success" {
		return queryResult{}, fmt.Errorf("response status is %q, want \"success\"", env.Status)
	}
	var m matrix
	if err := json.Unmarshal(env.Data, &m); err != nil {
		return queryResult{}, fmt.Errorf("could not decode the result matrix: %w", err)
	}
	if m.ResultType != "matrix" {
		return queryResult{}, fmt.Errorf("result type is %q, want \"matrix\"", m.ResultType)
	}

	res := queryResult{Warnings: env.Warnings, Infos: env.Infos, Series: make([]Series, 0, len(m.Result))}
	for _, r := range m.Result {
		s := Series{Labels: r.Metric, Points: make([]Point, len(r.Values))}
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		for i, v := range r.Values {
			s.Points[i] = Point(v)
		}
		res.Series = append(res.Series, s)
	}
	sort.SliceStable(res.Series, func(i, j int) bool {
		return labelString(res.Series[i].Labels) < labelString(res.Series[j].Labels)
	})
	return res, nil
}

// snippet returns the start of a response body for an error message, on one line.
func snippet(body []byte) string {
	const limit = 200
	s := strings.Join(strings.Fields(string(body)), " ")
	if s == "" {
		return "empty body"
	}
	if len(s) > limit {
		s = s[:limit] + "..."
	}
	return strconv.Quote(s)
}

// labelString formats a label set the way Prometheus prints it: sorted,
// `k="v"` pairs separated by ", ", prefixed by the metric name if any. An empty
// set, the result of an aggregation without "by", is `{}`. Values are escaped
// to ASCII, so that the legend shows control and invisible characters too.
func labelString(labels map[string]string) string {
	name := labels["__name__"]
	keys := make([]string, 0, len(labels))
	for k := range labels {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = k + "=" + strconv.QuoteToASCII(labels[k])
	}
	joined := strings.Join(pairs, ", ")
	switch {
	case name != "":
		return name + "{" + joined + "}"
	case joined == "":
		return "{}"
	default:
		return joined
	}
}
