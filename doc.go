// Package iopath reads files through Linux's I/O paths, and measures them.
//
// This root package is the library's front door: ReadFiles reads many
// small files, each whole, by the fastest path measured here. The engines
// behind it, and the benchmark tool, live in subpackages (batch, engine)
// and cmd/iopath.
package iopath
