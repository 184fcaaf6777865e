// Package report turns every kind of iopath result into what people and
// programs read. It has one presentation model and one renderer per
// format:
//
//   - Doc (model.go): a header, typed columns (a key with its unit, which
//     way is better, whether it is a headline figure, only for --wide),
//     groups of rows whose cells hold a median with its min–max and every
//     run's value, errors and noise marks, notes, a legend.
//   - WriteDoc (render.go): a Doc as an aligned table that fits 100
//     columns, CSV, Markdown, or Go's benchmark format (gobench, for
//     benchstat).
//   - renderPage (page.go) and the chart set (svg.go): the one
//     self-contained HTML page (no network, no script) every command
//     writes, with inline SVG charts.
//
// Each kind of result has a small adapter into the Doc: BenchDoc (bench,
// one file or a tree), NetDoc (net bench, echo), FileServeDoc and
// WritevDoc (its --serve-file and --writev), AdviseDoc, FeaturesDoc,
// LoadDoc (net load) and CompareDoc. JSON is not rendered from the Doc:
// each kind writes its own result through internal/jsondoc, whose first
// keys are schema_version and kind (docs/schema holds a schema per kind).
//
// Compare (CompareFiles) reads two JSON reports of one kind, maps each
// into its Doc, matches their rows by group and key columns and judges
// each headline figure's change: with 5 runs a side by a Mann–Whitney U
// test, with fewer by the runs' min–max spread.
//
// Of netio, report imports only netio/netresult, the network results'
// types: never server or load-generator code (layering_test.go).
//
// Renderers only read their input; they never change it. Each writes its
// whole output with one Write call, so a failed writer leaves no
// half-table behind it.
package report
