// Package report renders a bench.Report, the one result model of
// `iopath bench`, for people and for programs:
//
//   - Table: an aligned side-by-side table with the machine, the file, a
//     legend and notes; fio twin rows sit under their iopath engine.
//   - JSON: the model itself, with units in the key names, as one of the
//     family of documents every command writes (internal/jsondoc): its
//     first keys are schema_version and kind ("file" or "tree"), and
//     docs/schema holds a schema per kind. Always valid: NaN and Inf
//     become 0.
//   - CSV, Markdown: one row per result, for spreadsheets and pull requests.
//   - GoBench: the Go benchmark line format, one line per run, so that
//     `benchstat old.txt new.txt` compares two reports.
//   - HTML: one self-contained page (no network, no script) with inline SVG
//     charts: throughput with min–max whiskers, CPU per GiB, latency
//     percentiles on a log scale, and throughput against block size and
//     queue depth for sweeps.
//
// Write picks one of the text formats by name (Formats lists them).
// Compare matches the rows of two JSON reports (LoadJSON) and says, per
// row, whether throughput, CPU per GiB and P99 changed by more than the
// runs' own spread; CompareTable, CompareJSON and CompareHTML render it.
//
// The socket benchmark's netbench.Report (`iopath net bench`) has its own
// renderers, chosen by WriteNet (NetFormats lists them): NetTable, with
// the server's CPU per request as the headline and its ratio to epoll and
// net; NetJSON (LoadNetJSON reads it back); NetCSV; NetMarkdown; and
// NetHTML, with grouped bars of server CPU per request and QPS, P99 on a
// log scale, and the integrity verdict first.
//
// Renderers only read the report; they never change it, and they are safe
// for concurrent use on the same report. Each writes its whole output with
// one Write call, so a failed writer leaves no half-table behind it.
package report
