// Package report renders a bench.Report, the one result model of
// `iopath bench`, for people and for programs: Table prints an aligned
// side-by-side table with the machine, the file and a legend, and JSON
// prints the model itself, versioned by its schema_version field, with units
// in the key names.
//
// Renderers only read the report; they never change it, and they are safe
// for concurrent use on the same report. Each writes its whole output with
// one Write call, so a failed writer leaves no half-table behind it.
package report
