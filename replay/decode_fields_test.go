package replay

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/schema"
)

// jsonFields maps the JSON names of a struct's fields (embedded structs
// flattened, as encoding/json does) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name != "" && name != "-" {
			out[name] = f.Type
		}
	}
	return out
}

// zeroJSON is a JSON value that decodes into a value of type t.
func zeroJSON(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return zeroJSON(t.Elem())
	case reflect.String:
		return `""`
	case reflect.Bool:
		return "false"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "0"
	case reflect.Slice:
		return "[]"
	case reflect.Map, reflect.Struct:
		return "{}"
	}
	return "null"
}

// TestDecodeFastTakesEverySchemaField: Event has a field for each field
// of the event schemas and no other, and decodeFast decodes each one
// (a schema field it does not know would send every body that carries it
// to json.Unmarshal).
func TestDecodeFastTakesEverySchemaField(t *testing.T) {
	tags := jsonFields(reflect.TypeFor[Event]())
	for name := range tags {
		if _, ok := schema.EventFieldOf(name); !ok {
			t.Errorf("Event has a field %q that no event schema has", name)
		}
	}
	for i := range schema.NumEventFields {
		name := schema.EventField(i).String()
		typ, ok := tags[name]
		if !ok {
			t.Errorf("Event has no field for the schemas' %q", name)
			continue
		}
		body := `{"` + name + `":` + zeroJSON(typ) + `}`
		if !checkDecodeFast(t, []byte(body)) {
			t.Errorf("decodeFast does not decode %s", body)
		}
	}
}
