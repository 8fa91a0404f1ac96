// Package dashboards defines Kooper's Grafana dashboards in Go, from the
// metric names in package catalog, and renders them as the Grafana JSON in
// grafana/dashboards and the panel tables in docs/metrics.md. An operator of
// the repository (see Operators) without a hand-written dashboard gets a
// generic one of its controllers, so a new operator has one without Go code.
//
// `go generate` (or `make generate`) writes both; a test fails when the
// files on disk differ from what this package renders, and the Prometheus
// end-to-end test evaluates every expression of the written JSON.
package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Dashboard is one Grafana dashboard.
type Dashboard struct {
	// UID is Grafana's stable identifier, also the JSON file's base name.
	UID         string
	Title       string
	Description string
	// Controllers is the regular expression the controller variable's
	// values are picked from: an operator's controller names. "" is every
	// controller, and then All is ".+" instead of the list of values.
	Controllers string
	Rows        []Row
}

// Row is a titled group of panels, laid out three to a line.
type Row struct {
	Title  string
	Panels []Panel
}

// Panel is one chart.
type Panel struct {
	Title string
	// Description is shown in the panel's tooltip and in the docs.
	Description string
	// Unit is a Grafana unit: "s", "ops", "percentunit", "bytes", "short".
	Unit    string
	Targets []Target
}

// Target is one PromQL query of a panel.
type Target struct {
	Expr string
	// Legend is Grafana's legend format, e.g. "{{controller}}".
	Legend string
}

// Variables every dashboard has. Expressions use them as $datasource,
// $controller and Grafana's own $__rate_interval.
const (
	VarDatasource   = "datasource"
	VarController   = "controller"
	VarRateInterval = "$__rate_interval"
)

// ControllerVariableSelector is the series whose controller label values the
// controller variable offers (label_values in Grafana). Every controller
// has it from its first event.
func (d Dashboard) ControllerVariableSelector() string {
	if d.Controllers == "" {
		return queueLengthName
	}
	return fmt.Sprintf("%s{controller=~%q}", queueLengthName, d.Controllers)
}

// JSON renders d as a Grafana dashboard (schema version 39, importable in
// Grafana 10 and later), indented, with a final newline.
func (d Dashboard) JSON() ([]byte, error) {
	ds := map[string]string{"type": "prometheus", "uid": "${" + VarDatasource + "}"}
	var panels []any
	id, y := 1, 0
	for _, r := range d.Rows {
		panels = append(panels, map[string]any{
			"id": id, "type": "row", "title": r.Title, "collapsed": false,
			"gridPos": grid{H: 1, W: 24, X: 0, Y: y}, "panels": []any{},
		})
		id++
		y++
		for i, p := range r.Panels {
			targets := make([]any, len(p.Targets))
			for j, t := range p.Targets {
				targets[j] = map[string]any{
					"refId": string(rune('A' + j)), "datasource": ds,
					"expr": t.Expr, "legendFormat": t.Legend, "range": true,
				}
			}
			panels = append(panels, map[string]any{
				"id": id, "type": "timeseries", "title": p.Title, "description": p.Description,
				"datasource": ds,
				"gridPos":    grid{H: 8, W: 8, X: 8 * (i % 3), Y: y + 8*(i/3)},
				"fieldConfig": map[string]any{
					"defaults":  map[string]any{"unit": p.Unit, "custom": map[string]any{"lineWidth": 1, "fillOpacity": 10, "showPoints": "never"}},
					"overrides": []any{},
				},
				"options": map[string]any{
					"legend":  map[string]any{"displayMode": "list", "placement": "bottom", "showLegend": true},
					"tooltip": map[string]any{"mode": "multi", "sort": "desc"},
				},
				"targets": targets,
			})
			id++
		}
		y += 8 * ((len(r.Panels) + 2) / 3)
	}
	controllerQuery := fmt.Sprintf("label_values(%s, controller)", d.ControllerVariableSelector())
	controllerVar := map[string]any{
		"name": VarController, "label": "Controller", "type": "query", "datasource": ds,
		"definition": controllerQuery,
		"query":      map[string]string{"query": controllerQuery, "refId": "controller"},
		"multi":      true, "includeAll": true,
		"current": map[string]any{"selected": true, "text": []string{"All"}, "value": []string{"$__all"}},
		"refresh": 2, "sort": 1, "hide": 0, "regex": "", "options": []any{},
	}
	if d.Controllers == "" {
		// Every controller: "All" need not list them. An operator's
		// dashboard leaves it unset, so All is its own controllers only.
		controllerVar["allValue"] = ".+"
	}
	out := map[string]any{
		"uid": d.UID, "title": d.Title, "description": d.Description,
		"tags": []string{"kooper"}, "editable": true, "schemaVersion": 39, "version": 1,
		"graphTooltip": 1, "refresh": "30s", "timezone": "",
		"time":        map[string]string{"from": "now-1h", "to": "now"},
		"annotations": map[string]any{"list": []any{}},
		"links":       []any{},
		"templating": map[string]any{"list": []any{
			map[string]any{
				"name": VarDatasource, "label": "Data source", "type": "datasource", "query": "prometheus",
				"current": map[string]any{}, "hide": 0, "refresh": 1, "regex": "", "options": []any{},
			},
			controllerVar,
		}},
		"panels": panels,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("could not render dashboard %s: %w", d.UID, err)
	}
	return buf.Bytes(), nil
}

// grid is a panel's position: Grafana's grid is 24 units wide.
type grid struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}
