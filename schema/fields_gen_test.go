package schema

import (
	"bytes"
	"os"
	"testing"

	"github.com/lockledger/lockledger/internal/cmd/schemagen/gen"
)

// TestGeneratedFieldsAreFresh regenerates fields_gen.go, events'
// types_gen.go and replay's decode_gen.go from the embedded schema files
// (and the Go types of packages events and replay) and compares them with
// the files on disk.
func TestGeneratedFieldsAreFresh(t *testing.T) {
	for file, source := range map[string]func() ([]byte, error){
		"fields_gen.go":           func() ([]byte, error) { return gen.Source(Files) },
		"../replay/decode_gen.go": func() ([]byte, error) { return gen.Decoder(Files, os.DirFS("..")) },
		"../events/types_gen.go":  func() ([]byte, error) { return gen.Events(Files) },
	} {
		want, err := source()
		if err != nil {
			t.Fatalf("%s: the schema files do not generate: %v", file, err)
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./schema/ and commit the result", file)
		}
	}
}
