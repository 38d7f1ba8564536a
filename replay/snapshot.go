package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
)

// snapshotVersion is the encoding of a snapshot's state. Change it with
// any change to State, Lock, Holder or to what Apply makes of an event:
// snapshots of another version are not read (and verify notes them), so
// that a fold that changed is never mixed with one that did not.
const snapshotVersion = 1

// encodeSnapshot is the state as a snapshot stores it (its kept form,
// as State.MarshalJSON writes it), and its hash.
func (s *State) encodeSnapshot() ([]byte, string) {
	b, err := json.Marshal(s.form())
	if err != nil {
		// Every field is a plain value, a string, a slice or a map of strings.
		panic(fmt.Sprintf("replay: snapshot: %v", err))
	}
	return b, StateHash(b)
}

// StateHash is the hash a snapshot records of its state: hex SHA-256.
func StateHash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// decodeSnapshot is the state a snapshot stores.
func decodeSnapshot(b []byte) (*State, error) {
	var in stateJSON
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&in); err != nil {
		return nil, err
	}
	return in.state()
}

// atBounds are the times a snapshot records of the events folded before
// it, which readers bound their searches by: the latest of all, and the
// earliest of its block (the every events it ends; block is its end).
type atBounds struct {
	every, block  int64
	max, blockMin string
}

func (b *atBounds) see(seq int64, at string) {
	b.max = max(b.max, at)
	if end := (seq + b.every - 1) / b.every * b.every; end != b.block || at < b.blockMin {
		b.block, b.blockMin = end, at
	}
}

// snapshotTries bounds how many snapshots a reader tries before it folds
// from the first event: a snapshot it cannot trust is a sign of damage
// that verify names, not something to search past.
const snapshotTries = 3

// nearestSnapshot is the state of the newest snapshot a fold up to seq to
// (of the events at or before t, when t is set) may start from, checked
// against the events table: the event it follows still has the hash it
// recorded, the live log still starts where it started, and the state
// still hashes to what it recorded. ok is false when there is none to
// trust (none stored, or a ledger without the table): the fold then starts
// at the first event, as it would without snapshots.
func nearestSnapshot(ctx context.Context, q Querier, t time.Time, to, first int64) (st *State, maxAt string, ok bool, err error) {
	until := ""
	if !t.IsZero() {
		until = events.FormatTime(t)
	}
	tries := 0
	for s, err := range store.SnapshotsBefore(ctx, q, to, until) {
		if err != nil {
			return nil, "", false, err
		}
		if s.Version != snapshotVersion || s.FromSeq != first {
			continue // another encoding, or a fold of events pruned since
		}
		if tries++; tries > snapshotTries {
			break
		}
		if s.LogHash == "" || s.LogHash != s.EventHash || StateHash(s.State) != s.StateHash {
			continue
		}
		if st, err := decodeSnapshot(s.State); err == nil && st.Seq == s.Seq {
			return st, s.MaxAt, true, nil
		}
	}
	return nil, "", false, nil
}

// onlyLock keeps lock alone of st (a fold of one lock's events).
func (st *State) onlyLock(lock string) {
	l := st.locks[lock]
	st.locks = map[string]*Lock{}
	if l != nil {
		st.locks[lock] = l
	}
	var kept []Anomaly
	for _, a := range st.Anomalies {
		if a.Lock == lock {
			kept = append(kept, a)
		}
	}
	st.Anomalies, st.AnomalyCount = kept, len(kept)
}

// BuildSnapshots folds the log from the newest snapshot it can trust (or
// from the first event) and hands emit each snapshot due on the way, at
// every multiple of every (SnapshotEvery, but for tests) up to the log's
// head, in seq order; budget (0: none) bounds how many events it folds,
// so that a writer catching up on a long log without snapshots pays a
// bounded share each time. emit's error ends it.
func BuildSnapshots(ctx context.Context, q Querier, every, budget int64, emit func(*store.Snapshot) error) error {
	first, head, ok, err := store.SeqRange(ctx, q, time.Time{}, time.Time{})
	if err != nil || !ok || head/every*every < first {
		return err
	}
	st, maxAt, found, err := nearestSnapshot(ctx, q, time.Time{}, head, first)
	if err != nil {
		return err
	}
	if !found {
		st = NewState()
	}
	last := head / every * every
	if budget > 0 {
		last = min(last, (max(st.Seq, first-1)+budget)/every*every)
	}
	if last <= st.Seq {
		return nil
	}
	ev := &Event{}
	at := atBounds{every: every, max: maxAt}
	fold := func(r *store.BodyRow) error {
		err := st.applyRow(ev, r)
		if err == nil {
			at.see(r.Seq, ev.At)
		}
		return err
	}
	// One read per snapshot: the hash of the event it follows is read once
	// the rows before it are, never beside an open read (PostgreSQL's
	// connection runs one statement at a time).
	next := (st.Seq/every + 1) * every
	for next < first {
		next += every
	}
	for ; next <= last; next += every {
		if err := readAhead(ctx, q, Filter{FromSeq: st.Seq + 1, ToSeq: next}, fold); err != nil {
			return err
		}
		if st.Seq != next {
			return fmt.Errorf("replay: snapshot: the log has no event %d", next)
		}
		hash, err := store.EventHash(ctx, q, next)
		if err != nil {
			return err
		}
		b, h := st.encodeSnapshot()
		if err := emit(&store.Snapshot{Seq: next, EventHash: hash, FromSeq: first, MaxAt: at.max, MinAt: at.blockMin, Version: snapshotVersion, StateHash: h, State: b}); err != nil {
			return err
		}
	}
	return nil
}
