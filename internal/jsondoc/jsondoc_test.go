package jsondoc

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	type inner struct {
		P99 float64 `json:"p99_ns"`
	}
	v := struct {
		Rate  float64          `json:"rate_per_s"`
		Runs  []inner          `json:"runs"`
		ByKey map[string]inner `json:"by_key"`
	}{Rate: math.NaN(), Runs: []inner{{math.Inf(1)}, {2}}, ByKey: map[string]inner{"a": {math.Inf(-1)}}}
	var b bytes.Buffer
	if err := Write(&b, "file", 3, &v); err != nil {
		t.Fatal(err)
	}
	want := `{
  "schema_version": 3,
  "kind": "file",
  "rate_per_s": 0,
  "runs": [
    {
      "p99_ns": 0
    },
    {
      "p99_ns": 2
    }
  ],
  "by_key": {
    "a": {
      "p99_ns": 0
    }
  }
}
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if !math.IsNaN(v.Rate) || !math.IsInf(v.Runs[0].P99, 1) {
		t.Errorf("Write changed its value: %+v", v)
	}
	if !json.Valid(b.Bytes()) {
		t.Errorf("not valid JSON")
	}

	b.Reset()
	if err := Write(&b, "features", 1, struct{}{}); err != nil || b.String() != "{\n  \"schema_version\": 1,\n  \"kind\": \"features\"\n}\n" {
		t.Errorf("empty struct: %v %q", err, b.String())
	}
}

// TestWriteRefuses: a value that is not an object, or that carries its
// own schema_version or kind (which would be written twice), is an error,
// and nothing is written.
func TestWriteRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"array", []int{1}, "not a JSON object"},
		{"version", struct {
			V int `json:"schema_version"`
		}{1}, `own "schema_version"`},
		{"kind", map[string]string{"kind": "x"}, `own "kind"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			err := Write(&b, "file", 1, tc.v)
			if err == nil || !strings.Contains(err.Error(), tc.want) || b.Len() != 0 {
				t.Errorf("err %v, wrote %q; want an error with %q and nothing written", err, b.String(), tc.want)
			}
		})
	}
}
