package replay

// A ledger's signers: the keys its owner registered (signer_added) and
// revoked (signer_removed), each event counted only when an owner's
// signed statement of it verifies. A reader who trusts the owner's key
// (pinned, or given out of band) trusts through it every key the owner
// registered, so that a fleet's hosts check one another's checkpoints
// and an auditor needs the owner's key alone.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/verify"
)

// Registration is a signer_added or signer_removed event as read.
type Registration struct {
	Seq  int64
	Type events.Type
	events.Signer
}

// Signer is a key the ledger's owner registered: Added is the seq of its
// signer_added, Removed of its signer_removed (0 while it stands), By the
// key that signed the statement.
type Signer struct {
	Key      string `json:"key"`
	Role     string `json:"role"`
	Added    int64  `json:"added_seq"`
	Removed  int64  `json:"removed_seq,omitempty"`
	By       string `json:"by"`
	verifier note.Verifier
}

// ID is the signer's key as checkpoint.KeyID names it.
func (s Signer) ID() string { return checkpoint.VerifierID(s.verifier) }

// ReadRegistrations reads the ledger's signer events in seq order.
func ReadRegistrations(ctx context.Context, q Querier) ([]Registration, error) {
	var out []Registration
	err := ScanRows(ctx, q, Filter{Types: []events.Type{events.SignerAdded, events.SignerRemoved}}, func(r *Row) error {
		reg, err := registrationOf(r)
		if err == nil {
			out = append(out, reg)
		}
		return err
	})
	return out, err
}

// registrationOf decodes a signer event's row (its type not checked).
func registrationOf(r *Row) (Registration, error) {
	var reg struct {
		Type events.Type `json:"type"`
		events.Signer
	}
	if err := json.Unmarshal(r.Body, &reg); err != nil {
		return Registration{}, fmt.Errorf("replay: seq %d: %w", r.Seq, err)
	}
	return Registration{Seq: r.Seq, Type: reg.Type, Signer: reg.Signer}, nil
}

