package perf

import (
	"errors"
	"strings"
	"testing"
)

const scriptOut = `iopath 3450   122.282989547:     250000 
	            8bc7 check_match (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)

iou-wrk-3450  3460   122.283213048:     250000 
	ffffffff814555f6 _copy_to_iter ([kernel.kallsyms])
	ffffffff8168df0b filemap_read ([kernel.kallsyms])
	ffffffff81000c82 io_read ([kernel.kallsyms])

my thread 3451   122.284714180:     250000 
	           17b2d runtime.(*stkframe).getStackMap (/tmp/iop)
	           cb6c5 go.shape.[...] (x) (/tmp/iop)
	           deadbeef [unknown] (/tmp/iop)
	           12345 ([unknown])

`

func TestParse(t *testing.T) {
	s, err := Parse(strings.NewReader(scriptOut))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.List) != 3 {
		t.Fatalf("%d samples, want 3", len(s.List))
	}
	a, b, c := s.List[0], s.List[1], s.List[2]
	if a.Comm != "iopath" || a.TID != 3450 || a.Time != 122282989547 || a.Period != 250000 || len(a.Stack) != 1 {
		t.Errorf("first sample %+v", a)
	}
	if b.Comm != "iou-wrk-3450" || len(b.Stack) != 3 || s.Frames[b.Stack[0]] != (Frame{Func: "_copy_to_iter", DSO: "[kernel.kallsyms]", Kernel: true}) {
		t.Errorf("second sample %+v, leaf %+v", b, s.Frames[b.Stack[0]])
	}
	if c.Comm != "my thread" || len(c.Stack) != 4 {
		t.Fatalf("third sample %+v", c)
	}
	want := []Frame{
		{Func: "runtime.(*stkframe).getStackMap", DSO: "/tmp/iop"},
		{Func: "go.shape.[...] (x)", DSO: "/tmp/iop"},
		{Func: "[unknown]", DSO: "/tmp/iop"},
		{Func: "[unknown]", DSO: "[unknown]"},
	}
	for i, w := range want {
		if got := s.Frames[c.Stack[i]]; got != w {
			t.Errorf("frame %d = %+v, want %+v", i, got, w)
		}
	}
	if got := s.CPU(); got != 750000 {
		t.Errorf("CPU = %d", got)
	}
	if w := s.Window(122283000000, 122284000000); len(w.List) != 1 || w.List[0].TID != 3460 {
		t.Errorf("window holds %+v", w.List)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, in := range []string{
		"\tffff81 frame_before_header ([kernel.kallsyms])\n",
		"iopath 12 notatime: 250000\n",
		"iopath 12 1.000000001: 250000\n\tnothex sym (dso)\n",
		"iopath 12 1.000000001: 250000\n\tffff81 sym without dso\n",
	} {
		if _, err := Parse(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "perf script line") {
			t.Errorf("Parse(%q) = %v, want an error naming the line", in, err)
		}
	}
}

// stack builds a sample from frames written leaf first; a name with a
// "k:" prefix is a kernel frame.
func stack(s *Samples, names ...string) {
	smp := Sample{Comm: "t", Period: 1}
	for _, n := range names {
		f := Frame{Func: n, DSO: "/bin/x"}
		if k, ok := strings.CutPrefix(n, "k:"); ok {
			f = Frame{Func: k, DSO: "[kernel.kallsyms]", Kernel: true}
		}
		smp.Stack = append(smp.Stack, s.frame(f))
	}
	s.List = append(s.List, smp)
}

