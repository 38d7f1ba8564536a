package replay

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/lockledger/lockledger/events"
)

// A HoldingFold's state as JSON, so that a reader that folds the same log
// again and again (metrics, once a minute) can keep where it stopped and
// fold only the events after it. What is kept is exactly what Apply reads
// from one event to the next: each lock (holders, shared holders, claims,
// queue, last event), the anomalies so far, and each open holding's
// opening event, of which only what names and dates it (seq, type, at,
// lock, request id) is kept. A fold that keeps its overlaps
// (KeepOverlaps), or holds closed holdings its caller has not taken,
// cannot be kept.

// stateJSON is the kept form of a State (one that keeps no overlaps).
type stateJSON struct {
	Seq          int64     `json:"seq"`
	Events       int64     `json:"events"`
	Anomalies    []Anomaly `json:"anomalies,omitempty"`
	AnomalyCount int       `json:"anomaly_count,omitempty"`
	Locks        []*Lock   `json:"locks"`
}

// holdingFoldJSON is the kept form of a HoldingFold.
type holdingFoldJSON struct {
	stateJSON
	Open       []openJSON `json:"open,omitempty"`
	OpenShared []openJSON `json:"open_shared,omitempty"`
}

// openJSON is an open holding: its lock and what names and dates the
// event that opened it.
type openJSON struct {
	Lock      string      `json:"lock"`
	Seq       int64       `json:"seq"`
	Type      events.Type `json:"type"`
	At        string      `json:"at"`
	RequestID string      `json:"request_id"`
}

// ErrNotKeepable is MarshalJSON's refusal of a fold whose state is more
// than what is kept (see above).
var ErrNotKeepable = errors.New("replay: this holding fold cannot be kept")

// MarshalJSON is the fold's state (see holdingFoldJSON).
func (f *HoldingFold) MarshalJSON() ([]byte, error) {
	if len(f.Closed) > 0 {
		return nil, ErrNotKeepable
	}
	st, err := f.st.kept()
	if err != nil {
		return nil, err
	}
	k := holdingFoldJSON{stateJSON: st}
	for _, h := range f.Open() {
		o := openJSON{Lock: h.Lock, Seq: h.Opened.Seq, Type: h.Opened.Type, At: h.Opened.At, RequestID: h.Opened.RequestID}
		if h.Shared {
			k.OpenShared = append(k.OpenShared, o)
		} else {
			k.Open = append(k.Open, o)
		}
	}
	return json.Marshal(k)
}

// MarshalJSON is the state as the next fold reads it back (UnmarshalJSON):
// every lock and the anomalies; a state that keeps its overlaps cannot be
// kept.
func (s *State) MarshalJSON() ([]byte, error) {
	k, err := s.kept()
	if err != nil {
		return nil, err
	}
	return json.Marshal(k)
}

// UnmarshalJSON replaces s with the state MarshalJSON kept.
func (s *State) UnmarshalJSON(b []byte) error {
	var k stateJSON
	if err := json.Unmarshal(b, &k); err != nil {
		return err
	}
	n, err := k.state()
	if err != nil {
		return err
	}
	*s = *n
	return nil
}

func (s *State) kept() (stateJSON, error) {
	if s.keepOverlaps {
		return stateJSON{}, ErrNotKeepable
	}
	return s.form(), nil
}

// form is the state's kept form, whatever the state keeps beside it (a
// snapshot stores the same form; verify's fold keeps its overlaps too).
// Empty lists are left out, so two folds that differ only in an empty
// list against none have one form, and one hash.
func (s *State) form() stateJSON {
	k := stateJSON{Seq: s.Seq, Events: s.Events, Anomalies: s.Anomalies, AnomalyCount: s.AnomalyCount}
	if len(s.locks) > 0 {
		k.Locks = s.Locks()
	}
	return k
}

func (k *stateJSON) state() (*State, error) {
	n := NewState()
	n.Seq, n.Events, n.Anomalies, n.AnomalyCount = k.Seq, k.Events, k.Anomalies, k.AnomalyCount
	for _, l := range k.Locks {
		switch {
		case l == nil || l.Name == "" || n.locks[l.Name] != nil:
			return nil, fmt.Errorf("replay: kept fold: lock %q named twice or empty", cmp.Or(l, &Lock{}).Name)
		case l.Held && l.Holder == nil:
			return nil, fmt.Errorf("replay: kept fold: lock %q held with no holder", l.Name)
		case slices.Contains(l.Shared, nil):
			return nil, fmt.Errorf("replay: kept fold: lock %q has an empty shared holder", l.Name)
		}
		n.locks[l.Name] = l
	}
	return n, nil
}

// UnmarshalJSON replaces f with the fold MarshalJSON kept.
func (f *HoldingFold) UnmarshalJSON(b []byte) error {
	var k holdingFoldJSON
	if err := json.Unmarshal(b, &k); err != nil {
		return err
	}
	st, err := k.state()
	if err != nil {
		return err
	}
	n := NewHoldingFold()
	n.st = st
	for _, o := range k.Open {
		h, err := o.holding(false)
		if err != nil {
			return err
		}
		n.open[o.Lock] = h
	}
	for _, o := range k.OpenShared {
		h, err := o.holding(true)
		if err != nil {
			return err
		}
		n.openShared(o.RequestID, h)
	}
	*f = *n
	return nil
}

func (o openJSON) holding(shared bool) (*Holding, error) {
	t, err := events.ParseTime(o.At)
	if err != nil {
		return nil, fmt.Errorf("replay: kept fold: holding of %q opened at %q: %w", o.Lock, o.At, err)
	}
	ev := &Event{Time: t}
	ev.Seq, ev.Type, ev.At, ev.LockName, ev.RequestID = o.Seq, o.Type, o.At, o.Lock, o.RequestID
	return &Holding{Lock: o.Lock, Opened: ev, Shared: shared}, nil
}
