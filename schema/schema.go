// Package schema holds the embedded JSON Schemas of every event type and of
// the v1 lock file, compiled once, and validates bodies against them.
package schema

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/lockledger/lockledger/events"
)

//go:embed *.json
var files embed.FS

const base = "https://lockledger.dev/schema/"

// LockFile names the lock file's schema in Validate calls.
const LockFile = "lock_v1"

// The compiler holds every embedded resource; each schema is compiled the
// first time it is used and kept, so a process that appends one event type
// pays for that schema only (the draft's metaschema is the bulk of it).
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
		entries, err := files.ReadDir(".")
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			b, err := files.ReadFile(e.Name())
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
		return nil, &Error{Schema: name, Detail: "no such schema"}
	}
	s, err := compiler.Compile(base + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("schema: compile %s: %w", name, err)
	}
	compiled[name] = s
	return s, nil
}

func known(name string) bool {
	return name == LockFile || events.Type(name).Valid()
}

// ErrSchema is wrapped by every validation failure.
var ErrSchema = errors.New("schema violation")

// Error reports a body that does not satisfy its schema.
type Error struct {
	Schema string
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: schema %s: %s", ErrSchema, e.Schema, e.Detail)
}
func (e *Error) Unwrap() error { return ErrSchema }

// Validate checks a JSON document against the named schema: an event type
// ("lock_acquired", ...) or LockFile.
func Validate(name string, doc []byte) error {
	s, err := get(name)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return &Error{Schema: name, Detail: "not JSON: " + err.Error()}
	}
	if dec.More() {
		return &Error{Schema: name, Detail: "trailing data after the JSON value"}
	}
	if err := validate(s, v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return &Error{Schema: name, Detail: leaf(ve)}
		}
		return &Error{Schema: name, Detail: err.Error()}
	}
	return nil
}

// validate runs the library, turning a panic inside it (it panics on
// numbers such as 1e400000000 that do not fit a float) into a refusal: a
// document the validator cannot judge is not valid.
func validate(s *jsonschema.Schema, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Schema: "", Detail: fmt.Sprintf("the document cannot be validated: %v", r)}
		}
	}()
	return s.Validate(v)
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
	return loc + ": " + ve.Message
}

// CompileAll compiles every schema now (tests use it to prove they compile).
func CompileAll() error {
	names := []string{LockFile}
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

// ValidateEvent checks an event body against the schema of its type.
func ValidateEvent(t events.Type, body []byte) error { return Validate(string(t), body) }
