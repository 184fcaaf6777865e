package iopath

import "github.com/iopath/iopath/internal/auto"

// writeFilePlan is Plan's answer for ForWriteFile. (Being written.)
func writeFilePlan(path string, o *options) (auto.Choice, error) {
	return auto.Choice{Engine: "write", Workers: 1, Rule: "default", Reason: "one write(2) and fsync(2)"}, nil
}
