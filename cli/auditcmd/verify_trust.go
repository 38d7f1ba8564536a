package auditcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/trust"
	"github.com/lockledger/lockledger/verify"
)

// unsignedWarning is what verify says, on stderr and in --json, of a
// ledger nothing outside the root vouches for.
const unsignedWarning = "this ledger is unsigned: nothing outside the root vouches for it, so a tail cut, a re-chained log or a root restored from an older copy passes; " +
	"write without --unsigned (or run `lockledger trust adopt`) to have it signed and pinned"

// carriedUnchecked is how many signed checkpoints an export carried that
// went unchecked because verify was given no key: such a file is signed,
// not unsigned.
func carriedUnchecked(rep *verify.Report, t *replay.Trust) int {
	if rep.Trust != verify.Unsigned || t != nil && len(t.Verifiers) > 0 {
		return 0
	}
	n := 0
	for _, c := range rep.Checkpoints {
		if c.Carried {
			n++
		}
	}
	return n
}

// unvouched is how many checkpoints verify found, all invalid (a key not
// given nor pinned, another ledger's origin, an edited note), when none
// vouches for the log: a signed ledger or export checked with the wrong
// key, not an unsigned one. 0 when there are none or any has another
// result.
func unvouched(rep *verify.Report) int {
	if rep.Trust != verify.Unsigned {
		return 0
	}
	for _, c := range rep.Checkpoints {
		if c.Result != "invalid" {
			return 0
		}
	}
	return len(rep.Checkpoints)
}

// expectation is the ledger verify must find: the one the trust store
// pins at this root, or --ledger-id.
type expectation struct {
	id, source string
}

// fromStore adds the trust store's pins of the root to t: their verifier
// keys, the heads the store keeps of the pinned ledgers (a witness), and
// the ledger id to expect. A root with no pin adds nothing.
func (o *verifyOptions) fromStore(t *replay.Trust) error {
	s, keys, ids, err := pinned(o.g)
	if err != nil {
		return err
	}
	for _, k := range keys {
		v, err := checkpoint.NewVerifier(k)
		if err != nil {
			return events.Invalid("verifier key", k, err.Error()+" (in "+s.PinsPath()+")")
		}
		if !slices.ContainsFunc(t.Verifiers, func(o note.Verifier) bool { return o.Name() == v.Name() && o.KeyHash() == v.KeyHash() }) {
			t.Verifiers = append(t.Verifiers, v)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	o.pinned, t.Expected = true, true
	if len(ids) == 1 {
		o.expect = append(o.expect, expectation{id: ids[0], source: "the trust store's pin (" + s.PinsPath() + ")"})
	}
	heads := invocation.Heads(s, o.g.Root)
	for _, id := range ids {
		head := heads.Kept(id)
		if fi, err := os.Lstat(head); err != nil || !fi.Mode().IsRegular() {
			continue // no head kept ("" is none)
		}
		b, err := heads.Read(id)
		var busy *trust.LockBusyError
		if errors.As(err, &busy) {
			// Not the caller's input: another process holds the head.
			return fmt.Errorf("verify: the head kept in %s cannot be read: %w", head, err)
		} else if err != nil {
			return events.Invalid("trust directory", head, "cannot be read: "+invocation.ErrText(err))
		}
		for _, e := range checkpoint.SplitNotes(b) {
			t.Checkpoints = append(t.Checkpoints, replay.NoteSource{Source: fmt.Sprintf("checkpoint %s:%d", head, e.Line), Note: e.Note, Witness: head})
		}
		if len(ids) == 1 {
			t.Witnesses[head] = 0
		}
	}
	return nil
}

// pinned is the trust store, and the verifier keys and the ledger ids its
// pins of the root name, each once.
func pinned(g *invocation.Globals) (*trust.Store, []string, []string, error) {
	s, err := g.TrustStore()
	if err != nil {
		return nil, nil, nil, err
	}
	pins, err := s.PinsOf(g.Root)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading %s: %w", s.PinsPath(), err)
	}
	var keys, ids []string
	for _, p := range pins {
		if !slices.Contains(keys, p.Verifier) {
			keys = append(keys, p.Verifier)
		}
		if !slices.Contains(ids, p.LedgerID) {
			ids = append(ids, p.LedgerID)
		}
	}
	return s, keys, ids, nil
}

// checkExpected adds a problem to rep for each expectation the ledger
// does not meet.
func (o *verifyOptions) checkExpected(rep *verify.Report) {
	for _, e := range o.expect {
		if rep.LedgerID == "" || rep.LedgerID == e.id {
			continue
		}
		rep.Add(verify.Problem{Kind: verify.KindSwapped, Detail: fmt.Sprintf(
			"the ledger is %s, but %s says this root holds ledger %s: the database was swapped or replaced; "+
				"if that was meant, `lockledger trust forget` and `lockledger trust adopt`", rep.LedgerID, e.source, e.id)})
	}
	rep.Finish()
}

// validLedgerIDFlag checks --ledger-id.
func validLedgerIDFlag(id string) error {
	if !trust.ValidLedgerID(id) {
		return events.Invalid("--ledger-id", id, "must be a ledger id (as verify prints it): 1-128 of A-Z a-z 0-9 _ . : -")
	}
	return nil
}

// signerSetFile reads --signers: verifier keys, one a line (blank lines
// and # comments skipped). A file inside the root is refused by the
// caller's keysOutsideRoot rules, as a --verifier-key file is.
func signerSetFile(ctx context.Context, path string) ([]note.Verifier, error) {
	b, err := invocation.ReadFile(ctx, "--signers", path, invocation.NoLimit)
	if err != nil {
		return nil, err
	}
	var out []note.Verifier
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := checkpoint.NewVerifier(line)
		if err != nil {
			return nil, events.Invalid("--signers", fmt.Sprintf("%s:%d", path, i+1), err.Error())
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, events.Invalid("--signers", path, "holds no verifier key")
	}
	return out, nil
}
