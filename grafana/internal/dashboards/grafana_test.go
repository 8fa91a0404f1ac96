package dashboards_test

import (
	"fmt"
	"slices"
	"testing"

	sdk "github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/kooperkit/kooper/grafana/internal/dashboards"
)

// Each dashboard, written as JSON and read back through the SDK, is what
// its definition says: the rows and panels in order, each panel's title,
// description, unit, data source, legend and queries, three 8x8 panels to
// a line under their row, and the two variables. Queries finds every
// expression, as the Prometheus end-to-end test reads them.
func TestTheJSONReadBackIsTheDefinition(t *testing.T) {
	for _, d := range dashboards.All(withGeneric) {
		t.Run(d.UID, func(t *testing.T) {
			b, err := d.JSON()
			if err != nil {
				t.Fatal(err)
			}
			g, err := dashboards.Read(b)
			if err != nil {
				t.Fatal(err)
			}
			if got := deref(g.Uid) + " / " + deref(g.Title) + " / " + deref(g.Description); got != d.UID+" / "+d.Title+" / "+d.Description {
				t.Errorf("got UID, title and description %q", got)
			}

			var wantQueries []dashboards.Query
			i, y := 0, uint32(0) // the panel read, the top of the current row's panels
			for _, r := range d.Rows {
				if i >= len(g.Panels) || g.Panels[i].RowPanel == nil {
					t.Fatalf("panel %d: want row %q", i, r.Title)
				}
				row := g.Panels[i].RowPanel
				if deref(row.Title) != r.Title || row.Collapsed || len(row.Panels) != 0 || row.GridPos == nil || *row.GridPos != (sdk.GridPos{H: 1, W: 24, Y: y}) {
					t.Errorf("row %q: got title %q, collapsed %t, %d panels inside, at %+v; want it expanded, its panels after it, full width at y=%d",
						r.Title, deref(row.Title), row.Collapsed, len(row.Panels), row.GridPos, y)
				}
				i++
				y++
				for j, p := range r.Panels {
					if i >= len(g.Panels) || g.Panels[i].Panel == nil {
						t.Fatalf("panel %d: want panel %q", i, p.Title)
					}
					checkPanel(t, *g.Panels[i].Panel, p, sdk.GridPos{H: 8, W: 8, X: uint32(8 * (j % 3)), Y: y + uint32(8*(j/3))})
					for _, target := range p.Targets {
						wantQueries = append(wantQueries, dashboards.Query{Panel: p.Title, Expr: target.Expr})
					}
					i++
				}
				y += uint32(8 * ((len(r.Panels) + 2) / 3))
			}
			if i != len(g.Panels) {
				t.Errorf("got %d panels, want %d", len(g.Panels), i)
			}

			queries, err := dashboards.Queries(g)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(queries, wantQueries) {
				t.Errorf("Queries found %d expressions, want the %d of the definition:\n%q\nwant\n%q", len(queries), len(wantQueries), queries, wantQueries)
			}

			names := make([]string, len(g.Templating.List))
			for i, v := range g.Templating.List {
				names[i] = string(v.Type) + " " + v.Name
			}
			if want := []string{"datasource " + dashboards.VarDatasource, "query " + dashboards.VarController}; !slices.Equal(names, want) {
				t.Errorf("got variables %q, want %q", names, want)
			}
			query, allValue, err := dashboards.ControllerVariable(g)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("label_values(%s, controller)", d.ControllerVariableSelector()); query != want {
				t.Errorf("got controller variable query %q, want %q", query, want)
			}
			// Every controller: All need not list them. An operator's: All
			// is its own controllers, the values the query finds.
			if wantAll := map[bool]string{true: ".+", false: ""}[d.Controllers == ""]; allValue != wantAll {
				t.Errorf("got All value %q, want %q", allValue, wantAll)
			}
		})
	}
}

