// Package profile is the machine profile: what "iopath tune" measured on
// this machine, and the rules Auto takes from it in place of its defaults
// (like FFTW's wisdom). A profile is a JSON file in the user's cache
// directory, one per machine: its name and its Key hold the CPU model,
// the number of online CPUs and the kernel release, and inside it each
// filesystem tuned on has a Section of its own. A profile whose Key is
// not this machine's, or whose version is not Version, is ignored.
//
// Auto reads the process's profile once (Active). IOPATH_PROFILE=off
// makes it read none; IOPATH_PROFILE=FILE reads FILE instead of the
// cache directory's.
//
// A profile only holds rules for cached data, read whole (ReadFile,
// kind "whole-file") or block by block (Scan, kind "blocks"): that is
// where the fastest path depends on the CPU (its copy routines, its
// page-fault cost in a VM). Uncached data is the device's, and many
// small files are system calls; there Auto's defaults hold.
package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iopath/iopath/internal/machine"
	"github.com/iopath/iopath/internal/sys"
)

// Version is the format's version; a profile of another is ignored.
const Version = 1

// Env is the environment variable that chooses the profile: "off" for
// none, a path for that file, unset or empty for the cache directory's.
const Env = "IOPATH_PROFILE"

// Kinds a rule can be for (internal/auto's Kind names).
const (
	WholeFile = "whole-file"
	Blocks    = "blocks"
)

// PerCore is Rule.Workers for one worker per core (GOMAXPROCS, at most
// MaxCoreWorkers), however many cores the process has.
const PerCore = 0

// MaxCoreWorkers caps PerCore (Auto's cap for workers that copy from the
// page cache).
const MaxCoreWorkers = 8

// engines a rule may name.
var engines = []string{"read", "pread", "readv", "mmap", "io_uring"}

// Key is what a profile is valid for.
type Key struct {
	CPUModel string `json:"cpu_model"` // /proc/cpuinfo's model name
	CPUs     int    `json:"cpus"`      // online CPUs
	Kernel   string `json:"kernel"`    // uname release
}

// CurrentKey is this machine's Key.
func CurrentKey() Key {
	return Key{CPUModel: machine.CPUModel(), CPUs: machine.OnlineCPUs(), Kernel: machine.KernelRelease()}
}

func (k Key) String() string {
	return fmt.Sprintf("CPU %q ×%d, kernel %s", k.CPUModel, k.CPUs, k.Kernel)
}

// Profile is one machine's profile.
type Profile struct {
	Version int `json:"version"`
	Key     Key `json:"machine"`
	// Filesystems holds a Section by filesystem name ("ext4", "xfs",
	// "tmpfs": internal/machine.FSName).
	Filesystems map[string]*Section `json:"filesystems"`

	path string // where it was read from
}

// Section is what was tuned on one filesystem.
type Section struct {
	Tuned         time.Time `json:"tuned"`
	Dir           string    `json:"dir"` // where the trial files were
	IopathVersion string    `json:"iopath_version"`
	GOMAXPROCS    int       `json:"gomaxprocs"`
	// Rules are what Auto uses, for sizes in [MinSize, MaxSize); a size
	// no rule covers keeps Auto's default.
	Rules []Rule `json:"rules"`
	// Trials are every measurement behind the rules.
	Trials []Trial `json:"trials"`
}

// Rule is how to read cached files of a kind and a range of sizes.
type Rule struct {
	Kind    string `json:"kind"`     // WholeFile or Blocks
	MinSize int64  `json:"min_size"` // bytes, inclusive
	MaxSize int64  `json:"max_size"` // bytes, exclusive; 0: no bound
	Engine  string `json:"engine"`
	Workers int    `json:"workers"` // PerCore (0) or a count
	// Why is the measurement behind it, one sentence.
	Why string `json:"why"`
}

// Trial is one kind and size measured, every way side by side.
type Trial struct {
	Kind   string `json:"kind"`
	Size   int64  `json:"size"`
	Rounds int    `json:"rounds"`
	Ways   []Way  `json:"ways"`
	// Winner is the Name of the way the rule for this size takes, or ""
	// when Auto's default stays (nothing beat it by the margin).
	Winner string `json:"winner"`
}

