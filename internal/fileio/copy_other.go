//go:build !amd64

package fileio

// repMovsb is nil: REP MOVSB is an x86 instruction.
var repMovsb func(dst, src *byte, n int)
