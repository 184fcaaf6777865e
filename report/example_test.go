package report_test

import (
	"os"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/report"
)

func ExampleJSON() {
	r := &bench.Report{SchemaVersion: bench.SchemaVersion, Tool: "iopath", Results: []bench.Result{}, Notes: []string{}}
	report.JSON(os.Stdout, r)
	// Output is indented JSON with the machine, the file, the results and the notes.
}
