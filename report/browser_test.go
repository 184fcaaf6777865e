package report

// A real browser looks at the HTML report: headless Chromium loads the page
// from a file with every network path closed (a dead proxy, a CSP), dumps
// the DOM it built, logs the page's console to stderr, and takes a
// screenshot. The test checks the charts in the DOM, that the console
// stayed silent, and that the screenshot is not blank.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/bench"
)

func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not found: apt-get install -y chromium")
	return ""
}

// chromium runs one headless Chromium on url with extra flags and returns
// what it wrote to stdout and stderr. It runs in its own process group,
// which is killed when it is done or after 60 s, so that none of
// Chromium's helper processes (zygote, GPU, renderers) outlives it.
// Chromium itself crashes now and then on a loaded machine (a SIGSEGV
// once in CI's -race pass): a browser killed by a signal is run once more,
// so that only a crash that repeats, which the page may cause, fails.
func chromium(t *testing.T, bin, url string, extra ...string) (stdout, stderr string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		o, e, err := chromiumOnce(t, bin, url, extra...)
		var exit *exec.ExitError
		if err != nil && attempt == 1 && errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() {
			t.Logf("chromium: %v; once more", err)
			continue
		}
		if err != nil {
			t.Fatalf("chromium: %v\nstderr:\n%s", err, e)
		}
		return o, e
	}
}

// chromiumOnce is one run of chromium; a timeout fails t, a failed run
// is returned.
func chromiumOnce(t *testing.T, bin, url string, extra ...string) (stdout, stderr string, runErr error) {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--no-default-browser-check", "--disable-background-networking", "--hide-scrollbars",
		// Any network request goes to a port nothing listens on.
		"--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
		"--user-data-dir=" + filepath.Join(dir, "profile"),
		"--enable-logging=stderr", "--v=0",
	}, extra...)
	args = append(args, url)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Files, not pipes: a helper that keeps a pipe open would make Wait
	// wait for it.
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer outF.Close()
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errF.Close()
	cmd.Stdout, cmd.Stderr = outF, errF

	start := time.Now()
	runErr = cmd.Run()
	if cmd.Process != nil {
		pgid := cmd.Process.Pid
		syscall.Kill(-pgid, syscall.SIGKILL) // whatever is left of the group
		if left := waitGroupGone(pgid, 5*time.Second); len(left) > 0 {
			t.Errorf("chromium processes left behind in group %d: %v", pgid, left)
		}
	}
	o, _ := os.ReadFile(outF.Name())
	e, _ := os.ReadFile(errF.Name())
	if ctx.Err() != nil {
		t.Fatalf("chromium timed out after %v\nstderr:\n%s", time.Since(start), e)
	}
	if runErr != nil {
		return "", string(e), runErr
	}
	t.Logf("chromium %s: %v", strings.Join(extra, " "), time.Since(start).Round(time.Millisecond))
	return string(o), string(e), nil
}

// waitGroupGone waits until no live process (zombies do not count) is in
// process group pgid, and returns those still there at the deadline.
func waitGroupGone(pgid int, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		var left []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			// pid (comm) state ppid pgrp ...: comm may hold spaces.
			s := string(b)
			i := strings.LastIndexByte(s, ')')
			if i < 0 {
				continue
			}
			f := strings.Fields(s[i+1:])
			if len(f) < 3 || f[0] == "Z" || f[0] == "X" || f[2] != strconv.Itoa(pgid) {
				continue
			}
			left = append(left, e.Name()+" "+s[strings.IndexByte(s, '(')+1:i])
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// consoleProblems returns the lines of Chromium's stderr log that show the
// page misbehaving. With --enable-logging=stderr --v=0, headless Chromium
// logs every console message of the page as
//
//	[pid:tid:date:INFO:CONSOLE:line] "message", source: file:///... (line)
//
// uncaught exceptions, console.log/error and CSP violations ("Loading the
// image 'https://…' violates the following Content Security Policy
// directive…") included; older versions say "Refused to load …". The
// page has no script, so any console message at all is a problem.
func consoleProblems(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, ":CONSOLE") || strings.Contains(l, "Refused to") ||
			strings.Contains(l, "Content Security Policy") || strings.Contains(l, "Uncaught") {
			out = append(out, l)
		}
	}
	return out
}

