package checkpoint

// The statements by which a ledger's owner names the keys that sign it:
// a signed note of its own, carried in the signer_added and
// signer_removed events, so that an event anyone who can write the
// database could append counts only with the owner's signature.

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// The actions of a signer statement.
const (
	SignerAdd    = "add"
	SignerRemove = "remove"
)

// signerStatementHeader starts every signer statement.
const signerStatementHeader = "lockledger signer/v1"

// SignerStatement is the text an owner signs to add or remove key, under
// role, as a signer of the ledger with origin.
func SignerStatement(origin, action, role, key string) string {
	return signerStatementHeader + "\n" + origin + "\n" + action + " " + role + "\n" + strings.TrimSpace(key) + "\n"
}

// SignStatement signs a SignerStatement's text with s.
func SignStatement(text string, s note.Signer) (string, error) {
	msg, err := note.Sign(&note.Note{Text: text}, s)
	return string(msg), err
}

// ErrStatement: a signer statement is not the owner's signed text of
// the event that carries it.
var ErrStatement = errors.New("not a valid signer statement")

// KeyID names a key as a note's signature does: NAME+HASH.
func KeyID(name string, hash uint32) string { return fmt.Sprintf("%s+%08x", name, hash) }

// VerifierID is KeyID of v.
func VerifierID(v note.Verifier) string { return KeyID(v.Name(), v.KeyHash()) }

// OpenStatement checks that statement is text signed by one of
// verifiers, and returns the KeyID of the key that signed it. An
// unverified statement (signed by none of them) is a *SignatureError
// without Invalid; any other failure wraps ErrStatement.
func OpenStatement(statement, text string, verifiers ...note.Verifier) (string, error) {
	n, err := openNote([]byte(statement), verifiers)
	var se *SignatureError
	switch {
	case errors.As(err, &se):
		return "", err
	case err != nil:
		return "", fmt.Errorf("%w: %v", ErrStatement, err)
	}
	if n.Text != text {
		return "", fmt.Errorf("%w: it says %q, the event says %q", ErrStatement, n.Text, text)
	}
	return KeyID(n.Sigs[0].Name, n.Sigs[0].Hash), nil
}
