package e2e

// Checkpoint rows anyone who can write the database can add: a writer
// never takes one its key did not sign as signed, and plain verify (no
// key) reports every row no writer would have stored.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	signednote "github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/clitest"
)

func TestPlainVerifyReportsCheckpointRowsNoWriterStored(t *testing.T) {
	t.Parallel()
	base := newSignedRoot(t) // checkpoints #1, #2, #3 of sizes 1, 5 and 9
	const cols = `(id, size, root, note, key_name, created_at)`
	forgedNote := func(t *testing.T, s *signedRoot) string {
		var msg string
		if err := clitest.DB(t, s.root).QueryRow(`SELECT note FROM checkpoints WHERE id = 2`).Scan(&msg); err != nil {
			t.Fatal(err)
		}
		c, err := signednote.Open([]byte(msg))
		if err != nil {
			t.Fatal(err)
		}
		sk, _, err := signednote.GenerateKey("ops")
		if err != nil {
			t.Fatal(err)
		}
		signer, err := signednote.NewSigner(sk)
		if err != nil {
			t.Fatal(err)
		}
		c.Root = tlog.Hash{1}
		b, err := signednote.Sign(c.Checkpoint, signer)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, c := range []struct {
		name  string
		query func(t *testing.T, s *signedRoot) string
		words []string
		keyed bool // verify with the key names it too
	}{
		{"a garbage row within the log", func(*testing.T, *signedRoot) string {
			return `INSERT INTO checkpoints (size, root, note, key_name, created_at) VALUES (3, 'x', 'garbage', 'ops', '2026-01-01T00:00:00Z')`
		}, []string{"ledger checkpoint #4 (size 3)", "not a signed checkpoint"}, false},
		{"a garbage row claiming a huge tree", func(*testing.T, *signedRoot) string {
			return `INSERT INTO checkpoints (size, root, note, key_name, created_at) VALUES (1000000000000, 'x', 'garbage', 'ops', '2026-01-01T00:00:00Z')`
		}, []string{"ledger checkpoint #4 (size 1000000000000)", "not a signed checkpoint"}, false},
		{"checkpoint 2 replaced by garbage", func(*testing.T, *signedRoot) string {
			return `INSERT OR REPLACE INTO checkpoints ` + cols + ` SELECT id, size, root, 'garbage', key_name, created_at FROM checkpoints WHERE id = 2`
		}, []string{"ledger checkpoint #2", "not a signed checkpoint"}, false},
		{"checkpoint 2 replaced by its note without the signature", func(*testing.T, *signedRoot) string {
			return `INSERT OR REPLACE INTO checkpoints ` + cols + ` SELECT id, size, root, substr(note, 1, instr(note, char(10) || char(10))), key_name, created_at FROM checkpoints WHERE id = 2`
		}, []string{"ledger checkpoint #2", "not a signed checkpoint"}, false},
		{"checkpoint 2 replaced by the third one's note", func(*testing.T, *signedRoot) string {
			return `INSERT OR REPLACE INTO checkpoints ` + cols + ` SELECT 2, 5, root, note, key_name, created_at FROM checkpoints WHERE id = 3`
		}, []string{"ledger checkpoint #2", "claims size 5", "covers 9"}, true},
		{"checkpoint 2 replaced by a note of another root, signed by another key", func(t *testing.T, s *signedRoot) string {
			return `INSERT OR REPLACE INTO checkpoints ` + cols + ` SELECT id, size, root, '` + strings.ReplaceAll(forgedNote(t, s), "'", "''") +
				`', key_name, created_at FROM checkpoints WHERE id = 2`
		}, []string{"no longer matches ledger checkpoint #2", "signature not checked"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := base.clone(t)
			clitest.Verify(t, 0, s.root)
			q := c.query(t, s)
			a := attack(t, s.root)
			a.exec(t, q)
			a.restore(t)
			v := clitest.Verify(t, 1, s.root)
			if !namesCheckpoint(v, c.words...) {
				t.Fatalf("no checkpoint problem naming %q; plain verify found:\n%+v", c.words, v.Problems)
			}
			if c.keyed {
				if v := clitest.Verify(t, 1, s.root, "--verifier-key", s.vkey, "--witness", s.witness); !namesCheckpoint(v, c.words...) {
					t.Fatalf("no checkpoint problem naming %q; verify with the key found:\n%+v", c.words, v.Problems)
				}
			}
		})
	}
}

func namesCheckpoint(v clitest.VerifyReport, words ...string) bool {
	for _, p := range v.Problems {
		all := p.Kind == "checkpoint"
		for _, w := range words {
			all = all && strings.Contains(p.Detail, w)
		}
		if all {
			return true
		}
	}
	return false
}

// One row claiming a huge signed tree, slipped in with the triggers
// dropped, does not stop the writers signing: the next signed write signs
// the checkpoint that is due and copies it to the witness.
func TestWritersSignPastACheckpointRowTheirKeyDidNotSign(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t).clone(t)
	a := attack(t, s.root)
	a.exec(t, `INSERT INTO checkpoints (size, root, note, key_name, created_at) VALUES (1000000000000, 'x', 'garbage', 'ops', '2099-01-01T00:00:00Z')`)
	a.restore(t)
	pid := strconv.Itoa(os.Getpid())
	for i := range 5 {
		clitest.Must(t, 0, s.root, s.signed("acquire", fmt.Sprintf("w%d", i), "--actor", "frank", "--request-id", fmt.Sprintf("f%d", i), "--pid", pid)...)
	}
	got := witnessSizes(t, s.witness)
	if len(got) < 4 || got[3] != 10 {
		t.Fatalf("witness holds checkpoints of sizes %v after 5 signed writes, want [1 5 9 10 ...]", got)
	}
}