// Way is one way of reading a Trial's file.
type Way struct {
	Name    string `json:"name"` // "auto", "pread×2", ...
	Engine  string `json:"engine"`
	Workers int    `json:"workers"`
	// Rule is the rule of Auto that chose the default ("small-file",
	// "big-cached"); "" for the other ways.
	Rule string `json:"rule,omitempty"`
	// Rate is the median over the rounds, in bytes per second.
	Rate float64 `json:"bytes_per_second"`
	// Ratio is the median of the rounds' Rate ÷ the default's Rate in
	// the same round.
	Ratio float64 `json:"ratio_to_default"`
}

// Path is where p was read from ("" for one made in memory).
func (p *Profile) Path() string {
	if p == nil {
		return ""
	}
	return p.path
}

// WorkersFor resolves r.Workers for a process of gomaxprocs.
func (r Rule) WorkersFor(gomaxprocs int) int {
	if r.Workers > 0 {
		return r.Workers
	}
	return max(1, min(gomaxprocs, MaxCoreWorkers))
}

func (r Rule) covers(kind string, size int64) bool {
	return r.Kind == kind && size >= r.MinSize && (r.MaxSize == 0 || size < r.MaxSize)
}

// Lookup returns the rule of the section for filesystem fs that covers
// kind and size, and that section. p may be nil.
func (p *Profile) Lookup(kind, fs string, size int64) (Rule, *Section, bool) {
	if p == nil {
		return Rule{}, nil, false
	}
	s := p.Filesystems[fs]
	if s == nil {
		return Rule{}, nil, false
	}
	for _, r := range s.Rules {
		if r.covers(kind, size) {
			return r, s, true
		}
	}
	return Rule{}, nil, false
}

// Covers reports whether a rule of any section may cover kind and size,
// so that a caller looks up the filesystem (an fstatfs) only then. p may
// be nil.
func (p *Profile) Covers(kind string, size int64) bool {
	if p == nil {
		return false
	}
	for _, s := range p.Filesystems {
		for _, r := range s.Rules {
			if r.covers(kind, size) {
				return true
			}
		}
	}
	return false
}

// Floor is the smallest size any rule of kind covers (math.MaxInt64 when
// none does): a file below it is read as Auto would without a profile,
// without looking further. p may be nil.
func (p *Profile) Floor(kind string) int64 {
	floor := int64(math.MaxInt64)
	if p == nil {
		return floor
	}
	for _, s := range p.Filesystems {
		for _, r := range s.Rules {
			if r.Kind == kind {
				floor = min(floor, r.MinSize)
			}
		}
	}
	return floor
}

// Check reports what is wrong with p: a version or a key not this
// machine's (k), or a rule that makes no sense.
func (p *Profile) Check(k Key) error {
	if p.Version != Version {
		return fmt.Errorf("format version %d, not %d (tune again)", p.Version, Version)
	}
	if p.Key != k {
		return fmt.Errorf("made for %s; this machine is %s (tune again)", p.Key, k)
	}
	for fs, s := range p.Filesystems {
		if s == nil {
			return fmt.Errorf("filesystem %q has no section", fs)
		}
		for i, r := range s.Rules {
			if err := r.check(); err != nil {
				return fmt.Errorf("filesystem %q, rule %d: %w", fs, i+1, err)
			}
		}
	}
	return nil
}

func (r Rule) check() error {
	switch {
	case r.Kind != WholeFile && r.Kind != Blocks:
		return fmt.Errorf("kind %q is not %q or %q", r.Kind, WholeFile, Blocks)
	case !slices.Contains(engines, r.Engine):
		return fmt.Errorf("engine %q is not one of %s", r.Engine, strings.Join(engines, ", "))
	case r.Workers < 0 || r.Workers > 1024:
		return fmt.Errorf("%d workers", r.Workers)
	case r.MinSize < 0 || (r.MaxSize != 0 && r.MaxSize <= r.MinSize):
		return fmt.Errorf("sizes [%d, %d) are not a range", r.MinSize, r.MaxSize)
	}
	return nil
}

// Dir is the directory profiles are kept in: iopath under the user's
// cache directory ($XDG_CACHE_HOME, or ~/.cache).
func Dir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the machine profile: %w", err)
	}
	return filepath.Join(d, "iopath"), nil
}

