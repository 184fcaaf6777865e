package metrics

import (
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// Usage is the resource usage of a process over an interval.
type Usage struct {
	User   time.Duration `json:"user_ns"`
	System time.Duration `json:"sys_ns"`
	MinFlt int64         `json:"minflt"`
	MajFlt int64         `json:"majflt"`
	NVCSw  int64         `json:"nvcsw"`
	NIVCSw int64         `json:"nivcsw"`
}

// SelfUsage returns the calling process's usage so far (all its threads,
// including io_uring's io-wq workers, which are threads of the process).
func SelfUsage() (Usage, error) {
	var ru sys.Rusage
	if err := sys.Getrusage(sys.RUSAGE_SELF, &ru); err != nil {
		return Usage{}, err
	}
	return Usage{
		User:   time.Duration(ru.Utime.Nano()),
		System: time.Duration(ru.Stime.Nano()),
		MinFlt: ru.Minflt,
		MajFlt: ru.Majflt,
		NVCSw:  ru.Nvcsw,
		NIVCSw: ru.Nivcsw,
	}, nil
}

// Sub returns u - o.
func (u Usage) Sub(o Usage) Usage {
	return Usage{
		User:   u.User - o.User,
		System: u.System - o.System,
		MinFlt: u.MinFlt - o.MinFlt,
		MajFlt: u.MajFlt - o.MajFlt,
		NVCSw:  u.NVCSw - o.NVCSw,
		NIVCSw: u.NIVCSw - o.NIVCSw,
	}
}
