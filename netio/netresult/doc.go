// Package netresult holds the results of the network benchmarks, and
// nothing that produces them: the echo bench's Report (`iopath net
// bench`), the file-serving and writev reports (`--serve-file`,
// `--writev`), and the load generator's Load (`iopath net load`), with
// the pure functions that reduce runs to medians.
//
// Package netbench (which runs the benchmarks), filesrv, writev and load
// (which measure) fill these types; package report renders them, and
// imports this package alone of netio: a renderer never pulls in server
// code. It imports nothing of netio.
package netresult
