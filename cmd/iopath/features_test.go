package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestFeaturesCommand(t *testing.T) {
	t.Setenv("IOPATH_DISABLE_IO_URING", "")
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"features"}, nil, &out, &errb); err != nil {
		t.Fatalf("features: %v (stderr %q)", err, errb.String())
	}
	s := out.String()
	for _, want := range []string{"io_uring", "kernel", "page size", "memlock limit"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	t.Log("\n" + s)
}

func TestFeaturesDisabled(t *testing.T) {
	t.Setenv("IOPATH_DISABLE_IO_URING", "1")
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"features"}, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "disabled by IOPATH_DISABLE_IO_URING=1") {
		t.Errorf("output lacks the reason:\n%s", out.String())
	}
}

func TestFeaturesJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"features", "--format", "json"}, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var v struct {
		IOURing struct {
			Available bool   `json:"available"`
			Reason    string `json:"reason"`
		} `json:"io_uring"`
		Kernel string `json:"kernel"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v.Kernel == "" {
		t.Fatalf("bad json (%v): %s", err, out.String())
	}
	err := run(context.Background(), []string{"features", "--format", "xml"}, nil, &out, &errb)
	if err == nil || exitCode(err, &errb) != 2 {
		t.Errorf("--format xml: err %v, want a usage error", err)
	}
}

// features says whether --perf can record here, and --loss make its
// namespaces, and why not.
func TestFeaturesPerf(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"features"}, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"perf (--perf)", "packet loss (--loss)"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks the line %q:\n%s", line, out.String())
		}
	}
	t.Setenv("PATH", t.TempDir())
	out.Reset()
	if err := run(context.Background(), []string{"features", "--format", "json"}, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Perf string `json:"perf"`
		Loss string `json:"loss"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v.Perf != "perf is not installed (Debian: apt-get install linux-perf)" {
		t.Errorf("without perf on PATH: %q (%v)", v.Perf, err)
	}
	if want := "ip is not installed (Debian: apt-get install iproute2)"; os.Geteuid() == 0 && v.Loss != want {
		t.Errorf("without ip on PATH: loss %q, want %q", v.Loss, want)
	}
}