// DefaultPath is where this machine's profile is kept: Dir, and a name
// made from the Key ("machine-0123456789ab.json"), so that a cache
// directory shared between machines (a home on NFS) keeps one per
// machine.
func DefaultPath(k Key) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(k)
	sum := sha256.Sum256(b)
	return filepath.Join(d, "machine-"+hex.EncodeToString(sum[:6])+".json"), nil
}

// maxBytes bounds what Read reads: a profile is a few KiB, and a path
// that names an endless stream (/dev/zero) must not fill memory.
const maxBytes = 1 << 20

// Read reads the profile at path, without checking it against a Key. A
// path that is not a regular file is an *fs.PathError wrapping
// sys.ErrNotRegular: a FIFO is opened without waiting for a writer and
// refused, so that no command hangs on IOPATH_PROFILE.
func Read(path string) (*Profile, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: sys.ErrNotRegular}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxBytes {
		return nil, fmt.Errorf("%s: not a machine profile: larger than %d KiB", path, maxBytes>>10)
	}
	var p Profile
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: not a machine profile: %w", path, err)
	}
	p.path = path
	return &p, nil
}

// Load reads the profile at path and checks it against this machine.
func Load(path string, k Key) (*Profile, error) {
	p, err := Read(path)
	if err != nil {
		return nil, err
	}
	if err := p.Check(k); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// State is the process's profile and what became of it.
type State struct {
	Profile *Profile // nil: none in use
	// Status says which profile is used, or why none is: "off
	// (IOPATH_PROFILE=off)", "none at PATH (run iopath tune)", "ignored:
	// ...".
	Status string
	// Path is the file looked at ("" with IOPATH_PROFILE=off).
	Path string
}

var (
	loadOnce sync.Once
	active   atomic.Pointer[State]
)

// Active is the process's profile: read once, on the first call, from
// where Env says; nil when there is none or it is not valid here (State
// says why).
//
// A process with no profile to read (IOPATH_PROFILE=off, or unset and no
// machine-*.json in Dir) learns so from one directory read, without the
// Key: reading /proc/cpuinfo and the rest took 1.2 ms on the AMD EPYC VM,
// which every process's first ReadFile would have paid.
func Active() *Profile {
	if s := active.Load(); s != nil {
		return s.Profile
	}
	if !mayExist() {
		return nil
	}
	return Current().Profile
}

// mayExist reports whether the process may have a profile to read: the
// answer of load when it is "none", found without the Key.
var mayExist = sync.OnceValue(func() bool {
	switch v := strings.TrimSpace(os.Getenv(Env)); v {
	case "off":
		return false
	case "":
		d, err := Dir()
		if err != nil {
			return false
		}
		ms, _ := filepath.Glob(filepath.Join(d, "machine-*.json"))
		return len(ms) > 0
	}
	return true
})

// Current is the process's profile and its status (see Active).
func Current() *State {
	loadOnce.Do(func() {
		if active.Load() == nil {
			s := load()
			active.CompareAndSwap(nil, &s)
		}
	})
	return active.Load()
}

// Look reads the profile now, from where Env says, as Current did at
// its first call: for "iopath tune --show", which reports what a new
// process would use.
func Look() State { return load() }

func load() State {
	v := strings.TrimSpace(os.Getenv(Env))
	if v == "off" {
		return State{Status: "off (" + Env + "=off)"}
	}
	k := CurrentKey()
	path := v
	if path == "" {
		var err error
		if path, err = DefaultPath(k); err != nil {
			return State{Status: "none: " + err.Error()}
		}
	}
	p, err := Load(path, k)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return State{Path: path, Status: "none at " + path + " (run iopath tune)"}
	case err != nil:
		return State{Path: path, Status: "ignored: " + err.Error()}
	}
	return State{Profile: p, Path: path, Status: "in use: " + path}
}

// SetActive makes s the process's profile state until restore is
// called: for tests, and for "iopath tune", which measures Auto without a
// profile.
func SetActive(s State) (restore func()) {
	Current() // the first load happens before, not after, the swap
	old := active.Swap(&s)
	return func() { active.Store(old) }
}
