package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryHasNoSchemaLibrary: the JSON Schema library costs every process
// its init (it compiles the draft's metaschemas); schema validates by hand
// and only tests import the library, through internal/schemaref.
func TestBinaryHasNoSchemaLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/lockledger/lockledger").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !strings.Contains(string(out), "github.com/lockledger/lockledger/schema\n") {
		t.Fatalf("go list -deps printed no plausible dependency list:\n%s", out)
	}
	for _, p := range deps {
		for _, banned := range []string{"github.com/santhosh-tekuri/jsonschema", "github.com/lockledger/lockledger/internal/schemaref", "github.com/spf13/cobra/doc"} {
			if strings.HasPrefix(p, banned) {
				t.Errorf("the lockledger binary depends on %s", p)
			}
		}
	}
}
