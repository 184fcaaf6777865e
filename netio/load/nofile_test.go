package load

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// nofileHelperEnv makes the test binary a child that lowers its own
// RLIMIT_NOFILE, hard limit included (which cannot be undone without
// CAP_SYS_RESOURCE, hence a child), and asks Run for more connections
// than that allows.
const nofileHelperEnv = "IOPATH_LOAD_NOFILE_HELPER"

const nofileHelperLimit = 300

func nofileHelper() int {
	rl := sys.Rlimit{Cur: nofileHelperLimit, Max: nofileHelperLimit}
	if err := sys.Setrlimit(sys.RLIMIT_NOFILE, &rl); err != nil {
		fmt.Println("setrlimit:", err)
		return 1
	}
	// With CAP_SYS_RESOURCE the hard limit goes back up, and Run would
	// just raise it: the path under test cannot be reached.
	rl.Max++
	if sys.Setrlimit(sys.RLIMIT_NOFILE, &rl) == nil {
		fmt.Println("SKIP: this process may raise its hard RLIMIT_NOFILE (CAP_SYS_RESOURCE)")
		return 0
	}
	_, err := Run(context.Background(), Config{
		// Nothing listens there: the check must come before any dial.
		Addr: "127.0.0.1:9", Conns: 1000, Size: 64,
		Mode: Mode{Kind: PingPong, Depth: 1}, Duration: time.Second,
	})
	fmt.Println("ERR:", err)
	return 0
}

func TestNofileLimit(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), nofileHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	s := string(out)
	if strings.HasPrefix(s, "SKIP: ") {
		t.Skip(strings.TrimPrefix(s, "SKIP: "))
	}
	for _, want := range []string{
		"ERR: load: 1000 connections need 1200 open files, but RLIMIT_NOFILE is 300 (hard limit 300)",
		"ulimit -n 1200", "prlimit", "/etc/security/limits.conf",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("helper said %q; want it to say %q", s, want)
		}
	}
}

// TestNofileSoft: a soft limit below what is needed but a hard limit
// above it is raised, not reported.
func TestNofileSoft(t *testing.T) {
	var saved sys.Rlimit
	if err := sys.Getrlimit(sys.RLIMIT_NOFILE, &saved); err != nil {
		t.Fatal(err)
	}
	if saved.Max < 1200 {
		t.Skipf("hard RLIMIT_NOFILE is %d, below the 1200 this test needs", saved.Max)
	}
	defer sys.Setrlimit(sys.RLIMIT_NOFILE, &saved)
	low := sys.Rlimit{Cur: 256, Max: saved.Max}
	if err := sys.Setrlimit(sys.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	if err := checkNofile(1000); err != nil {
		t.Fatal(err)
	}
	soft, _, _ := sys.Nofile()
	if soft < 1200 {
		t.Errorf("soft limit %d after checkNofile(1000)", soft)
	}
}
