// Command promplot queries a Prometheus server over its HTTP API and writes a
// PNG line chart of Kooper controller series, so the docs can show what an
// operator looks like under load without a Grafana. The chart is drawn with
// gonum.org/v1/plot; an -out path ending in .svg writes an SVG instead.
//
// Usage, from the grafana module:
//
//	go run ./cmd/promplot -prometheus http://127.0.0.1:9090 -range 10m -out ../docs/img/kooper-under-load.png
//
// By default the image stacks four panels, one line per controller label:
//
//   - handling latency p99 and p50, from kooper_controller_handle_duration_seconds_bucket
//   - queue length, from kooper_controller_queue_length
//   - handlings per second, from kooper_controller_handle_duration_seconds_count
//
// The rates use -rate-window (default 1m). Repeat -panel 'Title=PromQL' to
// chart other expressions instead of the defaults; the title ends at the first
// "=", so the expression may hold label matchers:
//
//	go run ./cmd/promplot -out up.png -panel 'Targets up=sum by (job) (up{job!=""})'
//
// Each query runs over [-end minus -range, -end] with one sample per -step
// (default range/300, at least 1s). A panel whose query returns no series is an
// error rather than an empty chart: it nearly always means Prometheus does not
// scrape the operators, or the range is in the wrong place.
//
// The output is deterministic: the same samples give the same PNG bytes. The
// y axis starts at 0 when every value is non-negative, so a chart does not
// magnify noise; NaN and ±Inf samples, and missing steps, break a line, and a
// lone sample between them shows as a dot. Time ticks are in UTC.
package main
