package features

// Machine describes the machine and file a result was measured on. It is
// recorded with every result so that figures can be compared honestly.
type Machine struct {
	Kernel        string `json:"kernel"`          // uname release, e.g. "6.18.44"
	Arch          string `json:"arch"`            // GOARCH
	CPUModel      string `json:"cpu_model"`       // from /proc/cpuinfo
	Cores         int    `json:"cores"`           // online CPUs
	MemBytes      int64  `json:"mem_bytes"`       // MemTotal
	PageSize      int    `json:"page_size"`       // bytes
	THP           string `json:"thp"`             // transparent hugepage mode: always, madvise, never
	Filesystem    string `json:"filesystem"`      // of the measured file: ext4, xfs, tmpfs, ...
	Device        string `json:"device"`          // block device backing it, e.g. "vda", or "" when none
	IOURing       string `json:"io_uring"`        // "available", or why not
	GoVersion     string `json:"go_version"`      // runtime.Version()
	IopathVersion string `json:"iopath_version"`  // main.version or the module's build info
}
