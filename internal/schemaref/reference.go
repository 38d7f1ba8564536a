// Package schemaref validates with the JSON Schema library
// (santhosh-tekuri/jsonschema/v5, Draft 2020-12, formats asserted): the
// reference that schema's hand-written validator is tested against. Only
// tests import it, so that the library stays out of the lockledger binary
// (TestBinaryHasNoSchemaLibrary in package main).
package schemaref

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
)

const base = "https://lockledger.dev/schema/"

// The compiler holds every schema file; each schema is compiled the first
// time it is used and kept.
var (
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled = map[string]*jsonschema.Schema{}
)

func get(name string) (*jsonschema.Schema, error) {
	mu.Lock()
	defer mu.Unlock()
	if s, ok := compiled[name]; ok {
		return s, nil
	}
	if compiler == nil {
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		c.AssertFormat = true
		for name, f := range numberFormats {
			c.Formats[name] = f.check
		}
		entries, err := schema.Files.ReadDir(".")
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			b, err := schema.Files.ReadFile(e.Name())
			if err != nil {
				return nil, err
			}
			if err := c.AddResource(base+e.Name(), bytes.NewReader(b)); err != nil {
				return nil, fmt.Errorf("schema: add %s: %w", e.Name(), err)
			}
		}
		compiler = c
	}
	if !known(name) {
		return nil, &schema.Error{Schema: name, Detail: "no such schema"}
	}
	s, err := compiler.Compile(base + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("schema: compile %s: %w", name, err)
	}
	compiled[name] = s
	return s, nil
}

func known(name string) bool {
	return name == schema.LockFile || events.Type(name).Valid()
}

// Validate checks a JSON document against the named schema, an event type
// or schema.LockFile, with the library. Errors are *schema.Error.
func Validate(name string, doc []byte) error {
	s, err := get(name)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return &schema.Error{Schema: name, Detail: "not JSON: " + err.Error()}
	}
	if rest := bytes.TrimLeft(doc[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return &schema.Error{Schema: name, Detail: "trailing data after the JSON value"}
	}
	if err := validate(s, v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return &schema.Error{Schema: name, Detail: leaf(ve)}
		}
		return &schema.Error{Schema: name, Detail: err.Error()}
	}
	return nil
}

// ValidateEvent is Validate(string(t), body).
func ValidateEvent(t events.Type, body []byte) error { return Validate(string(t), body) }

// validate runs the library, turning a panic inside it (it panics on
// numbers such as 1e400000000 whose exponent math/big refuses to expand)
// into a refusal: a document the validator cannot judge is not valid.
func validate(s *jsonschema.Schema, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if loc, n, ok := unexpandable(v, ""); ok {
				err = fmt.Errorf("%s: number %.40s has an exponent out of range: it cannot be validated", loc, n)
				return
			}
			err = fmt.Errorf("the document cannot be validated: %v", r)
		}
	}()
	return s.Validate(v)
}

// unexpandable finds a number math/big cannot read, and its JSON pointer.
func unexpandable(v any, ptr string) (string, json.Number, bool) {
	switch v := v.(type) {
	case json.Number:
		if _, ok := new(big.Rat).SetString(string(v)); !ok {
			if ptr == "" {
				ptr = "/"
			}
			return ptr, v, true
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			token := strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			if p, n, ok := unexpandable(v[k], ptr+"/"+token); ok {
				return p, n, true
			}
		}
	case []any:
		for i, x := range v {
			if p, n, ok := unexpandable(x, ptr+"/"+strconv.Itoa(i)); ok {
				return p, n, true
			}
		}
	}
	return "", "", false
}

// leaf returns the most specific cause, which names the field and the rule.
func leaf(ve *jsonschema.ValidationError) string {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := ve.InstanceLocation
	if loc == "" {
		loc = "/"
	}
	msg := ve.Message
	if strings.HasSuffix(ve.KeywordLocation, "/format") {
		for name, f := range numberFormats {
			if strings.HasSuffix(msg, " is not valid '"+name+"'") {
				msg += ": " + f.rule
			}
		}
	}
	return loc + ": " + msg
}

// numberFormats are the formats the schema files add to the draft's.
var numberFormats = map[string]struct {
	check func(any) bool
	rule  string
}{
	"int64":   {isInt64, schema.Int64Rule},
	"float64": {isFloat64, schema.Float64Rule},
}

func isInt64(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return true
	}
	_, err := strconv.ParseInt(string(n), 10, 64)
	return err == nil
}

func isFloat64(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return true
	}
	_, err := strconv.ParseFloat(string(n), 64)
	return err == nil
}

// CompileAll compiles every schema now (tests use it to prove they compile).
func CompileAll() error {
	names := []string{schema.LockFile}
	for _, t := range events.Types {
		names = append(names, string(t))
	}
	for _, n := range names {
		if _, err := get(n); err != nil {
			return err
		}
	}
	return nil
}
