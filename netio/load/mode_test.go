package load

import (
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Mode
	}{
		{"pingpong", Mode{Kind: PingPong, Depth: 1}},
		{"pipeline:1", Mode{Kind: Pipeline, Depth: 1}},
		{"pipeline:16", Mode{Kind: Pipeline, Depth: 16}},
		{"pipeline:1024", Mode{Kind: Pipeline, Depth: 1024}},
		{"stream", Mode{Kind: Stream}},
	} {
		got, err := ParseMode(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseMode(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if s := got.String(); s != c.in {
			t.Errorf("ParseMode(%q).String() = %q", c.in, s)
		}
		if err := got.check(); err != nil {
			t.Errorf("ParseMode(%q) returned a mode check refuses: %v", c.in, err)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"", "want pingpong, pipeline:K or stream"},
		{"pipeline", "want pipeline:K"},
		{"pipeline:", `depth ""`},
		{"pipeline:0", `depth "0": want an integer from 1 to 1024`},
		{"pipeline:-3", `depth "-3"`},
		{"pipeline:x", `depth "x"`},
		{"pipeline:1025", `depth "1025"`},
		{"pipeline:4:5", `depth "4:5"`},
		{"pipeline: 4", `depth " 4"`},
		{"pingpong:3", "pingpong takes no depth"},
		{"stream:1", "stream takes no depth"},
		{"PingPong", "want pingpong, pipeline:K or stream"},
		{"burst", `mode "burst"`},
	} {
		m, err := ParseMode(c.in)
		if err == nil {
			t.Errorf("ParseMode(%q) accepted: %+v", c.in, m)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"`+c.in+`"`) {
			t.Errorf("ParseMode(%q): %q, want it to name the input and say %q", c.in, err, c.want)
		}
	}
}

func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"pingpong", "pipeline:16", "stream", "pipeline:0", "pipeline:x", "pingpong:3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMode(s)
		if err != nil {
			return
		}
		if cerr := m.check(); cerr != nil {
			t.Fatalf("ParseMode(%q) = %+v, which check refuses: %v", s, m, cerr)
		}
		back, err := ParseMode(m.String())
		if err != nil || back != m {
			t.Fatalf("ParseMode(%q) = %+v; its String %q parses to %+v, %v", s, m, m.String(), back, err)
		}
	})
}
