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

// BufferSkew is where a buffered-I/O buffer starts past a page boundary.
// When the kernel copies a page-cache page into a destination at the same
// offset within a page, loads and stores alias in the store buffer (4K
// aliasing) and the copy ran 10-15% slower on the Intel machine this was
// measured on (pread of 128 KiB from a warm 4 GiB file: 6.9 GiB/s into
// page-aligned buffers, 8.1 GiB/s at a 16-byte skew; see docs/engines.md).
// O_DIRECT buffers start on a page boundary instead, as the kernel
// requires.
const BufferSkew = 16

// AllocBytes returns a new Go slice of length n and capacity c that
// starts BufferSkew bytes past a page boundary, or on one for O_DIRECT.
func AllocBytes(n, c int, direct bool) []byte {
	skew := BufferSkew
	if direct {
		skew = 0
	}
	ps := sys.PageSize()
	raw := make([]byte, c+ps+skew)
	base := int(uintptr(unsafe.Pointer(unsafe.SliceData(raw))) % uintptr(ps))
	off := (ps-base)%ps + skew
	return raw[off : off+n : off+c]
}
