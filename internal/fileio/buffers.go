package fileio

import (
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
)

// DirectAlign is the alignment O_DIRECT reads keep: file offsets, lengths
// and buffer addresses. Devices ask for their logical block size (often
// 512 bytes); 4096 satisfies every common device and is the page size.
const DirectAlign = 4096

// AlignUp rounds n up to a multiple of DirectAlign.
func AlignUp(n int) int { return (n + DirectAlign - 1) &^ (DirectAlign - 1) }

// Aligned reports whether a read of b at off meets O_DIRECT's alignment.
func Aligned(b []byte, off int64) bool {
	return off%DirectAlign == 0 && len(b)%DirectAlign == 0 &&
		uintptr(unsafe.Pointer(unsafe.SliceData(b)))%DirectAlign == 0
}

// AllocBytes returns a new Go slice of length n and capacity c that
// starts SkewFor(c) bytes past a page boundary, or on one for O_DIRECT.
func AllocBytes(n, c int, direct bool) []byte {
	skew := 0
	if !direct {
		skew = SkewFor(c)
	}
	ps := sys.PageSize()
	raw := make([]byte, c+ps+skew)
	base := int(uintptr(unsafe.Pointer(unsafe.SliceData(raw))) % uintptr(ps))
	off := (ps-base)%ps + skew
	return raw[off : off+n : off+c]
}
