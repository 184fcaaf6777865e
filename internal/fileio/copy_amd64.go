package fileio

import "golang.org/x/sys/cpu"

// copyRepMovsb copies n bytes from src to dst with REP MOVSB. The ranges
// must not overlap (a mapping of a file and a buffer never do).
//
//go:noescape
func copyRepMovsb(dst, src *byte, n int)

// repMovsb is copyRepMovsb where the CPU says its REP MOVSB is fast
// (ERMS), else nil.
var repMovsb = func() func(dst, src *byte, n int) {
	if cpu.X86.HasERMS {
		return copyRepMovsb
	}
	return nil
}()