func TestClassify(t *testing.T) {
	cases := []struct {
		want  Kind
		stack []string
	}{
		{Copy, []string{"k:rep_movs_alternative", "k:_copy_to_iter", "k:filemap_read", "k:do_syscall_64", "internal/runtime/syscall/linux.Syscall6"}},
		{Copy, []string{"k:__pi_memcpy", "k:_copy_to_iter", "k:io_read"}},
		{Fault, []string{"k:clear_page_erms", "k:do_anonymous_page", "k:handle_mm_fault", "k:asm_exc_page_fault", "k:_copy_to_iter"}},
		{Fault, []string{"k:filemap_map_pages", "k:do_fault", "k:exc_page_fault", "k:asm_exc_page_fault", "runtime.memmove"}},
		{Net, []string{"k:_raw_spin_lock_bh", "k:lock_sock_nested", "k:tcp_sendmsg", "k:__sys_sendto"}},
		{Net, []string{"k:__local_bh_enable_ip", "k:ip_finish_output2", "k:__io_issue_sqe"}},
		{IOUring, []string{"k:_raw_spin_unlock_irqrestore", "k:io_submit_sqes", "k:__x64_sys_io_uring_enter"}},
		{IOUring, []string{"k:io_worker_handle_work", "k:io_wq_worker", "k:ret_from_fork"}},
		// epoll_wait's readiness checks are readiness polling, though
		// tcp_poll is TCP's code; io_uring's own poll requests stay io_uring's.
		{Poll, []string{"k:tcp_poll", "k:sock_poll", "k:ep_item_poll", "k:ep_send_events", "k:do_epoll_wait", "k:__x64_sys_epoll_pwait"}},
		{Poll, []string{"k:_raw_spin_unlock_irqrestore", "k:ep_poll_callback", "k:__wake_up_common", "k:sock_def_readable", "k:tcp_data_queue"}},
		{Poll, []string{"k:_raw_spin_lock", "k:do_sys_poll", "k:__x64_sys_ppoll"}},
		{Poll, []string{"k:tcp_poll", "k:sock_poll", "k:io_poll_check_events", "k:io_poll_task_func"}},
		{IOUring, []string{"k:io_poll_task_func", "k:io_handle_tw_list", "k:__io_run_local_work"}},
		{Net, []string{"k:__napi_poll", "k:net_rx_action", "k:handle_softirqs"}},
		// A wait's context switch is the scheduler's, whoever waits.
		{Kernel, []string{"k:finish_task_switch.isra.0", "k:__schedule", "k:schedule", "k:schedule_hrtimeout_range_clock", "k:do_epoll_wait"}},
		{Kernel, []string{"k:_raw_spin_unlock_irq", "k:__schedule", "k:schedule", "k:io_cqring_wait", "k:__do_sys_io_uring_enter"}},
		{Kernel, []string{"k:finish_task_switch.isra.0", "k:__schedule", "k:schedule", "k:exit_to_user_mode_loop", "k:do_syscall_64"}},
		{Net, []string{"k:queue_work_on", "k:schedule_work", "k:tcp_v4_rcv"}},
		{Kernel, []string{"k:_raw_spin_unlock_irqrestore", "k:io_schedule", "k:folio_wait_bit", "k:filemap_read", "k:io_read"}},
		{Kernel, []string{"k:filemap_get_read_batch", "k:filemap_read", "k:vfs_read"}},
		{Kernel, []string{"k:some_generic_helper"}},
		{Syscall, []string{"k:entry_SYSCALL_64_after_hwframe", "internal/runtime/syscall/linux.Syscall6"}},
		{Syscall, []string{"k:_raw_spin_lock", "k:syscall_exit_to_user_mode", "k:do_syscall_64"}},
		{Syscall, []string{"internal/runtime/syscall/linux.Syscall6", "syscall.Syscall"}},
		{Runtime, []string{"runtime.mallocgc", "main.f"}},
		{Runtime, []string{"internal/runtime/maps.(*Map).Get", "main.f"}},
		{User, []string{"runtime.memmove", "engine.copy"}},
		{User, []string{"github.com/zeebo/xxh3.accumAVX512.abi0"}},
		{User, nil},
	}
	for _, c := range cases {
		s := &Samples{index: map[Frame]int32{}}
		stack(s, c.stack...)
		if got := classify(s, &s.List[0]); got != c.want {
			t.Errorf("%v: %v, want %v", c.stack, got, c.want)
		}
	}
}

