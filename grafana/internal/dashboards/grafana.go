package dashboards

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// The SDK's package dashboard is the dashboard model of Grafana's import
// (and of /api/dashboards/db), which Grafana 10 and later read. The SDK
// marks it deprecated in favour of dashboardv2, the schema of Grafana 12's
// v2 dashboards API, which Grafana 10 and 11 cannot import: hence the
// staticcheck exemption (SA1019) on its uses below.

// Panels are 8 by 8 on Grafana's grid, 24 units wide: three to a line. The
// SDK's dashboard builder places them left to right, then on the next line,
// and each row below the panels before it.
const (
	panelWidth  = 8
	panelHeight = 8
)

// Grafana builds d with the SDK's builders: a row panel per Row, followed
// by a time series panel per Panel; the datasource variable (a Prometheus
// data source) and the controller variable (label_values of
// ControllerVariableSelector, multi-value, "All" selected).
func (d Dashboard) Grafana() (dashboard.Dashboard, error) { //nolint:staticcheck // see above: the model Grafana 10 and 11 import
	ds := datasource()
	// Time zone "" is the viewer's preference, where the SDK would set
	// "browser".
	//nolint:staticcheck // see above: the model Grafana 10 and 11 import
	b := dashboard.NewDashboardBuilder(d.Title).
		Uid(d.UID).
		Description(d.Description).
		Tags([]string{"kooper"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("30s").
		Time("now-1h", "now").
		Timezone("").
		Version(1).
		WithVariable(dashboard.NewDatasourceVariableBuilder(VarDatasource).
			Label("Data source").
			Type("prometheus").
			Hide(dashboard.VariableHideDontHide)).
		WithVariable(d.controllerVariable(ds))
	id := uint32(1)
	for _, r := range d.Rows {
		b.WithRow(dashboard.NewRowBuilder(r.Title).Id(id))
		id++
		for _, p := range r.Panels {
			b.WithPanel(p.builder(id, ds))
			id++
		}
	}
	g, err := b.Build()
	if err != nil {
		return g, fmt.Errorf("could not build dashboard %s: %w", d.UID, err)
	}
	return g, nil
}

// datasource is the data source of every panel, query and query variable:
// the one the datasource variable holds.
func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: new("prometheus"), Uid: new("${" + VarDatasource + "}")}
}

// controllerVariable offers the controller label values of the series of
// d.ControllerVariableSelector, refreshed with the time range, all of them
// selected. Without Controllers, All is ".+" rather than the list of
// values; an operator's dashboard leaves it unset, so that All is its own
// controllers only.
func (d Dashboard) controllerVariable(ds common.DataSourceRef) *dashboard.QueryVariableBuilder {
	query := fmt.Sprintf("label_values(%s, controller)", d.ControllerVariableSelector())
	v := dashboard.NewQueryVariableBuilder(VarController).
		Label("Controller").
		Datasource(ds).
		Definition(query).
		Query(dashboard.StringOrMap{Map: map[string]any{"query": query, "refId": VarController}}).
		Multi(true).
		IncludeAll(true).
		Current(dashboard.VariableOption{
			Selected: new(true),
			Text:     dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
			Value:    dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
		}).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Hide(dashboard.VariableHideDontHide)
	if d.Controllers == "" {
		v.AllValue(".+")
	}
	return v
}

// builder is p as a time series panel with identifier id: thin lines over
// a light fill, no points, the legend listed below, a tooltip of every
// series sorted by value.
func (p Panel) builder(id uint32, ds common.DataSourceRef) *timeseries.PanelBuilder {
	b := timeseries.NewPanelBuilder().
		Id(id).
		Title(p.Title).
		Description(p.Description).
		Datasource(ds).
		Unit(p.Unit).
		Height(panelHeight).
		Span(panelWidth).
		LineWidth(1).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
	for i, t := range p.Targets {
		b.WithTarget(prometheus.NewDataqueryBuilder().
			RefId(string(rune('A' + i))).
			Datasource(ds).
			Expr(t.Expr).
			LegendFormat(t.Legend).
			Range())
	}
	return b
}

// JSON renders d as Grafana imports it (Grafana 10 and later): the SDK's
// model of Grafana, indented, with a final newline.
func (d Dashboard) JSON() ([]byte, error) {
	g, err := d.Grafana()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(g); err != nil {
		return nil, fmt.Errorf("could not render dashboard %s: %w", d.UID, err)
	}
	return buf.Bytes(), nil
}

// registerVariants tells the SDK how to decode what JSON writes: the
// options of time series panels, and Prometheus queries (which it would
// otherwise decode as untyped maps).
var registerVariants = sync.OnceFunc(func() {
	r := cog.NewRuntime()
	r.RegisterPanelcfgVariant(timeseries.VariantConfig())
	r.RegisterDataqueryVariant(prometheus.VariantConfig())
})

// Read decodes a dashboard's JSON into the SDK's model. The targets of
// panels whose data source is Prometheus decode as *prometheus.Dataquery;
// fields the model lacks are ignored. (Not the SDK's strict decoding: at
// v0.0.22 it fails with an empty list of errors and leaves every panel
// empty.)
func Read(b []byte) (dashboard.Dashboard, error) { //nolint:staticcheck // see above: the model Grafana 10 and 11 import
	registerVariants()
	var d dashboard.Dashboard //nolint:staticcheck // see above: the model Grafana 10 and 11 import
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("could not decode the dashboard: %w", err)
	}
	return d, nil
}

// Query is one query of a dashboard's panel.
type Query struct {
	// Panel is the panel's title.
	Panel string
	Expr  string
}

// Queries returns the PromQL expression of every target of every panel of
// d, in order, the panels of collapsed rows included. A target that is not
// a Prometheus query is an error.
func Queries(d dashboard.Dashboard) ([]Query, error) { //nolint:staticcheck // see above: the model Grafana 10 and 11 import
	var panels []dashboard.Panel
	for _, p := range d.Panels {
		switch {
		case p.Panel != nil:
			panels = append(panels, *p.Panel)
		case p.RowPanel != nil:
			panels = append(panels, p.RowPanel.Panels...)
		}
	}
	var queries []Query
	for _, p := range panels {
		title := ""
		if p.Title != nil {
			title = *p.Title
		}
		for i, t := range p.Targets {
			var expr string
			switch q := t.(type) {
			case *prometheus.Dataquery:
				expr = q.Expr
			case prometheus.Dataquery:
				expr = q.Expr
			default:
				return nil, fmt.Errorf("panel %q: target %d is a %s query, not a Prometheus one", title, i, t.DataqueryType())
			}
			queries = append(queries, Query{Panel: title, Expr: expr})
		}
	}
	return queries, nil
}

// ControllerVariable returns the query of d's controller variable, such as
// label_values(selector, controller), and its All value: "" when All is the
// values the query finds.
func ControllerVariable(d dashboard.Dashboard) (query, allValue string, err error) { //nolint:staticcheck // see above: the model Grafana 10 and 11 import
	for _, v := range d.Templating.List {
		if v.Name != VarController {
			continue
		}
		if v.Query == nil {
			return "", "", errors.New("the controller variable has no query")
		}
		switch {
		case v.Query.String != nil:
			query = *v.Query.String
		case v.Query.Map != nil:
			query, _ = v.Query.Map["query"].(string)
		}
		if query == "" {
			return "", "", errors.New("the controller variable has no query")
		}
		if v.AllValue != nil {
			allValue = *v.AllValue
		}
		return query, allValue, nil
	}
	return "", "", errors.New("no controller variable")
}