func fileURL(path string) string { return "file://" + path }

// The detector must catch a broken page, or a silent console proves
// nothing.
func TestBrowserConsoleDetector(t *testing.T) {
	bin := findChromium(t)
	const csp = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`
	for _, tc := range []struct {
		name, page string
		want       []string // each must be in some reported line
	}{
		// Under our CSP: an inline script and an external image are
		// blocked, and each is reported.
		{"csp", `<!DOCTYPE html><html><head><meta charset="utf-8">` + csp + `<title>x</title></head><body><p>x</p>` +
			`<script>nonexistent()</script><img src="https://example.com/x.png"></body></html>`,
			[]string{"Content Security Policy", "https://example.com/x.png"}},
		// Without it, the script runs and throws.
		{"script", `<!DOCTYPE html><html><head><meta charset="utf-8"><title>x</title></head><body><p>x</p>` +
			`<script>nonexistent()</script></body></html>`,
			[]string{"Uncaught ReferenceError: nonexistent is not defined"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.html")
			if err := os.WriteFile(path, []byte(tc.page), 0o644); err != nil {
				t.Fatal(err)
			}
			_, stderr := chromium(t, bin, fileURL(path), "--dump-dom")
			got := consoleProblems(stderr)
			if len(got) == 0 {
				t.Fatalf("no console problem detected; stderr:\n%s", stderr)
			}
			for _, w := range tc.want {
				found := false
				for _, l := range got {
					found = found || strings.Contains(l, w)
				}
				if !found {
					t.Errorf("%q not reported; detected:\n%s", w, strings.Join(got, "\n"))
				}
			}
		})
	}
}

func TestBrowserHTML(t *testing.T) {
	bin := findChromium(t)
	for _, f := range []struct {
		name   string
		report func() *bench.Report
		charts map[string]int
	}{
		{"sample", sample, sampleCharts},
		{"smallSweep", smallSweep, smallSweepCharts},
		{"tree", treeSample, map[string]int{"files-per-s": 5, "cpu-per-1k-files": 5}},
		{"writes", writeSample, map[string]int{"throughput-warm": 5, "cpu-warm": 5, "latency-warm": 5}},
		{"appends", appendSample, map[string]int{"append-records-per-s": 4, "append-p99": 4, "append-cpu-per-record": 4}},
		{"perf", func() *bench.Report { return perfSample(true) }, perfCharts(perfSample(true), true)},
	} {
		t.Run(f.name, func(t *testing.T) {
			r := f.report()
			doc := renderHTML(t, r)
			dom, _ := browse(t, bin, doc, true)
			checkDOM(t, dom, f.charts, len(r.Results))
			if f.name == "perf" {
				checkFlameDOM(t, doc, dom)
			}
		})
	}
}

// checkFlameDOM checks that the DOM holds every box of every flame graph
// and of the CPU breakdown the page drew, each with its tooltip.
func checkFlameDOM(t *testing.T, doc, dom string) {
	t.Helper()
	count := func(page string) map[string][2]int {
		out := map[string][2]int{}
		for _, s := range svgRe.FindAllString(page, -1) {
			m := regexp.MustCompile(`data-chart="([^"]*)"`).FindStringSubmatch(s)
			if m != nil && (strings.HasPrefix(m[1], "flame-") || m[1] == "cpu-breakdown") {
				out[m[1]] = [2]int{strings.Count(s, "<rect"), strings.Count(s, "<title>")}
			}
		}
		return out
	}
	want, got := count(doc), count(dom)
	if len(want) != 11 {
		t.Errorf("%d flame graphs and breakdowns drawn, want 10 and 1", len(want))
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %v rects and titles in the DOM, %v drawn", id, got[id], w)
		}
	}
	for _, s := range []string{`<section id="breakdown">`, `<section id="flame">`} {
		if !strings.Contains(dom, s) {
			t.Errorf("no %s in the DOM", s)
		}
	}
}