func TestBreakdownAndMerge(t *testing.T) {
	s := &Samples{index: map[Frame]int32{}}
	stack(s, "k:rep_movs_alternative")
	stack(s, "k:rep_movs_alternative")
	stack(s, "main.f")
	stack(s, "runtime.mallocgc")
	b := s.Breakdown()
	if b.Samples != 4 || b.CPUNs != 4 || b.Copy != 0.5 || b.User != 0.25 || b.GoRuntime != 0.25 {
		t.Fatalf("%+v", b)
	}
	sum := 0.0
	for _, k := range Kinds() {
		sum += b.Share(k)
	}
	if sum != 1 || b.KernelShare() != 0.5 || b.Machinery() != 0.5 {
		t.Errorf("shares add up to %v, kernel %v, machinery %v", sum, b.KernelShare(), b.Machinery())
	}
	m := Merge(b, Breakdown{Samples: 4, CPUNs: 4, Net: 1})
	if m.Samples != 8 || m.Copy != 0.25 || m.Net != 0.5 {
		t.Errorf("merged %+v", m)
	}
	if z := Merge(Breakdown{}, Breakdown{}); z.Samples != 0 || z.User != 0 {
		t.Errorf("merge of nothing %+v", z)
	}
	for _, k := range Kinds() {
		if pk, ok := ParseKind(k.String()); !ok || pk != k || k.Label() == "" {
			t.Errorf("kind %d: %q %q", k, k.String(), k.Label())
		}
	}
}

func TestFlame(t *testing.T) {
	s := &Samples{index: map[Frame]int32{}}
	for range 300 {
		stack(s, "k:rep_movs_alternative", "k:filemap_read", "main.read", "main.main")
	}
	stack(s, "main.rare", "main.main")
	f := NewFlame()
	f.Add(s)
	if f.Value != 301 || len(f.Children) != 1 || f.Children[0].Name != "main.main" || f.Children[0].Value != 301 {
		t.Fatalf("tree %+v", f)
	}
	p := f.Prune(0.005)
	mm := p.Children[0]
	if len(mm.Children) != 1 || mm.Children[0].Name != "main.read" {
		t.Fatalf("pruned tree keeps %+v", mm.Children)
	}
	leaf := mm.Children[0].Children[0].Children[0]
	if leaf.Name != "rep_movs_alternative" || leaf.Kind != "copy" || leaf.Value != 300 {
		t.Errorf("leaf %+v", leaf)
	}
	if f.Count() != 6 || p.Count() != 5 {
		t.Errorf("counts %d, %d", f.Count(), p.Count())
	}
	m := NewFlame()
	m.Merge(p)
	m.Merge(f)
	m.Merge(nil)
	if m.Value != 602 || m.Count() != 6 || m.Children[0].Children[0].Name != "main.read" || m.Children[0].Children[0].Value != 600 {
		t.Errorf("merged tree: %d samples, %d nodes", m.Value, m.Count())
	}
}

func TestThreadName(t *testing.T) {
	for in, want := range map[string]string{"iou-wrk-1234": "iou-wrk", "iopath": "iopath", "a-b": "a-b", "x-": "x-", "-12": "-12"} {
		if got := threadName(in); got != want {
			t.Errorf("threadName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKernelFrames(t *testing.T) {
	for _, c := range []struct {
		info Info
		want string // "" for allowed
	}{
		{Info{Privileged: true, Paranoid: 2, KptrRestrict: 1}, ""},
		{Info{Privileged: true, Paranoid: 4, KptrRestrict: 2}, "kernel.kptr_restrict is 2, which hides kernel symbols even from root; allow them with sysctl kernel.kptr_restrict=0"},
		{Info{Paranoid: 1, KptrRestrict: 0}, ""},
		{Info{Paranoid: -1, KptrRestrict: 0}, ""},
		{Info{Paranoid: 2, KptrRestrict: 0}, "kernel.perf_event_paranoid is 2, which hides kernel frames from this user; allow them with sysctl kernel.perf_event_paranoid=1 (or run as root)"},
		{Info{Paranoid: 3, KptrRestrict: 0}, "kernel.perf_event_paranoid is 3"},
		{Info{Paranoid: 1, KptrRestrict: 1}, "kernel.kptr_restrict is 1, which hides kernel symbols from this user; allow them with sysctl kernel.kptr_restrict=0 (or run as root)"},
	} {
		err := c.info.kernelFrames()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v, want allowed", c.info, err)
		case c.want != "" && (!errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want %q", c.info, err, c.want)
		}
	}
}
