package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/netns"
)

// namespacesOf lists the network namespaces made by the iopath process
// pid (netbench names them iopath-PID-N).
func namespacesOf(pid int) []string {
	ents, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), fmt.Sprintf("iopath-%d-", pid)) {
			out = append(out, e.Name())
		}
	}
	return out
}

// Ctrl-C during net bench --loss, once or twice: the command stops within
// a second and leaves no namespace (with its nftables rule) and no child.
func TestNetBenchLossInterrupt(t *testing.T) {
	if err := netns.Check(); err != nil {
		t.Skipf("--loss: %v", err)
	}
	args := []string{"net", "bench", "--loss", "0,10%", "--engines", "epoll", "--conns", "2", "--sizes", "64",
		"--modes", "pingpong", "--duration", "1h", "--warmup", "0s"}
	for _, c := range []struct {
		name  string
		again bool
		env   []string
		want  string
	}{
		{"once", false, nil, "net bench: interrupted; nothing measured"},
		// Only the second signal can stop it in time: the namespace goes
		// with the command's exit path, not the bench's.
		{"twice", true, []string{stopGraceEnv + "=1m"}, "interrupted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startCLIPipe(t, c.env, args...)
			p.alone = !c.again                                                      // a second signal ends the command at once, before its children
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.cmd.Process.Pid)) // its children are this program too
			p.waitFor("a server and a load generator in a namespace", func() bool {
				return len(namespacesOf(p.cmd.Process.Pid)) > 0 &&
					len(inOtherNetns(groupPIDs(p.cmd.Process.Pid), strings.TrimSpace(string(comm)))) >= 2
			})
			pid := p.cmd.Process.Pid
			p.checkInterrupted(p.interrupt(c.again), c.want)
			if left := namespacesOf(pid); len(left) > 0 {
				t.Errorf("namespaces left: %v", left)
				for _, name := range left {
					(&netns.NS{Name: name}).Close()
				}
			}
		})
	}
}

// inOtherNetns lists the processes of pids named comm that run in
// another network namespace than this process.
func inOtherNetns(pids []int, comm string) []int {
	self, _ := os.Readlink("/proc/self/ns/net")
	var out []int
	for _, pid := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		if strings.TrimSpace(string(b)) == comm && ns != "" && ns != self {
			out = append(out, pid)
		}
	}
	return out
}

// A namespace registered with the cleanup set is removed by its run (the
// way out of a command stopped at once by a second Ctrl-C), and one
// forgotten is left to its owner.
func TestCleanupRemovesNetns(t *testing.T) {
	if err := netns.Check(); err != nil {
		t.Skipf("--loss: %v", err)
	}
	var c cleanupSet
	var names []string
	for i := range 2 {
		name := fmt.Sprintf("iopath-test-cleanup-%d-%d", os.Getpid(), i)
		ns, err := netns.New(context.Background(), name, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		defer ns.Close()
		names = append(names, name)
	}
	c.removeNetnsOnExit(names[0])
	forget := c.removeNetnsOnExit(names[1])
	forget()
	c.run()
	if netns.Exists(names[0]) {
		t.Errorf("%s registered, and left by run", names[0])
	}
	if !netns.Exists(names[1]) {
		t.Errorf("%s forgotten, and removed by run", names[1])
	}
}

func TestParseLoss(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		err  string
	}{
		{"0", 0, ""}, {"0%", 0, ""}, {"1%", 0.01, ""}, {" 30% ", 0.3, ""}, {"0.5%", 0.005, ""}, {"95%", 0.95, ""},
		{"10", 0, "want a percentage"}, {"0.1", 0, "want a percentage"}, {"96%", 0, "want 0% to 95%"},
		{"-1%", 0, "want 0% to 95%"}, {"x%", 0, "want 0% to 95%"}, {"NaN%", 0, "want 0% to 95%"}, {"", 0, "want a percentage"},
	} {
		got, err := parseLoss(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseLoss(%q) = %v, %v; want an error saying %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseLoss(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}
