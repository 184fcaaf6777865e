package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/profile"
)

func runTuneCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), append([]string{"tune"}, args...), nil, &out, &errb)
	code = exitCode(err, &errb)
	return out.String(), errb.String(), code
}

func TestTuneBadUsage(t *testing.T) {
	t.Setenv(profile.Env, filepath.Join(t.TempDir(), "p.json"))
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--time", "1ms", dir},
		{"--time", "2h", dir},
		{"--format", "xml", dir},
		{"--max-size", "1k", dir},
		{"--max-size", "1GiB", dir},
		{"--max-size", "lots", dir},
		{dir, dir},
		{"--show", dir},
	} {
		_, errs, code := runTuneCmd(t, args...)
		if code != 2 || !strings.HasPrefix(errs, "iopath: tune") || strings.Count(errs, "\n") != 1 {
			t.Errorf("tune %q: exit %d, stderr %q; want one line and exit 2", args, code, errs)
		}
	}
	missing := filepath.Join(dir, "missing")
	if _, errs, code := runTuneCmd(t, "--time", "2s", missing); code != 1 || !strings.Contains(errs, missing) {
		t.Errorf("a missing DIR: exit %d, %q", code, errs)
	}
	t.Setenv(profile.Env, "off")
	if _, errs, code := runTuneCmd(t, "--time", "2s", dir); code != 1 || !strings.Contains(errs, "IOPATH_PROFILE=off: no machine profile to write") {
		t.Errorf("IOPATH_PROFILE=off: exit %d, %q", code, errs)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left in DIR: %v", left)
	}
}

// A short tune writes the profile IOPATH_PROFILE names and leaves DIR as
// it was; a second one asks for --force; --show reports what a new
// process would use.
func TestTuneSavesAndShows(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "p.json")
	t.Setenv(profile.Env, prof)
	dir := t.TempDir()
	out, errs, code := runTuneCmd(t, "--time", "2s", "--max-size", "256KiB", dir)
	if code != 0 {
		t.Fatalf("tune: exit %d, %s", code, errs)
	}
	for _, want := range []string{"ReadFile, cached", "Scan, cached", "64KiB", "256KiB", "saved to " + prof, "left out: 1MiB: over the largest size asked for (256KiB)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	t.Log("\n" + out)
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left in DIR: %v", left)
	}
	p, err := profile.Load(prof, profile.CurrentKey())
	if err != nil || len(p.Filesystems) != 1 {
		t.Fatalf("the profile written: %v, %+v", err, p)
	}
	if _, errs, code := runTuneCmd(t, "--time", "2s", "--max-size", "64KiB", dir); code != 1 || !strings.Contains(errs, "already tuned") || !strings.Contains(errs, "--force") {
		t.Errorf("tune again without --force: exit %d, %q", code, errs)
	}
	if _, errs, code := runTuneCmd(t, "--time", "2s", "--max-size", "64KiB", "--force", dir); code != 0 {
		t.Errorf("tune again with --force: exit %d, %q", code, errs)
	}
	out, _, code = runTuneCmd(t, "--show")
	if code != 0 || !strings.Contains(out, "machine profile: in use: "+prof) || !strings.Contains(out, "tuned ") {
		t.Errorf("--show: exit %d\n%s", code, out)
	}
	out, _, code = runTuneCmd(t, "--show", "--format", "json")
	var v struct {
		Status  string
		Profile *profile.Profile
	}
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Profile == nil || len(v.Profile.Filesystems) != 1 {
		t.Errorf("--show --format json: exit %d, %v\n%s", code, err, out)
	}
}
