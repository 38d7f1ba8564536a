package events_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
)

// tagged maps the JSON names of a struct's fields (embedded structs
// flattened, as encoding/json does) to whether they are omitempty.
func tagged(t reflect.Type, out map[string]bool) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			tagged(f.Type, out)
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name != "" && name != "-" {
			out[name] = opts == "omitempty"
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestPayloadsMatchSchemas: the envelope and each type's payload write
// exactly the fields its schema allows, and none the schema requires is
// omitempty (but lock_name, which ledger-wide events leave out).
func TestPayloadsMatchSchemas(t *testing.T) {
	for _, typ := range events.Types {
		_, p, err := events.Decode([]byte(`{"type":"` + string(typ) + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		tags := tagged(reflect.TypeOf(p), tagged(reflect.TypeFor[events.Envelope](), map[string]bool{}))
		if typ.LedgerWide() {
			delete(tags, "lock_name")
		}
		for _, name := range sortedKeys(tags) {
			f, ok := schema.EventFieldOf(name)
			switch {
			case !ok || !f.AllowedIn(typ):
				t.Errorf("%s: %T writes %q, which its schema does not allow", typ, p, name)
			case f.RequiredIn(typ) && tags[name] && name != "lock_name":
				t.Errorf("%s: %T leaves out an empty %q, which its schema requires", typ, p, name)
			}
		}
		for i := range schema.NumEventFields {
			if f := schema.EventField(i); f.AllowedIn(typ) {
				if _, ok := tags[f.String()]; !ok {
					t.Errorf("%s: %T has no field for its schema's %q", typ, p, f)
				}
			}
		}
	}
}

// TestRecordsMatchSchemas: the lock file, holder and target structs have
// exactly the fields of their schemas.
func TestRecordsMatchSchemas(t *testing.T) {
	for _, c := range []struct {
		typ    reflect.Type
		n      int
		lookup func(string) (string, bool)
	}{
		{reflect.TypeFor[events.Record](), schema.NumLockV1Fields, func(k string) (string, bool) {
			f, ok := schema.LockV1FieldOf(k)
			return f.String(), ok
		}},
		{reflect.TypeFor[events.Holder](), schema.NumHolderFields, func(k string) (string, bool) {
			f, ok := schema.HolderFieldOf(k)
			return f.String(), ok
		}},
		{reflect.TypeFor[events.Target](), schema.NumTargetsItemFields, func(k string) (string, bool) {
			f, ok := schema.TargetsItemFieldOf(k)
			return f.String(), ok
		}},
	} {
		tags := tagged(c.typ, map[string]bool{})
		for _, name := range sortedKeys(tags) {
			if _, ok := c.lookup(name); !ok {
				t.Errorf("%v writes %q, which its schema does not have", c.typ, name)
			}
		}
		if len(tags) != c.n {
			t.Errorf("%v has %d fields, its schema %d", c.typ, len(tags), c.n)
		}
	}
}
