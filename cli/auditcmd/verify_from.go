package auditcmd

import (
	"encoding/json"
	"fmt"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/verify"
)

// incremental: this verify may check only the events after the head this
// user's last verify of the ledger found intact. Only a plain verify,
// against the trust store's pins and heads, does: --full checks the whole
// log, and so does a verify given heads, keys, witness keys or archives
// of its own (they may vouch for events before that head).
func (o *verifyOptions) incremental(t *replay.Trust) bool {
	return !o.full && o.file == "" && len(o.archives) == 0 && len(o.checkpoints) == 0 && len(o.verifiers) == 0 &&
		len(o.heads) == 0 && o.signers == "" && !o.witnessFlag && len(t.Cosigners) == 0
}

// verifiedHeads adds to opts the head this user's last verify of the
// ledger kept (for an incremental verify) and the keeping of this one's.
func (o *verifyOptions) verifiedHeads(t *replay.Trust, opts []ledger.VerifyOption) ([]ledger.VerifyOption, error) {
	s, err := o.g.TrustStore()
	if err != nil {
		return nil, err
	}
	o.verified = invocation.VerifiedOf(s, o.g.Root)
	o.kept = &replay.Verified{}
	opts = append(opts, ledger.KeepVerified(o.kept))
	if !o.incremental(t) {
		return opts, nil
	}
	return append(opts, ledger.FromKept(o.readVerified)), nil
}

// readVerified is ledger id's head kept in the trust store; nil (the whole
// log is checked) when there is none, or when it cannot be read as one.
func (o *verifyOptions) readVerified(id string) (*replay.Verified, error) {
	b, err := o.verified.Read(id)
	if err != nil || b == nil {
		return nil, err
	}
	var v replay.Verified
	err = json.Unmarshal(b, &v)
	if err == nil && v.LedgerID != id {
		err = fmt.Errorf("it is of ledger %q", v.LedgerID)
	}
	if err == nil {
		err = v.Check()
	}
	if err != nil {
		o.g.Log.Warn("verify: the head kept of the last verify cannot be read: checking the whole log", "file", o.verified.Path(id), "error", err)
		return nil, nil
	}
	return &v, nil
}

// keepVerified keeps the head of a verify that found the ledger intact,
// for the next one to start from; a failure to keep it costs the next
// verify a check of the whole log, and is a warning.
func (o *verifyOptions) keepVerified(rep *verify.Report) {
	if o.kept == nil || o.kept.Seq == 0 || !rep.OK || o.kept.LedgerID != rep.LedgerID {
		return
	}
	b, err := json.Marshal(o.kept)
	if err == nil {
		err = o.verified.Store(o.kept.LedgerID, b)
	}
	if err != nil {
		o.g.Log.Warn("verify: cannot keep the head verified for the next verify", "file", o.verified.Path(o.kept.LedgerID), "error", err)
	}
}

// checkKind is what --json's check says: full or incremental (a ledger
// only).
func (o *verifyOptions) checkKind(rep *verify.Report) string {
	switch {
	case o.file != "":
		return ""
	case rep.From != nil:
		return "incremental"
	}
	return "full"
}
