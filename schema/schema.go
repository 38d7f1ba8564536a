// Package schema holds the embedded JSON Schemas of every event type and of
// the v1 lock file, the fields they define (EventField and the like,
// generated from the schema files into fields_gen.go by go generate), and
// a validator that accepts exactly what the JSON Schema library accepts
// (internal/schemaref, which only tests import).
package schema

import (
	"embed"
	"errors"
	"fmt"

	"github.com/lockledger/lockledger/events"
)

// Files holds the schema files (*.json).
//
//go:embed *.json
var Files embed.FS

// LockFile names the lock file's schema in Validate calls.
const LockFile = "lock_v1"

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

// The schema files add two formats to the draft's, so that every number
// they accept decodes into its Go field with encoding/json: "int64" on
// every integer (int and int64 fields) and "float64" on every other
// number. These are the rules quoted when a number breaks them.
const (
	Int64Rule   = "an integer must be written without fraction or exponent and lie within int64"
	Float64Rule = "a number must lie within float64's range"
)

// Validate checks a JSON document against the named schema: an event type
// ("lock_acquired", ...) or LockFile.
func Validate(name string, doc []byte) error { return ValidateEvent(events.Type(name), doc) }

// ValidateEvent checks an event body against the schema of its type (or a
// lock file, given LockFile as the type). Errors are *Error, wrapping
// ErrSchema, and name the field by its JSON pointer and the rule it breaks.
func ValidateEvent(t events.Type, body []byte) error {
	k, ok := kindOf(t)
	if !ok {
		return &Error{Schema: string(t), Detail: "no such schema"}
	}
	v := validator{s: scanner{b: body}, k: k}
	e := v.document(k)
	if e == nil {
		return nil
	}
	return &Error{Schema: string(t), Detail: e.detail()}
}
