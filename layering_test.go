package iopath

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The import rules of docs/architecture.md ("Import rules"), checked on
// what `go list` reports for every package of the module. Only a
// package's own (non-test) imports count: a test may import what it
// needs to drive the package (internal/auto's benchmarks run engines).

const modulePath = "github.com/iopath/iopath"

// listedPackage is what the rules read of `go list -json`.
type listedPackage struct {
	ImportPath string
	Imports    []string
}

// importRule is one rule: a package the rule covers (applies) may not
// import a path forbidden says is forbidden to it. why is the rule as
// docs/architecture.md states it.
type importRule struct {
	why       string
	applies   func(pkg string) bool
	forbidden func(pkg, imp string) bool
}

func isInternal(pkg string) bool {
	return strings.HasPrefix(pkg, modulePath+"/internal/") || strings.Contains(pkg, "/internal/")
}

func inModule(pkg string) bool { return pkg == modulePath || strings.HasPrefix(pkg, modulePath+"/") }

// isNetio says whether pkg is netio or a package under it.
func isNetio(pkg string) bool {
	return pkg == modulePath+"/netio" || strings.HasPrefix(pkg, modulePath+"/netio/")
}

// netresultPath is the one package of netio that holds results only.
const netresultPath = modulePath + "/netio/netresult"

// importRules is the table; add a row for a new rule.
var importRules = []importRule{
	{
		why:     "a package under internal/ imports no package of this module outside internal/",
		applies: isInternal,
		forbidden: func(_, imp string) bool {
			return inModule(imp) && !isInternal(imp)
		},
	},
	{
		why:     "only internal/sys imports golang.org/x/sys/unix",
		applies: func(pkg string) bool { return pkg != modulePath+"/internal/sys" },
		forbidden: func(_, imp string) bool {
			return imp == "golang.org/x/sys/unix"
		},
	},
	{
		why:     "gen makes its system calls through internal/sys, not syscall",
		applies: func(pkg string) bool { return pkg == modulePath+"/gen" },
		forbidden: func(_, imp string) bool {
			return imp == "syscall"
		},
	},
	{
		why: "report imports result types only, never server code: of netio, only netio/netresult " +
			"(not netio, netbench, filesrv, writev, load or netio/internal/...)",
		applies: func(pkg string) bool {
			return pkg == modulePath+"/report" || strings.HasPrefix(pkg, modulePath+"/report/")
		},
		forbidden: func(_, imp string) bool {
			return isNetio(imp) && imp != netresultPath
		},
	},
	{
		why:     "netio/netresult holds data only: it imports nothing of netio",
		applies: func(pkg string) bool { return pkg == netresultPath },
		forbidden: func(_, imp string) bool {
			return isNetio(imp)
		},
	},
}

// goList runs `go list -json ./...` in the module and decodes its stream
// of packages.
func goList(t *testing.T) []listedPackage {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list packages with: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-json=ImportPath,Imports", "./...")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// violations returns each import of pkgs that a rule forbids, as
// "rule: pkg imports imp".
func violations(pkgs []listedPackage, rules []importRule) []string {
	var out []string
	for _, r := range rules {
		for _, p := range pkgs {
			if !r.applies(p.ImportPath) {
				continue
			}
			for _, imp := range p.Imports {
				if r.forbidden(p.ImportPath, imp) {
					out = append(out, r.why+": "+p.ImportPath+" imports "+imp)
				}
			}
		}
	}
	return out
}

func TestImportRules(t *testing.T) {
	pkgs := goList(t)
	// The rules must see the packages they are about, or they pass for
	// nothing: a wrong module path or working directory would list none.
	for _, want := range []string{modulePath, modulePath + "/internal/sys", modulePath + "/internal/auto", modulePath + "/gen",
		modulePath + "/report", netresultPath} {
		if !slices.ContainsFunc(pkgs, func(p listedPackage) bool { return p.ImportPath == want }) {
			t.Fatalf("go list did not list %s (%d packages)", want, len(pkgs))
		}
	}
	for _, v := range violations(pkgs, importRules) {
		t.Error(v)
	}
}

// TestImportRulesCatch: each rule reports an import that breaks it, and
// nothing for one that does not, so that TestImportRules cannot pass
// because a rule matches nothing.
func TestImportRulesCatch(t *testing.T) {
	for _, tc := range []struct {
		pkg, imp string
		want     bool
	}{
		{modulePath + "/internal/auto", modulePath + "/engine", true},
		{modulePath + "/internal/auto", modulePath + "/features", true},
		{modulePath + "/internal/auto", modulePath + "/internal/sys", false},
		{modulePath + "/netio/internal/accepts", modulePath + "/netio", true},
		{modulePath + "/engine", "golang.org/x/sys/unix", true},
		{modulePath + "/internal/sys", "golang.org/x/sys/unix", false},
		{modulePath + "/gen", "syscall", true},
		{modulePath + "/engine", "syscall", false},
		{modulePath + "/engine", modulePath + "/features", false},
		{modulePath + "/report", modulePath + "/netio", true},
		{modulePath + "/report", modulePath + "/netio/netbench", true},
		{modulePath + "/report", modulePath + "/netio/filesrv", true},
		{modulePath + "/report", modulePath + "/netio/writev", true},
		{modulePath + "/report", modulePath + "/netio/load", true},
		{modulePath + "/report", modulePath + "/netio/internal/accepts", true},
		{modulePath + "/report", netresultPath, false},
		{modulePath + "/report", modulePath + "/features", false},
		{modulePath + "/netio/netbench", modulePath + "/netio/filesrv", false},
		{netresultPath, modulePath + "/netio/load", true},
		{netresultPath, modulePath + "/internal/stats", false},
	} {
		got := len(violations([]listedPackage{{ImportPath: tc.pkg, Imports: []string{tc.imp}}}, importRules)) > 0
		if got != tc.want {
			t.Errorf("%s importing %s: violation %v, want %v", tc.pkg, tc.imp, got, tc.want)
		}
	}
}
