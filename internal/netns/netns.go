// Package netns makes the network namespaces the echo benchmark runs in
// under packet loss (net bench --loss): a namespace of its own, its
// loopback up, and an nftables rule on its prerouting hook that drops a
// share of the packets as they arrive (on loopback every packet arrives
// through prerouting once, so requests and echoes both lose that share).
// Nothing outside the namespace is touched, and Close removes it whole:
// its rules go with it.
//
// The rule drops on arrival, not on the output hook where the sender
// would see it: a packet dropped on output is an error to the sending
// stack (EPERM from ip_local_out), not a loss, and TCP treats the two
// differently. A listener whose SYN-ACK retransmission fails that way
// drops the half-open connection at once (reqsk_timer_handler), so a
// client whose handshake ACK was lost and who then stays silent for a few
// seconds gets a reset for its first request: about 1 connection in 100
// at 10% loss here, with plain Go sockets too. Dropped on arrival, as a
// network drops them, the same clients all connect (0 resets in 1000).
//
// It drives iproute2's ip and nftables' nft (Debian: iproute2, nftables)
// and needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN); Check says why not.
package netns

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// ErrUnavailable is wrapped by Check's errors: no root, no ip, no nft.
var ErrUnavailable = errors.New("network namespaces with packet loss are not available here")

// Check says whether this process can make namespaces with loss, and if
// not, why and how to allow it.
func Check() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: making a network namespace needs root", ErrUnavailable)
	}
	for _, t := range []struct{ bin, pkg string }{{"ip", "iproute2"}, {"nft", "nftables"}} {
		if _, err := exec.LookPath(t.bin); err != nil {
			return fmt.Errorf("%w: %s is not installed (Debian: apt-get install %s)", ErrUnavailable, t.bin, t.pkg)
		}
	}
	return nil
}

// NS is a namespace made by New.
type NS struct {
	Name string
	Loss float64 // the share of packets dropped New set, 0 to 1 (SetLoss leaves it)
}

// MaxLoss bounds New's loss: at 100% nothing would connect.
const MaxLoss = 0.95

// New makes namespace name with its loopback up and, when loss > 0, the
// rule that drops that share of its packets (to 0.01%). On failure
// nothing is left.
func New(ctx context.Context, name string, loss float64) (*NS, error) {
	if loss < 0 || loss > MaxLoss {
		return nil, fmt.Errorf("netns: loss %v: want 0 to %v", loss, MaxLoss)
	}
	if err := run(ctx, nil, "ip", "netns", "add", name); err != nil {
		return nil, err
	}
	ns := &NS{Name: name, Loss: loss}
	if err := run(ctx, nil, "ip", "-n", name, "link", "set", "lo", "up"); err != nil {
		ns.Close()
		return nil, err
	}
	if loss > 0 {
		if err := ns.SetLoss(ctx, loss); err != nil {
			ns.Close()
			return nil, err
		}
	}
	return ns, nil
}

// SetLoss changes the share of packets dropped, at once and in one
// step (one nftables transaction: the old rule goes as the new one
// comes); 0 removes the rule.
func (ns *NS) SetLoss(ctx context.Context, loss float64) error {
	if loss < 0 || loss > MaxLoss {
		return fmt.Errorf("netns: loss %v: want 0 to %v", loss, MaxLoss)
	}
	// Declaring the table first makes its deletion succeed whether it
	// exists or not.
	rules := "table inet iopath_loss\ndelete table inet iopath_loss\n"
	if loss > 0 {
		// numgen random mod 10000 < N: N in 10,000 packets dropped,
		// on arrival (see the package comment), before anything
		// else sees them (priority raw).
		rules += fmt.Sprintf("table inet iopath_loss {\n\tchain in {\n\t\ttype filter hook prerouting priority raw; policy accept;\n\t\tnumgen random mod 10000 < %d drop\n\t}\n}\n",
			int(loss*10000+0.5))
	}
	if err := run(ctx, strings.NewReader(rules), "ip", "netns", "exec", ns.Name, "nft", "-f", "-"); err != nil {
		return err
	}
	return nil
}

