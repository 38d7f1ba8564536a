package replay

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/testkeys"
)

const signersOrigin = "lockledger/test-ledger"

type signerKey struct {
	s   note.Signer
	v   note.Verifier
	key string // the verifier key's text
}

func newSignerKey(t *testing.T, name string) signerKey {
	s, v, vk := testkeys.Signer(t, name)
	return signerKey{s, v, vk}
}

// reg is the signer event at seq adding (role != "") or removing k, its
// statement signed by by.
func reg(t *testing.T, seq int64, by, k signerKey, role string) Registration {
	t.Helper()
	typ, action := events.SignerAdded, checkpoint.SignerAdd
	if role == "" {
		typ, action = events.SignerRemoved, checkpoint.SignerRemove
		role = "host"
	}
	st, err := checkpoint.SignStatement(checkpoint.SignerStatement(signersOrigin, action, role, k.key), by.s)
	if err != nil {
		t.Fatal(err)
	}
	return Registration{Seq: seq, Type: typ, Signer: events.Signer{Key: k.key, Role: role, Statement: st}}
}

// signerSet is the KeyIDs of the signers, each removed one marked
// "@removed".
func signerSet(signers []Signer) []string {
	var out []string
	for _, s := range signers {
		id := s.ID()
		if s.Removed > 0 {
			id += "@removed"
		}
		out = append(out, id)
	}
	return out
}

func sameSet(t *testing.T, what string, got []Signer, want ...string) {
	t.Helper()
	g := signerSet(got)
	if strings.Join(g, " ") != strings.Join(want, " ") {
		t.Errorf("%s: signers %v, want %v", what, g, want)
	}
}

// A signer event counts only with the statement of an owner standing at
// its seq: one signed by a key that is no owner (a forgery by whoever can
// write the database), one whose statement names another key, and one by
// an owner already removed, count for nothing and are noted.
func TestFoldSignersCountsOwnersStatementsOnly(t *testing.T) {
	owner, deputy, host, mallory := newSignerKey(t, "owner"), newSignerKey(t, "deputy"), newSignerKey(t, "host"), newSignerKey(t, "mallory")
	id := func(k signerKey) string { return checkpoint.VerifierID(k.v) }
	trusted := []note.Verifier{owner.v}

	forged := reg(t, 2, mallory, mallory, "host") // mallory registers herself
	t.Run("forged by a non-owner", func(t *testing.T) {
		signers, notes := FoldSigners(signersOrigin, trusted, []Registration{reg(t, 1, owner, owner, events.RoleOwner), forged})
		sameSet(t, "forged", signers, id(owner))
		if len(notes) != 1 || !strings.Contains(notes[0], "seq 2") {
			t.Errorf("notes %q, want one on seq 2", notes)
		}
	})
	t.Run("a statement of another key", func(t *testing.T) {
		swapped := reg(t, 2, owner, host, "host")
		swapped.Key = mallory.key // the event names mallory; the owner's statement, host
		signers, notes := FoldSigners(signersOrigin, trusted, []Registration{swapped})
		sameSet(t, "swapped", signers)
		if len(notes) != 1 {
			t.Errorf("notes %q, want one", notes)
		}
	})
	t.Run("another ledger's statement", func(t *testing.T) {
		signers, _ := FoldSigners("lockledger/another-ledger", trusted, []Registration{reg(t, 1, owner, host, "host")})
		sameSet(t, "another origin", signers)
	})
	t.Run("an owner added, then removed, adds nothing", func(t *testing.T) {
		signers, notes := FoldSigners(signersOrigin, trusted, []Registration{
			reg(t, 1, owner, deputy, events.RoleOwner),
			reg(t, 2, deputy, host, "host"), // counts: the deputy stands
			reg(t, 3, owner, deputy, ""),
			reg(t, 4, deputy, mallory, "host"), // the deputy no longer stands
			reg(t, 5, deputy, host, ""),        // nor may it remove
		})
		sameSet(t, "removed owner", signers, id(deputy)+"@removed", id(host))
		if len(notes) != 2 || !strings.Contains(notes[0], "seq 4") || !strings.Contains(notes[1], "seq 5") {
			t.Errorf("notes %q, want one on seq 4 and one on seq 5", notes)
		}
	})
	t.Run("a host is no owner", func(t *testing.T) {
		signers, notes := FoldSigners(signersOrigin, trusted, []Registration{
			reg(t, 1, owner, host, "host"),
			reg(t, 2, host, mallory, "host"),
		})
		sameSet(t, "host adds", signers, id(host))
		if len(notes) != 1 || !strings.Contains(notes[0], "seq 2") {
			t.Errorf("notes %q, want one on seq 2", notes)
		}
	})
}

// signedBy is a checkpoint of size events signed by each of keys, opened
// with every key's verifier.
func signedBy(t *testing.T, size int64, keys ...signerKey) *checkpoint.Signed {
	t.Helper()
	c := checkpoint.Checkpoint{Origin: signersOrigin, Size: size, Time: time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)}
	var signers []note.Signer
	var verifiers []note.Verifier
	for _, k := range keys {
		signers, verifiers = append(signers, k.s), append(verifiers, k.v)
	}
	msg, err := checkpoint.Sign(c, signers[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(signers) > 1 {
		n, err := note.Open(msg, note.VerifierList(verifiers[0]))
		if err != nil {
			t.Fatal(err)
		}
		if msg, err = note.Sign(n, signers[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	s, err := checkpoint.Open(msg, verifiers...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Rotation is adding the new key and removing the old: both verify
// checkpoints, and the old key's checkpoints of as many events as the
// log held at its removal, or more, are not checked (revoked); the new
// key's, and the old key's of fewer events, are.
func TestSignerRotationRevokesTheOldKeysLaterCheckpoints(t *testing.T) {
	owner, old, rotated := newSignerKey(t, "owner"), newSignerKey(t, "host"), newSignerKey(t, "host")
	signers, notes := FoldSigners(signersOrigin, []note.Verifier{owner.v}, []Registration{
		reg(t, 1, owner, owner, events.RoleOwner),
		reg(t, 2, owner, old, "host"),
		reg(t, 10, owner, rotated, "host"),
		reg(t, 11, owner, old, ""),
	})
	if len(notes) != 0 {
		t.Fatalf("notes %q", notes)
	}
	sameSet(t, "rotated", signers, checkpoint.VerifierID(owner.v), checkpoint.VerifierID(old.v)+"@removed", checkpoint.VerifierID(rotated.v))
	tr := &Trust{Verifiers: []note.Verifier{owner.v}}
	tr.WithSigners(signers)
	if len(tr.Verifiers) != 3 {
		t.Fatalf("%d verifiers, want the owner's, the old and the new key", len(tr.Verifiers))
	}
	for _, c := range []struct {
		name    string
		s       *checkpoint.Signed
		revoked bool
	}{
		{"the old key before its removal", signedBy(t, 10, old), false},
		{"the old key at its removal", signedBy(t, 11, old), true},
		{"the old key after its removal", signedBy(t, 50, old), true},
		{"the new key after the removal", signedBy(t, 50, rotated), false},
		{"the old and the new key together", signedBy(t, 50, old, rotated), false},
		{"the owner", signedBy(t, 50, owner), false},
	} {
		at, revoked := tr.revoked(c.s)
		if revoked != c.revoked || (revoked && at != 11) {
			t.Errorf("%s: revoked %v at %d, want %v at 11", c.name, revoked, at, c.revoked)
		}
	}
}