// ExportSigners is the signer set the signer events of an export (see
// VerifyFile) make for a reader who trusts the keys trusted, as
// FoldSigners folds a ledger's: for the ledger ledgerID, or ("") the one
// the export's checkpoint lines name. The lines are not checked here:
// VerifyFile checks the same file, and fails a registration whose line
// is not the log's. An export whose checkpoints name no ledger, or
// several, registers no signer (a note says so). Lines VerifyFile
// reports as malformed are skipped.
func ExportSigners(r io.Reader, ledgerID string, trusted []note.Verifier) ([]Signer, []string, error) {
	var regs []Registration
	var origins []string
	_, err := ScanLines(r, func(_ int64, line []byte) error {
		if h, ok := headerLine(line); ok {
			if h.note == nil || h.cosigned {
				return nil
			}
			if s, err := checkpoint.Open(h.note); err == nil && !slices.Contains(origins, s.Origin) {
				origins = append(origins, s.Origin)
			}
			return nil
		}
		if !bytes.Contains(line, []byte(`"signer_`)) {
			return nil // no signer event: skipped without decoding
		}
		row, err := ParseExportLine(line)
		if err != nil {
			return nil
		}
		if reg, err := registrationOf(row); err == nil && (reg.Type == events.SignerAdded || reg.Type == events.SignerRemoved) {
			regs = append(regs, reg)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if len(regs) == 0 {
		return nil, nil, nil
	}
	origin := ""
	switch {
	case ledgerID != "":
		origin = checkpoint.Origin(ledgerID)
	case len(origins) == 1:
		origin = origins[0]
	default:
		return nil, []string{fmt.Sprintf("the export's %d signer events count for nothing: its checkpoints name %d ledgers, so which ledger they register signers of is not known (give --ledger-id)", len(regs), len(origins))}, nil
	}
	signers, notes := FoldSigners(origin, trusted, regs)
	return signers, notes, nil
}

// FoldSigners is the signer set regs make for a reader who trusts the
// keys trusted (out of band): in seq order, an event counts when its
// statement (checkpoint.SignerStatement of origin and the event) is
// signed by a trusted key or by a registered owner standing at that
// seq. The notes say which events did not count, and why.
func FoldSigners(origin string, trusted []note.Verifier, regs []Registration) (signers []Signer, notes []string) {
	owners := slices.Clone(trusted)
	for _, r := range regs {
		action := checkpoint.SignerAdd
		if r.Type == events.SignerRemoved {
			action = checkpoint.SignerRemove
		}
		text := checkpoint.SignerStatement(origin, action, r.Role, r.Key)
		by, err := checkpoint.OpenStatement(r.Statement, text, owners...)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s at seq %d (key %s) does not count: %v", r.Type, r.Seq, keyName(r.Key), err))
			continue
		}
		v, err := checkpoint.NewVerifier(r.Key)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s at seq %d does not count: its key: %v", r.Type, r.Seq, err))
			continue
		}
		id := checkpoint.VerifierID(v)
		if action == checkpoint.SignerAdd {
			signers = append(signers, Signer{Key: r.Key, Role: r.Role, Added: r.Seq, By: by, verifier: v})
			if r.Role == events.RoleOwner && !slices.ContainsFunc(owners, func(o note.Verifier) bool { return checkpoint.VerifierID(o) == id }) {
				owners = append(owners, v)
			}
			continue
		}
		for i := range signers {
			if s := &signers[i]; s.Removed == 0 && checkpoint.VerifierID(s.verifier) == id {
				s.Removed = r.Seq
			}
		}
		owners = slices.DeleteFunc(owners, func(o note.Verifier) bool {
			return checkpoint.VerifierID(o) == id && !slices.ContainsFunc(trusted, func(t note.Verifier) bool { return checkpoint.VerifierID(t) == id })
		})
	}
	return signers, notes
}

func keyName(key string) string {
	if v, err := checkpoint.NewVerifier(key); err == nil {
		return checkpoint.VerifierID(v)
	}
	return fmt.Sprintf("%.40q", key)
}

// WithSigners adds the signer set to t: every registered key verifies
// checkpoints, and a key removed at seq r vouches for no checkpoint of r
// or more events.
func (t *Trust) WithSigners(signers []Signer) {
	t.Verifiers = slices.Clip(t.Verifiers)
	for _, s := range signers {
		id := checkpoint.VerifierID(s.verifier)
		if !slices.ContainsFunc(t.Verifiers, func(v note.Verifier) bool { return checkpoint.VerifierID(v) == id }) {
			t.Verifiers = append(t.Verifiers, s.verifier)
		}
		if s.Removed > 0 {
			if t.Revoked == nil {
				t.Revoked = map[string]int64{}
			}
			if r, ok := t.Revoked[id]; !ok || s.Removed < r {
				t.Revoked[id] = s.Removed
			}
		}
	}
}

// revoked reports whether every key that verified s was removed from
// the signers at or before the size s covers.
func (t *Trust) revoked(s *checkpoint.Signed) (int64, bool) {
	if len(t.Revoked) == 0 || len(s.Keys) == 0 {
		return 0, false
	}
	var at int64
	for i, k := range s.Keys {
		r, ok := t.Revoked[checkpoint.KeyID(k, s.Hashes[i])]
		if !ok || s.Size < r {
			return 0, false
		}
		at = r
	}
	return at, true
}

// VerifyExport is VerifyFile of the export f against t, which trusts too
// the keys the export's own signer events register, vouched for by t's
// keys (as verify trusts a ledger's; ledgerID as ExportSigners takes it):
// f is read twice, its signer events first. A file that cannot be read
// twice (a pipe) is checked with t's keys alone, and a note says so.
func VerifyExport(f io.ReadSeeker, source, prevHash, ledgerID string, t *Trust, opts ...VerifyOption) (*verify.Report, error) {
	var notes []string
	if _, err := f.Seek(0, io.SeekCurrent); err != nil && len(t.Verifiers) > 0 {
		notes = append(notes, "the export's signer events were not read (it cannot be read twice: "+cmp.Or(errors.Unwrap(err), err).Error()+"): only the keys given vouch for its checkpoints")
	} else if len(t.Verifiers) > 0 {
		signers, snotes, err := ExportSigners(f, ledgerID, t.Verifiers)
		if err != nil {
			return nil, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("%s: reading it again after its signer events: %w", source, err)
		}
		notes = snotes
		t.WithSigners(signers)
	}
	rep, err := VerifyFile(f, source, prevHash, append(opts, WithTrust(t))...)
	if rep != nil {
		rep.Notes = append(rep.Notes, notes...)
	}
	return rep, err
}