// checkPanel checks that got, a panel read back, is the time series panel
// of want at grid.
func checkPanel(t *testing.T, got sdk.Panel, want dashboards.Panel, grid sdk.GridPos) {
	t.Helper()
	if got.Type != "timeseries" || deref(got.Title) != want.Title || deref(got.Description) != want.Description {
		t.Errorf("panel %q: got a %s panel titled %q, described %q", want.Title, got.Type, deref(got.Title), deref(got.Description))
	}
	if got.GridPos == nil || *got.GridPos != grid {
		t.Errorf("panel %q: got grid position %+v, want %+v", want.Title, got.GridPos, grid)
	}
	if got.FieldConfig == nil || deref(got.FieldConfig.Defaults.Unit) != want.Unit {
		t.Errorf("panel %q: want unit %s", want.Title, want.Unit)
	}
	if got.Datasource == nil || deref(got.Datasource.Type) != "prometheus" || deref(got.Datasource.Uid) != "${"+dashboards.VarDatasource+"}" {
		t.Errorf("panel %q: got data source %+v, want the datasource variable's", want.Title, got.Datasource)
	}
	if o, ok := got.Options.(*timeseries.Options); !ok || !o.Legend.ShowLegend {
		t.Errorf("panel %q: got options %+v, want a time series panel's, its legend shown", want.Title, got.Options)
	}
	if len(got.Targets) != len(want.Targets) {
		t.Fatalf("panel %q: got %d targets, want %d", want.Title, len(got.Targets), len(want.Targets))
	}
	for i, target := range got.Targets {
		q, ok := target.(*prometheus.Dataquery)
		if !ok {
			t.Errorf("panel %q: target %d is a %T, want a Prometheus query", want.Title, i, target)
			continue
		}
		if q.Expr != want.Targets[i].Expr || deref(q.LegendFormat) != want.Targets[i].Legend || deref(q.RefId) != string(rune('A'+i)) {
			t.Errorf("panel %q: target %d is %q with legend %q (ref %s), want %q with legend %q",
				want.Title, i, q.Expr, deref(q.LegendFormat), deref(q.RefId), want.Targets[i].Expr, want.Targets[i].Legend)
		}
	}
}

func TestReadAndItsExtractionRefuseWhatTheEndToEndTestCannotEvaluate(t *testing.T) {
	panel := func(datasource string) string {
		return `{"type": "timeseries", "title": "p", "datasource": {"type": "` + datasource + `", "uid": "x"},
			"targets": [{"refId": "A", "datasource": {"type": "` + datasource + `", "uid": "x"}, "expr": "up"}]}`
	}
	controller := `{"type": "query", "name": "controller", "query": {"query": "label_values(up, controller)", "refId": "controller"}}`
	dashboard := func(panels, variables string) string {
		return `{"uid": "u", "title": "t", "schemaVersion": 42, "templating": {"list": [` + variables + `]}, "annotations": {}, "panels": [` + panels + `]}`
	}
	tests := []struct {
		name                              string
		json                              string
		wantReadErr, wantQueriesErr       bool
		wantExprs                         int
		wantControllerErr                 bool
		wantControllerQuery, wantAllValue string
	}{
		{
			name: "a Prometheus panel and the controller variable",
			json: dashboard(panel("prometheus"), controller), wantExprs: 1,
			wantControllerQuery: "label_values(up, controller)",
		},
		{
			name: "a collapsed row's panels are found too",
			json: dashboard(`{"type": "row", "id": 1, "collapsed": true, "panels": [`+panel("prometheus")+`, `+panel("prometheus")+`]}`, controller), wantExprs: 2,
			wantControllerQuery: "label_values(up, controller)",
		},
		{
			name: "a string query and an All value",
			json: dashboard(panel("prometheus"), `{"type": "query", "name": "controller", "query": "label_values(up, controller)", "allValue": ".+"}`), wantExprs: 1,
			wantControllerQuery: "label_values(up, controller)", wantAllValue: ".+",
		},
		{
			name: "a query of another data source is an error",
			json: dashboard(panel("loki"), controller), wantQueriesErr: true,
			wantControllerQuery: "label_values(up, controller)",
		},
		{
			name: "no controller variable is an error",
			json: dashboard(panel("prometheus"), `{"type": "datasource", "name": "datasource", "query": "prometheus"}`), wantExprs: 1,
			wantControllerErr: true,
		},
		{
			name: "a controller variable without a query is an error",
			json: dashboard(panel("prometheus"), `{"type": "query", "name": "controller"}`), wantExprs: 1,
			wantControllerErr: true,
		},
		{
			name: "what is not JSON is an error",
			json: "{", wantReadErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := dashboards.Read([]byte(tt.json))
			if (err != nil) != tt.wantReadErr {
				t.Fatalf("Read: got error %v, want error: %t", err, tt.wantReadErr)
			}
			if err != nil {
				return
			}
			queries, err := dashboards.Queries(g)
			if (err != nil) != tt.wantQueriesErr {
				t.Errorf("Queries: got error %v, want error: %t", err, tt.wantQueriesErr)
			} else if len(queries) != tt.wantExprs {
				t.Errorf("Queries: got %q, want %d expressions", queries, tt.wantExprs)
			}
			query, allValue, err := dashboards.ControllerVariable(g)
			if (err != nil) != tt.wantControllerErr {
				t.Errorf("ControllerVariable: got error %v, want error: %t", err, tt.wantControllerErr)
			} else if query != tt.wantControllerQuery || allValue != tt.wantAllValue {
				t.Errorf("ControllerVariable: got %q and All %q, want %q and %q", query, allValue, tt.wantControllerQuery, tt.wantAllValue)
			}
		})
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
