package schema_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
)

// FuzzFastMatchesSchema: for any body and every schema, schema.ValidateEvent
// accepts exactly when the library (schemaref.ValidateEvent) does, and
// refuses wherever the library panics. Seeded with valid bodies of every
// type and mutations of them; TestFastMatchesSchema runs the whole
// mutation corpus in `go test`. Under -race both are skipped: make test
// runs them without it.
//
//	go test -run '^$' -fuzz '^FuzzFastMatchesSchema$' -fuzztime 3m ./schema/
func FuzzFastMatchesSchema(f *testing.F) {
	// Fuzzing starts from the valid bodies, the text-level damage, the deep
	// bodies and a spread of the field mutations. As a plain test (the
	// seeds run in every `go test`) a small sample is enough: the whole
	// corpus runs in TestFastMatchesSchema.
	fuzzing := false
	if fl := flag.Lookup("test.fuzz"); fl != nil && fl.Value.String() != "" {
		fuzzing = true
	}
	if raceEnabled() && !fuzzing {
		f.Skip("make test runs these seeds without -race, with the differential corpus: -race slows the library fourteen times and finds nothing here")
	}
	for i, s := range corpus(f) {
		switch {
		case fuzzing && (s.cross || len(s.body) > 8000 || i%7 == 0):
			f.Add(s.body)
		case !fuzzing && (s.cross && !strings.Contains(s.name, ": ") || i%97 == 0) && len(s.body) <= 8000:
			f.Add(s.body)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, typ := range allTypes {
			sameVerdict(t, typ, body)
		}
		if err := schema.ValidateEvent(events.Type("no_such"), body); err == nil {
			t.Fatal("an unknown type validates")
		}
	})
}
