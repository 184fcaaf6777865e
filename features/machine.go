package features

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/iopath/iopath/internal/fileio"
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
}

// Placement is where buffered reads' buffers start past a page boundary
// and how that was chosen: measured on the machine by copying from memory
// into a buffer at each candidate skew, or set by IOPATH_BUFFER_SKEW. The
// best skew differs between CPUs (docs/engines.md).
type Placement = fileio.Placement

// BufferPlacement returns this process's buffer placement, measuring it
// on the first call (a few milliseconds).
func BufferPlacement() Placement { return fileio.BufferPlacement() }

// DescribeMachine describes this machine and the file at path (its
// filesystem and block device). Fields it cannot find are left empty.
func DescribeMachine(path, iopathVersion string) Machine {
	m := Machine{
		Kernel:        kernelRelease(),
		Arch:          runtime.GOARCH,
		CPUModel:      cpuModel(),
		Cores:         onlineCPUs(),
		MemBytes:      memTotal(),
		PageSize:      sys.PageSize(),
		THP:           thpMode(),
		GoVersion:     runtime.Version(),
		IopathVersion: iopathVersion,
	}
	if path != "" {
		if magic, _, _, err := sys.Statfs(path); err == nil {
			m.Filesystem = fsName(magic)
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

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// onlineCPUs counts /sys/devices/system/cpu/online ("0-3,6"), falling back
// to the CPUs this process may run on.
func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		z := a
		var err2 error
		if isRange {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return runtime.NumCPU()
		}
		n += z - a + 1
	}
	return n
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

// fsMagic maps statfs f_type to a filesystem name.
var fsMagic = map[int64]string{
	0xEF53:     "ext4", // also ext2 and ext3
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x01021994: "tmpfs",
	0x858458f6: "ramfs",
	0x794c7630: "overlayfs",
	0x6969:     "nfs",
	0x2fc12fc1: "zfs",
	0xF2F52010: "f2fs",
	0xCA451A4E: "bcachefs",
	0x65735546: "fuse",
	0xFF534D42: "cifs",
	0xFE534D42: "smb2",
	0x01021997: "9p",
	0x73717368: "squashfs",
	0xE0F5E1E2: "erofs",
	0x00C36400: "ceph",
	0x2011BAB0: "exfat",
	0x4d44:     "vfat",
	0x5346544e: "ntfs",
	0x9fa0:     "proc",
	0x62656572: "sysfs",
}

func fsName(magic int64) string {
	if n, ok := fsMagic[magic]; ok {
		return n
	}
	return fmt.Sprintf("0x%x", magic)
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
