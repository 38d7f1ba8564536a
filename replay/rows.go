package replay

import (
	"encoding/json"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
)

// StoreRow is the locks row the ledger's write path leaves for lk: for
// a held lock with its exclusive holder's columns. nil when the ledger never held the lock exclusively
// (no row).
func (lk *Lock) StoreRow() *store.Row {
	h := lk.Holder
	if h == nil {
		return nil
	}
	r := &store.Row{HolderRow: store.HolderRow{Name: lk.Name, RequestID: h.Record.RequestID, HostID: h.Record.HostID,
		FencingToken: h.Token, UpdatedSeq: lk.UpdatedSeq, Targets: store.TargetsJSON(h.Targets)}, Held: lk.Held, File: h.File()}
	if lk.Held {
		r.HolderRow = *lk.HolderRow(h, true)
	}
	return r
}

// HolderRow is the lock_holders row of h, a holder of lk: lk's exclusive holder (slot limit 1, updated by the
// lock's last write) or one of its shared ones (lk's limit, updated as
// replay knows by its acquiring event: an understatement, which the
// truncation checks allow).
func (lk *Lock) HolderRow(h *Holder, exclusive bool) *store.HolderRow {
	md, err := json.Marshal(h.Record.Metadata)
	if err != nil {
		md = []byte("{}") // a map of strings always marshals
	}
	r := &store.HolderRow{Name: lk.Name, RequestID: h.Record.RequestID, Actor: h.Record.Actor, Intent: h.Record.Intent,
		IntentVersion: h.Record.IntentVersion, HostID: h.Record.HostID, PID: h.Record.PID, PIDStart: h.PIDStart,
		BootID: h.BootID, CreatedAt: events.FormatTime(h.Created), HeartbeatAt: events.FormatTime(h.Heartbeat),
		TTLSeconds: h.Record.TTLSeconds, Metadata: string(md), FencingToken: h.Token, Limit: lk.Limit,
		UpdatedSeq: h.Token, PIDNS: h.PIDNS, Targets: "[]"}
	if exclusive {
		r.Exclusive, r.Limit, r.UpdatedSeq, r.Targets = true, 1, lk.UpdatedSeq, store.TargetsJSON(h.Targets)
	}
	return r
}
