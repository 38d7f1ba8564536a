package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/outfile"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
)

// A fold is kept between runs in a state file, so that a scrape run once a
// minute folds only the events appended since the last one. The state is
// the fold itself (counters, histograms, the holding fold's locks and
// open holdings), not a table of the ledger: metrics only reads, the
// user who scrapes may not write the database (a read-only root, a
// PostgreSQL role that only selects), and the state is derived, so losing
// it costs one full fold and nothing else. It names the ledger, the seq
// and the hash of the last event it folded: a state of another ledger,
// or one the log does not hold at that seq (a restored database, a cut
// log, another copy of the root), is not used and the log is folded from
// its start.

// stateVersion is the form of the state file; another is folded anew.
const stateVersion = 1

// maxStateSize bounds a state file read: a fold keeps state per lock,
// never per event.
const maxStateSize = 256 << 20

type stateJSON struct {
	Version  int                   `json:"version"`
	LedgerID string                `json:"ledger_id"`
	Seq      int64                 `json:"seq"`
	Hash     string                `json:"hash"`
	Verify   *verifyResult         `json:"verify,omitempty"`
	Locks    map[string]*lockStats `json:"locks"`
	Holdings json.RawMessage       `json:"holdings"`
}

// MarshalState is the fold as a state file of ledger ledgerID.
func (f *Fold) MarshalState(ledgerID string) ([]byte, error) {
	holdings, err := f.holdings.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return json.Marshal(stateJSON{Version: stateVersion, LedgerID: ledgerID, Seq: f.seq, Hash: f.lastHash, Verify: f.verify,
		Locks: f.locks, Holdings: holdings})
}

// StaleStateError says why a state file is not used: its form, ledger,
// seq or event hash is not this log's.
type StaleStateError struct{ Reason string }

func (e *StaleStateError) Error() string { return "metrics state: " + e.Reason }

// UnmarshalState is the fold a state file of ledger ledgerID keeps; a
// *StaleStateError when it is of another form or ledger.
func UnmarshalState(b []byte, ledgerID string) (*Fold, error) {
	var k stateJSON
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, &StaleStateError{Reason: "unreadable: " + err.Error()}
	}
	if k.Version != stateVersion {
		return nil, &StaleStateError{Reason: fmt.Sprintf("version %d, not %d", k.Version, stateVersion)}
	}
	if k.LedgerID != ledgerID {
		return nil, &StaleStateError{Reason: fmt.Sprintf("kept for ledger %q, not this ledger %q", k.LedgerID, ledgerID)}
	}
	f := NewFold()
	if err := f.holdings.UnmarshalJSON(k.Holdings); err != nil {
		return nil, &StaleStateError{Reason: "unreadable holdings: " + err.Error()}
	}
	if f.holdings.State().Seq != k.Seq {
		return nil, &StaleStateError{Reason: fmt.Sprintf("holdings at seq %d, counters at seq %d", f.holdings.State().Seq, k.Seq)}
	}
	f.seq, f.lastHash, f.verify = k.Seq, k.Hash, k.Verify
	for name, s := range k.Locks {
		if s == nil {
			return nil, &StaleStateError{Reason: fmt.Sprintf("lock %q has no counters", name)}
		}
		// name is a label value already (see label): kept as it is.
		s.Steals, s.Releases, s.Refusals = orEmpty(s.Steals), orEmpty(s.Releases), orEmpty(s.Refusals)
		if err := s.Hold.restore(holdBuckets); err != nil {
			return nil, &StaleStateError{Reason: fmt.Sprintf("lock %q: hold: %v", name, err)}
		}
		for i := range s.Wait {
			if err := s.Wait[i].restore(waitBuckets); err != nil {
				return nil, &StaleStateError{Reason: fmt.Sprintf("lock %q: wait: %v", name, err)}
			}
		}
		f.locks[name] = s
	}
	return f, nil
}

func orEmpty(m map[string]uint64) map[string]uint64 {
	if m == nil {
		return map[string]uint64{}
	}
	return m
}

// Follows says whether the fold is of a prefix of the log q reads: the
// event at the fold's last seq has the hash it folded. A *StaleStateError
// says why not (the log is shorter, or holds another event there).
func (f *Fold) Follows(ctx context.Context, q replay.Querier) error {
	if f.seq == 0 {
		return nil
	}
	hash, err := store.EventHash(ctx, q, f.seq)
	switch {
	case err != nil:
		return err
	case hash == "":
		return &StaleStateError{Reason: fmt.Sprintf("it follows seq %d, which the live log does not hold (cut, restored, or pruned past it)", f.seq)}
	case hash != f.lastHash:
		return &StaleStateError{Reason: fmt.Sprintf("it follows event %d with hash %s, but the log's event %d has hash %s", f.seq, f.lastHash, f.seq, hash)}
	}
	return nil
}

// LoadState reads the state file at path for ledger ledgerID and checks
// it against the log q reads. A missing file is (nil, nil); a state that
// cannot be used is a *StaleStateError; other errors are the file's.
func LoadState(ctx context.Context, q replay.Querier, path, ledgerID string) (*Fold, error) {
	fd, _, err := outfile.OpenRegular(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case errors.Is(err, outfile.ErrNotRegular):
		return nil, &StaleStateError{Reason: path + " is not a regular file"}
	case err != nil:
		return nil, err
	}
	defer fd.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(fd, maxStateSize+1)); err != nil {
		return nil, err
	}
	if buf.Len() > maxStateSize {
		return nil, &StaleStateError{Reason: fmt.Sprintf("larger than %d bytes", maxStateSize)}
	}
	f, err := UnmarshalState(buf.Bytes(), ledgerID)
	if err != nil {
		return nil, err
	}
	if err := f.Follows(ctx, q); err != nil {
		return nil, err
	}
	return f, nil
}
