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

var (
	once     sync.Once
	compiled map[string]*jsonschema.Schema
	errInit  error
)

func load() {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	entries, err := files.ReadDir(".")
	if err != nil {
		errInit = err
		return
	}
	for _, e := range entries {
		b, err := files.ReadFile(e.Name())
		if err != nil {
			errInit = err
			return
		}
		if err := c.AddResource(base+e.Name(), bytes.NewReader(b)); err != nil {
			errInit = fmt.Errorf("schema: add %s: %w", e.Name(), err)
			return
		}
	}
	compiled = map[string]*jsonschema.Schema{}
	names := []string{LockFile}
	for _, t := range events.Types {
		names = append(names, string(t))
	}
	for _, n := range names {
		s, err := c.Compile(base + n + ".json")
		if err != nil {
			errInit = fmt.Errorf("schema: compile %s: %w", n, err)
			return
		}
		compiled[n] = s
	}
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
	once.Do(load)
	if errInit != nil {
		return errInit
	}
	s, ok := compiled[name]
	if !ok {
		return &Error{Schema: name, Detail: "no such schema"}
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
	if err := s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return &Error{Schema: name, Detail: leaf(ve)}
		}
		return &Error{Schema: name, Detail: err.Error()}
	}
	return nil
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

// ValidateEvent checks an event body against the schema of its type.
func ValidateEvent(t events.Type, body []byte) error { return Validate(string(t), body) }
