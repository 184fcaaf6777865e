package engine_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/enginetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	for _, name := range engine.Names() {
		e, err := engine.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) { enginetest.Run(t, e) })
	}
}

func TestWriterConformance(t *testing.T) {
	for _, name := range engine.WriterNames() {
		w, err := engine.LookupWriter(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) { enginetest.RunWriter(t, w) })
	}
}
