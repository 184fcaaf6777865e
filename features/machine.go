package features

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/machine"
	"github.com/iopath/iopath/internal/sys"
)

// Machine describes the machine and file a result was measured on. It is
// recorded with every result so that figures can be compared honestly.
type Machine struct {
	Kernel        string `json:"kernel"`          // uname release, e.g. "6.18.44"
	Arch          string `json:"arch"`            // GOARCH
	CPUModel      string `json:"cpu_model"`       // from /proc/cpuinfo
	Cores         int    `json:"cores"`           // online CPUs
	MemBytes      int64  `json:"mem_bytes"`       // MemTotal
	PageSize      int    `json:"page_size_bytes"` // bytes
	THP           string `json:"thp"`             // transparent hugepage mode: always, madvise, never
	Filesystem    string `json:"filesystem"`      // of the measured file: ext4, xfs, tmpfs, ...
	Device        string `json:"device"`          // block device backing it, e.g. "vda", or "" when none
	IOURing       string `json:"io_uring"`        // "available", or why not
	GoVersion     string `json:"go_version"`      // runtime.Version()
	IopathVersion string `json:"iopath_version"`  // main.version or the module's build info
	LatencyClock  string `json:"latency_clock"`   // clock for per-block latency: tsc or nanotime
	// BufferPlacement is where buffered reads' buffers start within a
	// page, measured on this machine (set by bench; nil elsewhere).
	BufferPlacement *Placement `json:"buffer_placement,omitempty"`
	// MappedCopy is the routine large copies out of a mapping use,
	// measured on this machine (set by bench; nil elsewhere).
	MappedCopy *CopyChoice `json:"mapped_copy,omitempty"`
}

// Placement is where buffered reads' buffers start past a page boundary
// and how that was chosen: measured on the machine by copying from memory
// into a buffer at each candidate skew, or set by IOPATH_BUFFER_SKEW. The
// best skew differs between CPUs (docs/engines.md).
type Placement = fileio.Placement

// BufferPlacement returns this process's buffer placement, measuring it
// on the first call (a few milliseconds).
func BufferPlacement() Placement { return fileio.BufferPlacement() }

// CopyChoice is the routine that copies 64 KiB or more out of a mapping
// (the mmap engine's copying consumer, ReadFile and ReadAt through a
// mapping) and how it was chosen: measured on the machine, memmove
// against REP MOVSB, or set by IOPATH_MAPPED_COPY. The faster one differs
// between CPUs (docs/engines.md).
type CopyChoice = fileio.CopyChoice

// MappedCopy returns this process's copy routine for mappings, measuring
// it on the first call (about 2 ms).
func MappedCopy() CopyChoice { return fileio.MappedCopy() }

// DescribeMachine describes this machine and the file at path (its
// filesystem and block device). Fields it cannot find are left empty.
func DescribeMachine(path, iopathVersion string) Machine {
	m := Machine{
		Kernel:        machine.KernelRelease(),
		Arch:          runtime.GOARCH,
		CPUModel:      machine.CPUModel(),
		Cores:         machine.OnlineCPUs(),
		MemBytes:      memTotal(),
		PageSize:      sys.PageSize(),
		THP:           thpMode(),
		GoVersion:     runtime.Version(),
		IopathVersion: iopathVersion,
	}
	if path != "" {
		if magic, _, _, err := sys.Statfs(path); err == nil {
			m.Filesystem = machine.FSName(magic)
		}
		var st sys.Stat_t
		if err := sys.Stat(path, &st); err == nil {
			m.Device = blockDevice(uint64(st.Dev))
		}
	}
	if u := Probe().IOURing; u.Available {
		m.IOURing = "available"
	} else {
		m.IOURing = u.Reason
	}
	return m
}

func memTotal() int64 { return MemInfo("MemTotal") }

// MemInfo returns the /proc/meminfo field key ("MemTotal", "MemAvailable")
// in bytes, or 0 when it cannot be read.
func MemInfo(key string) int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			if f := strings.Fields(rest); len(f) >= 1 {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// blockDevice names the disk behind device number dev ("vda" for the
// partition vda1 too), or "" when dev is not a block device (tmpfs,
// overlayfs, NFS).
func blockDevice(dev uint64) string {
	dir := fmt.Sprintf("/sys/dev/block/%d:%d", sys.Major(dev), sys.Minor(dev))
	target, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(target, "partition")); err == nil {
		return filepath.Base(filepath.Dir(target))
	}
	return filepath.Base(target)
}
