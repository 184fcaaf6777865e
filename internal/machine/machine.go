// Package machine names what a figure depends on besides the code: the
// CPU model, the online CPUs, the kernel release and the filesystem.
// features describes the machine with it, and internal/profile keys
// machine profiles by it.
package machine

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/iopath/iopath/internal/sys"
)

// CPUModel is the first "model name" of /proc/cpuinfo, or "". It reads
// no further than that line: the kernel makes the file one CPU at a time
// as it is read, and all of it costs a machine with many CPUs
// milliseconds.
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// OnlineCPUs counts /sys/devices/system/cpu/online ("0-3,6"), falling back
// to the CPUs this process may run on.
func OnlineCPUs() int {
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

// KernelRelease is uname's release ("6.18.44"), or "".
func KernelRelease() string {
	var u sys.Utsname
	if err := sys.Uname(&u); err != nil {
		return ""
	}
	b := u.Release[:]
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	return string(b)
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

// FSName names the filesystem of statfs f_type magic ("ext4"), or
// gives the magic in hex when it is not known.
func FSName(magic int64) string {
	if n, ok := fsMagic[magic]; ok {
		return n
	}
	return fmt.Sprintf("0x%x", magic)
}
