package ledger

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/store"
)

// repair is a file change that brings a lock file back in line with the
// committed locks table, after a process died between its file change and
// its commit, or between its commit and its file change.
type repair int

const (
	repairDropPhantom    repair = iota // the lock file is an uncommitted change: remove it
	repairDropJournal                  // remove the journal (and any swap file)
	repairPlace                        // the ledger holds the lock but the file is missing
	repairReplace                      // the file is an older version of the ledger holder's
	repairRemoveLeftover               // the lock is free but our old file is still there
)

// view is a lock as the table and the files show it, interpreted.
type view struct {
	name    string
	row     *store.Row
	file    lockfile.State
	holder  *holding // nil: free
	repairs []repair
	// interloper: a foreign file sits at the path of a lock the ledger holds.
	interloper bool
}

// interpret decides who holds a lock from its table row, its lock file and
// its journal. It has no side effects; writers apply v.repairs.
func interpret(name string, r *store.Row, file, journal lockfile.State) *view {
	v := &view{name: name, row: r, file: file}
	if journal.Exists {
		committed := r != nil && r.Held && bytes.Equal(r.File, journal.Data)
		if !committed && file.Exists && file.Ino == journal.Ino {
			v.repairs = append(v.repairs, repairDropPhantom)
			v.file = lockfile.State{}
		}
		v.repairs = append(v.repairs, repairDropJournal)
	}
	if r != nil && r.Held {
		v.holder = holdingFromRow(r)
		switch {
		case !v.file.Exists:
			v.repairs = append(v.repairs, repairPlace)
		case !bytes.Equal(v.file.Data, r.File):
			if ofRequest(v.file.Data, r) {
				v.repairs = append(v.repairs, repairReplace)
			} else {
				v.interloper = true
			}
		}
		return v
	}
	if !v.file.Exists {
		return v
	}
	if r != nil && (bytes.Equal(v.file.Data, r.File) || ofRequest(v.file.Data, r)) {
		v.repairs = append(v.repairs, repairRemoveLeftover)
		v.file = lockfile.State{}
		return v
	}
	v.holder = foreignHolding(name, v.file)
	return v
}

// ofRequest: data is a lock file of r's request (the ledger's own file, in
// another version).
func ofRequest(data []byte, r *store.Row) bool {
	rec, err := ParseLockFile(data)
	return err == nil && rec.RequestID == r.RequestID
}

// holdingFromRow is the holding r records: its exclusive holder, or for a
// free lock the last one, whose record its lock file (the row's file)
// holds; a free row keeps no holder's columns.
func holdingFromRow(r *store.Row) *holding {
	var h *holding
	if r.Held {
		h = sharedFromRow(&r.HolderRow).holding
	} else {
		rec, err := ParseLockFile(r.File)
		if err != nil {
			rec = events.Record{LockVersion: events.LockVersion, LockName: r.Name, RequestID: r.RequestID, HostID: r.HostID}
		}
		created, _ := events.ParseTime(rec.CreatedAt)
		hb, _ := events.ParseTime(rec.LastHeartbeatAt)
		h = &holding{rec: rec, created: created, heartbeat: hb, token: r.FencingToken}
	}
	h.targets, h.file = rowTargets(r), r.File
	return h
}

// rowTargets are the paths the row's holding (or its last one) projects,
// read from the row alone: a caller that needs nothing else of a free
// lock's last holder does not parse its lock file.
func rowTargets(r *store.Row) []events.Target {
	var targets []events.Target
	if r.Targets != "" && r.Targets != "[]" {
		_ = json.Unmarshal([]byte(r.Targets), &targets)
	}
	return targets
}

// foreignHolding reads a lock file the ledger did not write. An unreadable
// one is still a holder (fail safe), marked corrupt.
func foreignHolding(name string, f lockfile.State) *holding {
	data := f.Data
	rec, err := ParseLockFile(data)
	if err != nil {
		return &holding{
			rec: events.Record{LockVersion: events.LockVersion, LockName: name, RequestID: "unknown", Actor: "unknown",
				HostID: "unknown", CreatedAt: events.FormatLockTime(time.Unix(0, 0)),
				LastHeartbeatAt: events.FormatLockTime(time.Unix(0, 0)), TTLSeconds: 1, Metadata: map[string]string{}},
			file: data, foreign: true, corrupt: unreadableFile(f),
		}
	}
	created, _ := events.ParseTime(rec.CreatedAt)
	hb, _ := events.ParseTime(rec.LastHeartbeatAt)
	return &holding{rec: rec, created: created, heartbeat: hb, file: data, foreign: true}
}
