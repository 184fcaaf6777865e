package load

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
)

// checkListens makes sure process pid holds a socket listening on addr's
// port, so that a ServerPID that names another process is an error before
// the run rather than a wrong CPU figure after it. It looks at the
// process's own view (/proc/PID/net/tcp and tcp6, /proc/PID/fd), and only
// when the process is in this process's network namespace: behind a port
// mapping (a container) the port it listens on is not the one dialled,
// and where /proc does not say (another user's process) there is nothing
// to check. A server that takes its connections from a proxy in front of
// it fails the check: give the pid of the process that listens.
func checkListens(pid int, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil // Validate has checked it
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil
	}
	proc := "/proc/" + strconv.Itoa(pid)
	self, err1 := os.Readlink("/proc/self/ns/net")
	theirs, err2 := os.Readlink(proc + "/ns/net")
	if err1 != nil || err2 != nil || self != theirs {
		return nil
	}
	inodes := map[string]bool{}
	for _, f := range []string{"/net/tcp", "/net/tcp6"} {
		if err := listeningInodes(proc+f, p, inodes); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // no IPv6 here
			}
			return nil
		}
	}
	fds, err := os.ReadDir(proc + "/fd")
	if err != nil {
		return nil
	}
	for _, fd := range fds {
		link, err := os.Readlink(proc + "/fd/" + fd.Name())
		if err != nil {
			continue // closed meanwhile
		}
		if ino, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(ino, "]")] {
			return nil
		}
	}
	name := "?"
	if b, err := os.ReadFile(proc + "/comm"); err == nil {
		name = strings.TrimSpace(string(b))
	}
	return fmt.Errorf("process %d (%s) holds no socket listening on port %d: it is not the server at %s", pid, name, p, addr)
}

// listeningInodes adds to inodes the socket inodes of the listening
// sockets on port in a /proc/net/tcp-style table.
func listeningInodes(path string, port int, inodes map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		col := strings.Fields(sc.Text())
		if len(col) < 10 || col[3] != "0A" { // TCP_LISTEN
			continue
		}
		i := strings.LastIndexByte(col[1], ':')
		if lp, err := strconv.ParseUint(col[1][i+1:], 16, 16); err == nil && int(lp) == port {
			inodes[col[9]] = true
		}
	}
	return sc.Err()
}
