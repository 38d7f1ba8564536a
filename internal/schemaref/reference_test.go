package schemaref

import "testing"

func TestEverySchemaCompiles(t *testing.T) {
	if err := CompileAll(); err != nil {
		t.Fatal(err)
	}
}