// Chromium lays the flame graphs out two side by side on a wide window
// (one under the other on a narrow one), each at the scale of the other
// charts, and the breakdown at its natural width.
func TestBrowserFlameLayout(t *testing.T) {
	bin := findChromium(t)
	const measure = `<script>var o=[];document.querySelectorAll("#flame figure").forEach(function(f){var r=f.getBoundingClientRect(),` +
		`s=f.querySelector("svg");o.push(Math.round(r.left)+","+Math.round(r.top)+","+(s.getBoundingClientRect().width/s.viewBox.baseVal.width).toFixed(3))});` +
		`var b=document.querySelector('[data-chart="cpu-breakdown"]');o.push("b,"+b.getBoundingClientRect().width+","+b.viewBox.baseVal.width);` +
		`document.body.setAttribute("data-layout",o.join(" "));</script>`
	doc := renderHTML(t, perfSample(false))
	doc = regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`).ReplaceAllString(doc, "")
	doc = strings.Replace(doc, "</body>", measure+"</body>", 1)
	path := filepath.Join(t.TempDir(), "perf.html")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, _ := chromium(t, bin, fileURL(path), "--dump-dom", "--window-size=1280,2000")
	m := regexp.MustCompile(`data-layout="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("nothing measured:\n%.300s", dom)
	}
	f := strings.Fields(m[1])
	var boxes [][3]float64
	for _, s := range f[:len(f)-1] {
		var b [3]float64
		fmt.Sscanf(strings.ReplaceAll(s, ",", " "), "%g %g %g", &b[0], &b[1], &b[2])
		boxes = append(boxes, b)
	}
	if len(boxes) != 10 {
		t.Fatalf("%d flame graphs laid out, want 10: %s", len(boxes), m[1])
	}
	for i := 0; i+1 < len(boxes); i += 2 {
		l, r := boxes[i], boxes[i+1]
		if l[1] != r[1] || r[0] <= l[0] {
			t.Errorf("flame graphs %d and %d are not side by side: %v %v", i, i+1, l, r)
		}
		if i+2 < len(boxes) && boxes[i+2][1] <= l[1] {
			t.Errorf("flame graph %d is not under %d: %v %v", i+2, i, boxes[i+2], l)
		}
	}
	for i, b := range boxes {
		if b[2] != 1 {
			t.Errorf("flame graph %d drawn at scale %v, not 1", i, b[2])
		}
	}
	var bw, vw float64
	fmt.Sscanf(strings.ReplaceAll(f[len(f)-1], ",", " "), "b %g %g", &bw, &vw)
	if bw != vw || bw == 0 {
		t.Errorf("the breakdown is %v px wide for a viewBox of %v", bw, vw)
	}
}

// browse loads doc in Chromium from a file and returns the DOM it built
// and, with shot, a screenshot of 1280×2400 that is not blank (its path);
// Chromium's console must say nothing.
func browse(t *testing.T, bin, doc string, shot bool) (dom, png string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "page.html")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, stderr := chromium(t, bin, fileURL(path), "--dump-dom")
	if !strings.Contains(dom, "</html>") {
		t.Fatalf("no DOM dumped:\n%.500s\nstderr:\n%s", dom, stderr)
	}
	if p := consoleProblems(stderr); len(p) > 0 {
		t.Errorf("console problems:\n%s", strings.Join(p, "\n"))
	}
	if !shot {
		return dom, ""
	}
	png = filepath.Join(dir, "out.png")
	_, stderr = chromium(t, bin, fileURL(path), "--screenshot="+png, "--window-size=1280,2400")
	if p := consoleProblems(stderr); len(p) > 0 {
		t.Errorf("console problems while screenshotting:\n%s", strings.Join(p, "\n"))
	}
	checkScreenshot(t, png, 1280, 2400)
	return dom, png
}

// checkDOM checks that the DOM Chromium built holds the charts and a
// results table of rows rows (group titles aside).
func checkDOM(t *testing.T, dom string, charts map[string]int, rows int) {
	t.Helper()
	checkCharts(t, dom, charts)
	if i, j := strings.Index(dom, "<tbody>"), strings.Index(dom, "</tbody>"); i < 0 || j < i {
		t.Error("no results table in the DOM")
	} else if n := strings.Count(dom[i:j], "<tr") - strings.Count(dom[i:j], `<tr class="group">`); n != rows {
		t.Errorf("%d table rows in the DOM, want %d", n, rows)
	}
}