// Command makes cmd (not started) run inside the namespace, through ip
// netns exec, which enters it and execs the program: the process keeps
// cmd's pid, environment and attributes.
func (ns *NS) Command(cmd *exec.Cmd) error {
	ip, err := exec.LookPath("ip")
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	args := append([]string{ip, "netns", "exec", ns.Name, cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = ip, args
	return nil
}

// Close removes the namespace; the processes still in it keep it alive
// until they end, without a name. It may be called more than once.
func (ns *NS) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := run(ctx, nil, "ip", "netns", "del", ns.Name); err != nil && Exists(ns.Name) {
		return err
	}
	return nil
}

// Sysctl sets a network sysctl of the namespace: key is its path under
// /proc/sys ("net/ipv4/tcp_rto_max_ms"). It is written from a thread that
// has entered the namespace (/proc/sys/net shows the writer's), which the
// runtime then ends: no other goroutine ever runs in it. An error
// wrapping fs.ErrNotExist says this kernel has no such sysctl.
func (ns *NS) Sysctl(key, value string) error {
	if strings.Contains(key, "..") || !strings.HasPrefix(key, "net/") {
		return fmt.Errorf("netns: sysctl %q: not a network sysctl", key)
	}
	done := make(chan error, 1)
	go func() {
		// No UnlockOSThread: the thread leaves the root namespace for
		// good, so it must end with this goroutine.
		runtime.LockOSThread()
		done <- ns.sysctl(key, value)
	}()
	return <-done
}

func (ns *NS) sysctl(key, value string) error {
	f, err := os.Open("/run/netns/" + ns.Name)
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	defer f.Close()
	if err := sys.EnterNetns(int(f.Fd())); err != nil {
		return fmt.Errorf("netns: enter %s: %w", ns.Name, err)
	}
	if err := os.WriteFile("/proc/sys/"+key, []byte(value), 0); err != nil {
		return fmt.Errorf("netns: %s: sysctl %s=%s: %w", ns.Name, strings.ReplaceAll(key, "/", "."), value, err)
	}
	return nil
}

// Name is the name of the i-th namespace of process pid: "iopath-PID-I".
func Name(pid, i int) string { return fmt.Sprintf("iopath-%d-%d", pid, i) }

// RemoveStale removes the namespaces named by Name whose process is gone:
// one killed outright (SIGKILL, a crash) cannot remove its own. It
// returns the names it removed. A namespace whose process is alive, or
// whose pid another process has taken since, is left alone: it may be in
// use.
func RemoveStale(ctx context.Context) ([]string, error) {
	ents, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		var pid, i int
		if n, _ := fmt.Sscanf(e.Name(), "iopath-%d-%d", &pid, &i); n != 2 || Name(pid, i) != e.Name() {
			continue
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			continue
		}
		if err := run(ctx, nil, "ip", "netns", "del", e.Name()); err != nil && Exists(e.Name()) {
			return removed, err
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

// Exists says whether a namespace of that name exists (ip netns list).
func Exists(name string) bool {
	_, err := os.Stat("/run/netns/" + name)
	return err == nil
}

// Retransmits is the number of TCP segments retransmitted so far in the
// network namespace of process pid (RetransSegs in /proc/PID/net/snmp:
// /proc/PID/net shows that process's namespace).
func Retransmits(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/snmp")
	if err != nil {
		return 0, err
	}
	var head []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "Tcp:" {
			continue
		}
		if head == nil {
			head = f
			continue
		}
		for i, h := range head {
			if h == "RetransSegs" && i < len(f) {
				return strconv.ParseInt(f[i], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("netns: no RetransSegs in /proc/%d/net/snmp", pid)
}

// run runs a tool, its error one line with what it said.
func run(ctx context.Context, stdin *strings.Reader, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return fmt.Errorf("netns: %s %s: %v: %s", name, strings.Join(args, " "), err, msg)
	}
	return nil
}
