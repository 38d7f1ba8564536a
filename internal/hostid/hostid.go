// Package hostid holds the name this host goes by in events:
// LOCKLEDGER_HOST_ID, else the hostname.
package hostid

import (
	"os"

	"github.com/lockledger/lockledger/events"
)

// Env names this host where the hostname does not (containers that share
// one, hosts behind one name).
const Env = "LOCKLEDGER_HOST_ID"

// max is the longest host id the event schema accepts.
const max = 256

// Name is LOCKLEDGER_HOST_ID, else the hostname, else "unknown-host",
// unchecked (see Read).
func Name() string {
	if name := os.Getenv(Env); name != "" {
		return name
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		return name
	}
	return "unknown-host"
}

// Read is Name, refused when it is not plain text (the rules of an actor:
// valid UTF-8, no control characters, at most 256 bytes): the host id is
// recorded in every event and shown by every report, where such text would
// forge lines or drive the reader's terminal.
func Read() (string, error) {
	name, field := Name(), Env
	if os.Getenv(Env) == "" {
		field = "host id (the hostname)"
	}
	return name, Check(field, name)
}

// Check refuses a host id, named field in the error, that is not plain
// text (see Read).
func Check(field, name string) error { return events.ValidText(field, name, max, false) }
