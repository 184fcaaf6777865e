package perf

// Breakdown is where a run's CPU went, as shares of its samples (0 to 1,
// adding up to 1), with the number of samples they come from.
type Breakdown struct {
	Samples   int64   `json:"samples"`
	CPUNs     int64   `json:"cpu_ns"` // the CPU time the samples stand for
	User      float64 `json:"user"`
	GoRuntime float64 `json:"go_runtime"`
	Syscall   float64 `json:"syscall"`
	Copy      float64 `json:"copy"`
	Fault     float64 `json:"fault"`
	IOUring   float64 `json:"io_uring"`
	Poll      float64 `json:"poll"`
	Net       float64 `json:"net"`
	Kernel    float64 `json:"kernel"`
}

// Share is the share of kind k.
func (b *Breakdown) Share(k Kind) float64 {
	if p := b.field(k); p != nil {
		return *p
	}
	return 0
}

func (b *Breakdown) field(k Kind) *float64 {
	switch k {
	case User:
		return &b.User
	case Runtime:
		return &b.GoRuntime
	case Syscall:
		return &b.Syscall
	case Copy:
		return &b.Copy
	case Fault:
		return &b.Fault
	case IOUring:
		return &b.IOUring
	case Poll:
		return &b.Poll
	case Net:
		return &b.Net
	case Kernel:
		return &b.Kernel
	}
	return nil
}

// KernelShare is the share of every kind spent in the kernel: syscall
// entry/exit, copies, faults, io_uring, readiness polling, the network
// stack and the rest.
func (b *Breakdown) KernelShare() float64 {
	return b.Syscall + b.Copy + b.Fault + b.IOUring + b.Poll + b.Net + b.Kernel
}

// Machinery is the share of an I/O path's own machinery: syscall
// entry/exit, readiness polling, io_uring, and the program's code and Go
// runtime. The rest (the network stack, kernel copies, page faults, the
// rest of the kernel) is work that any path moving the same bytes the
// same way has the kernel do, so 1 − Machinery of one engine is what
// another would cost doing that work with no machinery at all.
func (b *Breakdown) Machinery() float64 {
	return b.Syscall + b.Poll + b.IOUring + b.User + b.GoRuntime
}

// Breakdown classifies every sample (see classify) and weighs it by its
// period.
func (s *Samples) Breakdown() Breakdown {
	var per [numKinds]int64
	var b Breakdown
	for i := range s.List {
		smp := &s.List[i]
		per[classify(s, smp)] += smp.Period
		b.CPUNs += smp.Period
	}
	b.Samples = int64(len(s.List))
	if b.CPUNs > 0 {
		for k := range per {
			*b.field(Kind(k)) = float64(per[k]) / float64(b.CPUNs)
		}
	}
	return b
}

// Merge is the breakdown of a's and b's samples together.
func Merge(a, b Breakdown) Breakdown {
	m := Breakdown{Samples: a.Samples + b.Samples, CPUNs: a.CPUNs + b.CPUNs}
	if m.CPUNs == 0 {
		return m
	}
	for _, k := range Kinds() {
		*m.field(k) = (a.Share(k)*float64(a.CPUNs) + b.Share(k)*float64(b.CPUNs)) / float64(m.CPUNs)
	}
	return m
}
