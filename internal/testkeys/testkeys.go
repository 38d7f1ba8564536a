// Package testkeys holds what tests sign checkpoints with: a new key and
// a checkpoint it signs. It imports only checkpoint, so that the tests of
// trust and witness, which the rest of the kits import, can use it.
package testkeys

import (
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
)

// Signer is a new signing key named name, its verifier, and the
// verifier key's text.
func Signer(t testing.TB, name string) (note.Signer, note.Verifier, string) {
	t.Helper()
	skey, vkey, err := checkpoint.GenerateKey(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := checkpoint.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s, checkpoint.VerifierOf(s), vkey
}

// Signed is the signed note of a checkpoint of ledger's first size events
// (its root a placeholder made of size), signed by s at at.
func Signed(t testing.TB, s note.Signer, ledger string, size int64, at time.Time) string {
	t.Helper()
	msg, err := checkpoint.Sign(checkpoint.Checkpoint{Origin: checkpoint.Origin(ledger), Size: size, Root: tlog.Hash{byte(size)}, Time: at}, s)
	if err != nil {
		t.Fatal(err)
	}
	return string(msg)
}
