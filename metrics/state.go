package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/outfile"
	"github.com/lockledger/lockledger/replay"
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
	Version  int                       `json:"version"`
	LedgerID string                    `json:"ledger_id"`
	Seq      int64                     `json:"seq"`
	Hash     string                    `json:"hash"`
	Verify   *verifyJSON               `json:"verify,omitempty"`
	Locks    map[string]*lockStatsJSON `json:"locks"`
	Holdings json.RawMessage           `json:"holdings"`
}

type verifyJSON struct {
	OK       bool   `json:"ok"`
	Problems int    `json:"problems"`
	At       string `json:"at"`
	Seq      int64  `json:"seq"`
}

type lockStatsJSON struct {
	Acquisitions      uint64                           `json:"acquisitions"`
	HeartbeatFailures uint64                           `json:"heartbeat_failures"`
	Lost              uint64                           `json:"lost"`
	Steals            map[string]uint64                `json:"steals,omitempty"`
	Releases          map[string]uint64                `json:"releases,omitempty"`
	Refusals          map[string]uint64                `json:"refusals,omitempty"`
	Hold              histogramJSON                    `json:"hold"`
	Wait              [len(waitOutcomes)]histogramJSON `json:"wait"`
}

type histogramJSON struct {
	Counts []uint64 `json:"counts"`
	Sum    float64  `json:"sum"`
	Count  uint64   `json:"count"`
}

func (h *histogram) kept() histogramJSON {
	return histogramJSON{Counts: h.counts, Sum: h.sum, Count: h.count}
}

func (k histogramJSON) restore(bounds []float64) (histogram, error) {
	if len(k.Counts) != len(bounds)+1 {
		return histogram{}, fmt.Errorf("a histogram of %d buckets, not %d", len(k.Counts), len(bounds)+1)
	}
	return histogram{bounds: bounds, counts: k.Counts, sum: k.Sum, count: k.Count}, nil
}

// MarshalState is the fold as a state file of ledger ledgerID.
func (f *Fold) MarshalState(ledgerID string) ([]byte, error) {
	holdings, err := f.holdings.MarshalJSON()
	if err != nil {
		return nil, err
	}
	k := stateJSON{Version: stateVersion, LedgerID: ledgerID, Seq: f.seq, Hash: f.lastHash,
		Locks: make(map[string]*lockStatsJSON, len(f.locks)), Holdings: holdings}
	if v := f.verify; v != nil {
		k.Verify = &verifyJSON{OK: v.ok, Problems: v.problems, At: v.at.Format(time.RFC3339Nano), Seq: v.seq}
	}
	for name, s := range f.locks {
		ks := &lockStatsJSON{Acquisitions: s.acquisitions, HeartbeatFailures: s.heartbeatFailures, Lost: s.lost,
			Steals: s.steals, Releases: s.releases, Refusals: s.refusals, Hold: s.hold.kept()}
		for i := range s.wait {
			ks.Wait[i] = s.wait[i].kept()
		}
		k.Locks[name] = ks
	}
	return json.Marshal(k)
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
	f.seq, f.lastHash = k.Seq, k.Hash
	if v := k.Verify; v != nil {
		at, err := time.Parse(time.RFC3339Nano, v.At)
		if err != nil {
			return nil, &StaleStateError{Reason: "unreadable verify time: " + err.Error()}
		}
		f.verify = &verifyResult{ok: v.OK, problems: v.Problems, at: at, seq: v.Seq}
	}
	for name, ks := range k.Locks {
		if ks == nil {
			return nil, &StaleStateError{Reason: fmt.Sprintf("lock %q has no counters", name)}
		}
		// name is a label value already (see label): kept as it is.
		s := &lockStats{acquisitions: ks.Acquisitions, heartbeatFailures: ks.HeartbeatFailures, lost: ks.Lost,
			steals: orEmpty(ks.Steals), releases: orEmpty(ks.Releases), refusals: orEmpty(ks.Refusals)}
		f.locks[name] = s
		var err error
		if s.hold, err = ks.Hold.restore(holdBuckets); err != nil {
			return nil, &StaleStateError{Reason: fmt.Sprintf("lock %q: hold: %v", name, err)}
		}
		for i := range s.wait {
			if s.wait[i], err = ks.Wait[i].restore(waitBuckets); err != nil {
				return nil, &StaleStateError{Reason: fmt.Sprintf("lock %q: wait: %v", name, err)}
			}
		}
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
	found, hash := false, ""
	err := replay.ScanRows(ctx, q, replay.Filter{FromSeq: f.seq, ToSeq: f.seq}, func(r *replay.Row) error {
		found, hash = true, r.Hash
		return nil
	})
	switch {
	case err != nil:
		return err
	case !found:
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
