// Package dashboards defines Kooper's Grafana dashboards in Go, from the
// metric names in package catalog, and renders them as the Grafana JSON in
// grafana/dashboards and the panel tables in docs/metrics.md. An operator of
// the repository (see Operators) without a hand-written dashboard gets a
// generic one of its controllers, so a new operator has one without Go code.
//
// A Dashboard, with its rows, panels and targets, is plain Go values: what
// definitions.go writes and Markdown reads. Grafana builds it with the
// builders of Grafana's foundation SDK
// (github.com/grafana/grafana-foundation-sdk/go), and JSON writes what the
// SDK's model marshals to; Read decodes such JSON back into that model, and
// Queries and ControllerVariable find in it what the Prometheus end-to-end
// test evaluates.
//
// `make generate` (go run ./cmd/dashboards) writes both; a test fails when
// the files on disk differ from what this package renders, and the
// Prometheus end-to-end test evaluates every expression of the written JSON.
package dashboards
