package report

import (
	"fmt"
	"strings"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/units"
)

// Descriptions shared by the renderers, so that every output names a
// workload or a machine the same way.

// workloadParts names a workload's parameters in order: "seq", "bs
// 128KiB", "1 worker", "qd 32", "consume none". Zero values are left out
// (qd 0: an engine without a queue).
func workloadParts(pattern string, bs, workers, qd int, consume string) []string {
	parts := []string{}
	if pattern != "" {
		parts = append(parts, pattern)
	}
	if bs > 0 {
		parts = append(parts, "bs "+units.FormatSize(int64(bs)))
	}
	if workers > 0 {
		parts = append(parts, plural(workers, "worker"))
	}
	if qd > 0 {
		parts = append(parts, fmt.Sprintf("qd %d", qd))
	}
	if consume != "" {
		parts = append(parts, "consume "+consume)
	}
	return parts
}

// hardwareParts describes a machine's CPU, cores, memory and filesystem:
// "Intel(R) Xeon(R) Processor", "2 cores", "24GiB RAM", "ext4 on vda".
// Unknown values are left out.
func hardwareParts(m features.Machine) []string {
	var parts []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	add(m.CPUModel)
	if m.Cores > 0 {
		add(plural(m.Cores, "core"))
	}
	if m.MemBytes > 0 {
		add(units.RoughSize(m.MemBytes) + " RAM")
	}
	fs := m.Filesystem
	if m.Device != "" {
		fs = strings.TrimSpace(fs + " on " + m.Device)
	}
	add(fs)
	return parts
}
