package netns

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestNamespaceWithLoss(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("%v", err)
	}
	ctx := context.Background()
	name := fmt.Sprintf("iopath-test-%d", os.Getpid())
	ns, err := New(ctx, name, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if !Exists(name) {
		t.Fatal("no namespace after New")
	}
	out, err := exec.Command("ip", "netns", "exec", name, "nft", "list", "ruleset").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "numgen random mod 10000 < 3000") {
		t.Fatalf("the namespace's rules (%v):\n%s", err, out)
	}
	// The root namespace's rules are not touched.
	if out, _ := exec.Command("nft", "list", "ruleset").CombinedOutput(); strings.Contains(string(out), "iopath_loss") {
		t.Fatalf("the rule is in the root namespace:\n%s", out)
	}
	// A process run inside sees the namespace's counters.
	cmd := exec.Command("sleep", "10")
	if err := ns.Command(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	deadline := time.Now().Add(5 * time.Second)
	for {
		self, _ := os.Readlink("/proc/self/ns/net")
		its, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid))
		if its != "" && its != self {
			break // ip has entered the namespace and exec'd sleep
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never entered the namespace")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n, err := Retransmits(cmd.Process.Pid); err != nil || n != 0 {
		t.Errorf("a new namespace's retransmits: %d, %v", n, err)
	}
	if err := ns.Close(); err != nil || Exists(name) {
		t.Fatalf("Close: %v; exists after: %v", err, Exists(name))
	}
	if err := ns.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, l := range []float64{-0.1, 0.96, 2} {
		if _, err := New(context.Background(), "iopath-never", l); err == nil || !strings.Contains(err.Error(), "want 0 to") {
			t.Errorf("loss %v: %v", l, err)
		}
	}
	if Exists("iopath-never") {
		t.Error("a refused New made a namespace")
	}
}

// The loss is real and looks like a network's: datagrams sent on the
// namespace's loopback arrive about 1-loss of the time, and no send
// fails (a rule on the output hook would make a dropped send EPERM, which
// TCP treats as an error, not a loss: see the package comment). SetLoss
// changes it, and 0 drops nothing.
func TestLossOnArrival(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("%v", err)
	}
	name := fmt.Sprintf("iopath-test-arrival-%d", os.Getpid())
	ctx := context.Background()
	ns, err := New(ctx, name, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	const sent = 4000
	// 30% of 4000: a standard deviation of 29 datagrams; 0.6-0.8 is far
	// outside chance.
	for _, step := range []struct {
		loss     float64
		min, max float64
	}{{0.3, 0.6, 0.8}, {0, 1, 1}, {0.9, 0.05, 0.15}, {0, 1, 1}} {
		if step.loss != 0.3 {
			if err := ns.SetLoss(ctx, step.loss); err != nil {
				t.Fatal(err)
			}
		}
		got, sendErrs, err := datagrams(name, sent)
		if err != nil {
			t.Fatal(err)
		}
		if sendErrs != 0 {
			t.Errorf("loss %v: %d of %d sends failed: the loss is seen by the sender", step.loss, sendErrs, sent)
		}
		if share := float64(got) / sent; share < step.min || share > step.max {
			t.Errorf("loss %v: %d of %d datagrams arrived (%.2f), want %.2f to %.2f", step.loss, got, sent, share, step.min, step.max)
		}
	}
	if err := ns.SetLoss(ctx, 1); err == nil {
		t.Error("SetLoss(1) accepted")
	}
}

// datagrams sends n datagrams to itself on the loopback of namespace
// name, and says how many arrived and how many sends failed.
func datagrams(name string, n int) (got, sendErrs int, err error) {
	done := make(chan error, 1)
	go func() {
		// This thread enters the namespace and is never used again
		// (no UnlockOSThread: the runtime ends it with the goroutine).
		runtime.LockOSThread()
		done <- func() error {
			f, err := os.Open("/run/netns/" + name)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("setns: %w", err)
			}
			rx, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(rx)
			unix.SetsockoptInt(rx, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
			if err := unix.Bind(rx, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
				return err
			}
			sa, err := unix.Getsockname(rx)
			if err != nil {
				return err
			}
			tx, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(tx)
			msg := []byte("iopath")
			for range n {
				if err := unix.Sendto(tx, msg, 0, sa); err != nil {
					sendErrs++
				}
			}
			buf := make([]byte, 64)
			for {
				if _, _, err := unix.Recvfrom(rx, buf, unix.MSG_DONTWAIT); err != nil {
					return nil
				}
				got++
			}
		}()
	}()
	err = <-done
	return got, sendErrs, err
}

// Sysctl sets the namespace's value and not the root namespace's, and
// says so when the kernel has no such sysctl.
func TestSysctl(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("%v", err)
	}
	name := fmt.Sprintf("iopath-test-sysctl-%d", os.Getpid())
	ns, err := New(context.Background(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	const key = "net/ipv4/tcp_syn_retries" // in every kernel iopath runs on
	root, err := os.ReadFile("/proc/sys/" + key)
	if err != nil {
		t.Fatal(err)
	}
	want := "3"
	if strings.TrimSpace(string(root)) == want {
		want = "4"
	}
	if err := ns.Sysctl(key, want); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ip", "netns", "exec", name, "cat", "/proc/sys/"+key).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("the namespace's %s: %q (%v), want %s", key, out, err, want)
	}
	if now, _ := os.ReadFile("/proc/sys/" + key); string(now) != string(root) {
		t.Errorf("the root namespace's %s changed: %q, was %q", key, now, root)
	}
	if err := ns.Sysctl("net/ipv4/iopath_no_such", "1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a sysctl this kernel lacks: %v, want fs.ErrNotExist", err)
	}
	if err := ns.Sysctl("kernel/hostname", "x"); err == nil {
		t.Error("a sysctl outside net/ was written")
	}
}

// TestRemoveStale: a namespace whose process is gone (killed before it
// could remove it) is removed; one of a live process, and one not named
// by Name, are left.
func TestRemoveStale(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("%v", err)
	}
	ctx := context.Background()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	var made []*NS
	for _, name := range []string{Name(dead.Process.Pid, 0), Name(os.Getpid(), 99), fmt.Sprintf("iopath-test-%d", os.Getpid())} {
		ns, err := New(ctx, name, 0)
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, ns)
	}
	defer func() {
		for _, ns := range made {
			ns.Close()
		}
	}()
	removed, err := RemoveStale(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != made[0].Name || Exists(made[0].Name) {
		t.Errorf("removed %q; want just %s", removed, made[0].Name)
	}
	for _, ns := range made[1:] {
		if !Exists(ns.Name) {
			t.Errorf("%s was removed", ns.Name)
		}
	}
}
