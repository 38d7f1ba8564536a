package gen_test

import (
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/lockledger/lockledger/internal/cmd/schemagen/gen"
	"github.com/lockledger/lockledger/schema"
)

// edited returns the schema files with one replacement in one of them.
func edited(t *testing.T, file, old, new string) fs.FS {
	t.Helper()
	m := fstest.MapFS{}
	entries, err := schema.Files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := schema.Files.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == file {
			if !strings.Contains(string(b), old) {
				t.Fatalf("%s has no %s", file, old)
			}
			b = []byte(strings.Replace(string(b), old, new, 1))
		}
		m[e.Name()] = &fstest.MapFile{Data: b}
	}
	return m
}

// TestSourceRefusesWhatItCannotCheck: a schema change the validator has no
// rule for fails the generator, naming the place.
func TestSourceRefusesWhatItCannotCheck(t *testing.T) {
	if _, err := gen.Source(schema.Files); err != nil {
		t.Fatalf("the schema files: %v", err)
	}
	for _, c := range []struct {
		name, file, old, new, want string
	}{
		{"unknown keyword", "heartbeat_failed.json", `"minimum": 1}`, `"minimum": 1, "multipleOf": 2}`, `"multipleOf"`},
		{"unknown pattern", "ledger_verified.json", `"^[0-9a-f]{64}$"`, `"^[0-9a-f]{40}$"`, "has no matcher"},
		{"integer without int64", "lock_projected.json", `"format": "int64", "minimum": 1}`, `"minimum": 1}`, `"int64"`},
		{"required but not allowed", "lock_heartbeat.json", `"required": ["lock_name"]`, `"required": ["lock_name", "nope"]`, `"nope"`},
		{"evaluated properties allowed", "lock_heartbeat.json", `"unevaluatedProperties": false`, `"unevaluatedProperties": true`, "unevaluatedProperties"},
		{"missing $ref", "acquire_blocked.json", `defs.json#/$defs/holder`, `defs.json#/$defs/holders`, "nothing at"},
	} {
		_, err := gen.Source(edited(t, c.file, c.old, c.new))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %s", c.name, err, c.want)
		}
	}
}

// TestDecoderRefusesWhatItCannotPlace: a schema property that replay's
// Event, or the events type an object of it decodes into, has no field
// for fails the decoder's generator, naming the type and the property.
func TestDecoderRefusesWhatItCannotPlace(t *testing.T) {
	root := os.DirFS("../../../..")
	if _, err := gen.Decoder(schema.Files, root); err != nil {
		t.Fatalf("the schema files: %v", err)
	}
	for _, c := range []struct {
		name, file, old, new, want string
	}{
		{"event property", "lock_heartbeat.json", `"properties": {`, `"properties": {"nope": {"type": "boolean"},`, `Event has no field tagged json:"nope"`},
		{"object property", "defs.json", `"ledger_id": {`, `"nope": {"type": "boolean"}, "ledger_id": {`, "no schema object has the json fields of events.Pin"},
	} {
		_, err := gen.Decoder(edited(t, c.file, c.old, c.new), root)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %s", c.name, err, c.want)
		}
	}
}
