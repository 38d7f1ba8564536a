package schema

import (
	"bytes"
	"os"
	"testing"

	"github.com/lockledger/lockledger/internal/cmd/schemagen/gen"
)

// TestGeneratedFieldsAreFresh regenerates fields_gen.go from the embedded
// schema files and compares it with the file on disk.
func TestGeneratedFieldsAreFresh(t *testing.T) {
	want, err := gen.Source(Files)
	if err != nil {
		t.Fatalf("the schema files do not generate: %v", err)
	}
	got, err := os.ReadFile("fields_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("fields_gen.go is stale: run go generate ./schema/ and commit the result")
	}
}
