// Package report renders a bench.Report, the one result model of
// `iopath bench` (a single file, or a tree with --tree), for people and
// for programs:
//
//   - JSON: the model itself, with units in the key names, as one of the
//     family of documents every command writes (internal/jsondoc): its
//     first keys are schema_version and kind ("file" or "tree"), and
//     docs/schema holds a schema per kind. Always valid: NaN and Inf
//     become 0.
//   - table, CSV, Markdown, gobench: BenchDoc maps the report into a Doc,
//     the one presentation model (model.go), and WriteDoc renders it: an
//     aligned table that fits 100 columns (the less-used columns with
//     DocOptions.Wide), one CSV row per result, one Markdown table per
//     workload, and the Go benchmark line format, one line per run, so
//     that `benchstat -col /engine` and `benchstat old.txt new.txt` read
//     it.
//   - HTML: one self-contained page (no network, no script) with inline SVG
//     charts: throughput with min–max whiskers, CPU per GiB, latency
//     percentiles on a log scale, and throughput against block size and
//     queue depth for sweeps.
//
// Write picks one of the text formats by name (Formats lists them).
// Other kinds of result have small adapters into the same Doc
// (FeaturesDoc, LoadDoc).
// Compare matches the rows of two JSON reports (LoadJSON) and says, per
// row, whether throughput, CPU per GiB and P99 changed by more than the
// runs' own spread; CompareTable, CompareJSON and CompareHTML render it.
//
// The other kinds of result each have a small adapter into the one
// presentation model, Doc (model.go), which WriteDoc renders as a table,
// CSV or Markdown (render.go): FeaturesDoc, LoadDoc, NetDoc (`iopath net
// bench`: server CPU per request, QPS and P99 per engine and point, with
// the ratio to epoll's or net's), FileServeDoc and WritevDoc (`net bench
// --serve-file`, `--writev`) and AdviseDoc. The network results are
// package netio/netresult's, the one package of netio report imports.
// The socket benchmark's JSON is netresult.Report itself (NetJSON;
// LoadNetJSON reads it back), and NetHTML draws it with grouped bars of
// server CPU per request and QPS, P99 on a log scale, and the integrity
// verdict first.
//
// Renderers only read the report; they never change it, and they are safe
// for concurrent use on the same report. Each writes its whole output with
// one Write call, so a failed writer leaves no half-table behind it.
package report