// checkScreenshot decodes a PNG and fails if it is blank: it must have
// the expected size, more than 1% of its pixels off the background colour
// (the top-left pixel's), and a good number of distinct colours.
func checkScreenshot(t *testing.T, path string, w, h int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	bounds := img.Bounds()
	if bounds.Dx() != w || bounds.Dy() != h {
		t.Errorf("screenshot is %dx%d, want %dx%d", bounds.Dx(), bounds.Dy(), w, h)
	}
	bg := rgb(img, bounds.Min.X, bounds.Min.Y)
	off := 0
	colours := map[[3]uint8]bool{}
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			c := rgb(img, x, y)
			if c != bg {
				off++
			}
			colours[[3]uint8{c[0] >> 4, c[1] >> 4, c[2] >> 4}] = true
		}
	}
	total := bounds.Dx() * bounds.Dy()
	t.Logf("screenshot: %.1f%% of pixels off the background, %d distinct colours (4 bits per channel)",
		100*float64(off)/float64(total), len(colours))
	if off*100 <= total {
		t.Errorf("screenshot is blank: %d of %d pixels differ from the background", off, total)
	}
	if len(colours) < 12 {
		t.Errorf("screenshot has %d distinct colours; the charts should bring more", len(colours))
	}
}

func rgb(img image.Image, x, y int) [3]uint8 {
	r, g, b, _ := img.At(x, y).RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

// The comparison page loads offline without console messages and holds its
// chart.
func TestBrowserCompareHTML(t *testing.T) {
	bin := findChromium(t)
	old, cur := compareReports()
	c := compareBench(t, old, cur)
	var b bytes.Buffer
	if err := CompareHTML(&b, c); err != nil {
		t.Fatal(err)
	}
	dom, _ := browse(t, bin, b.String(), false)
	if !strings.Contains(dom, `data-chart="compare-gib_per_s"`) {
		t.Errorf("no comparison chart in the DOM:\n%.500s", dom)
	}
}

// Chromium lays every chart of a page out at the same scale (CSS pixels
// per viewBox unit), on a wide window and on a narrow one, so that text
// is the same size in all of them. The page has no script; a copy of it
// without the CSP gets one that writes each chart's scale into the DOM.
func TestBrowserChartScale(t *testing.T) {
	bin := findChromium(t)
	const measure = `<script>var o=[];document.querySelectorAll("svg.chart").forEach(function(s){` +
		`o.push(s.getAttribute("data-chart")+"="+(s.getBoundingClientRect().width/s.viewBox.baseVal.width).toFixed(3))});` +
		`document.body.setAttribute("data-scales",o.join(" "));</script>`
	all := pages(t)
	// Each Chromium run takes 15 s here: the bench page whose sweep
	// section holds one chart, at two widths, and the net page's bars,
	// dots and tiles at one. TestHTMLChartScale checks every page.
	for name, widths := range map[string][]int{"warmOnly": {1280, 900}, "net": {900}} {
		doc := all[name]
		doc = regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`).ReplaceAllString(doc, "")
		doc = strings.Replace(doc, "</body>", measure+"</body>", 1)
		path := filepath.Join(t.TempDir(), name+".html")
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, width := range widths {
			dom, _ := chromium(t, bin, fileURL(path), "--dump-dom", fmt.Sprintf("--window-size=%d,2000", width))
			m := regexp.MustCompile(`data-scales="([^"]*)"`).FindStringSubmatch(dom)
			if m == nil {
				t.Fatalf("%s: no scales measured:\n%.300s", name, dom)
			}
			scales := strings.Fields(m[1])
			if len(scales) == 0 {
				t.Fatalf("%s: no chart", name)
			}
			_, first, _ := strings.Cut(scales[0], "=")
			for _, s := range scales {
				if _, v, _ := strings.Cut(s, "="); v != first {
					t.Errorf("%s at %d px: charts at different scales: %s", name, width, m[1])
					break
				}
			}
		}
	}
}
