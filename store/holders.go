package store

import (
	"context"
	"database/sql"
)

// HolderRow is one line of lock_holders: one holder of a lock, its
// exclusive holder (Exclusive, a slot limit of 1) or a shared one.
type HolderRow struct {
	Name          string
	RequestID     string
	Actor         string
	Intent        string
	IntentVersion string
	HostID        string
	PID           int
	PIDStart      string
	BootID        string
	CreatedAt     string
	HeartbeatAt   string
	TTLSeconds    int64
	Metadata      string
	FencingToken  int64
	Limit         int64
	UpdatedSeq    int64
	PIDNS         *int64 // the holder's PID namespace; nil where none was recorded
	Exclusive     bool
	Targets       string // JSON array of events.Target: an exclusive holder's --file targets
}

func (r *HolderRow) TargetsJSON() string {
	if r.Targets == "" {
		return "[]"
	}
	return r.Targets
}

const HolderColumns = `lock_name, request_id, actor, intent, intent_version, host_id, pid, pid_start, boot_id,
	created_at, heartbeat_at, ttl_seconds, metadata, fencing_token, slot_limit, updated_seq, pid_ns, exclusive, targets`

func ScanHolder(s Scanner) (*HolderRow, error) {
	var r HolderRow
	var exclusive int
	if err := s.Scan(&r.Name, &r.RequestID, &r.Actor, &r.Intent, &r.IntentVersion, &r.HostID, &r.PID, &r.PIDStart,
		&r.BootID, &r.CreatedAt, &r.HeartbeatAt, &r.TTLSeconds, &r.Metadata, &r.FencingToken, &r.Limit,
		&r.UpdatedSeq, &r.PIDNS, &exclusive, &r.Targets); err != nil {
		return nil, err
	}
	r.Exclusive = exclusive != 0
	return &r, nil
}

// LoadShared returns a lock's shared holders, ordered by request id (its
// exclusive holder is read with its row: LoadRow).
func LoadShared(ctx context.Context, q Querier, name string) ([]*HolderRow, error) {
	if rows, ok := batchOf(q).readShared(name); ok {
		return rows, nil
	}
	return QueryAll(ctx, q, scanHolder, `SELECT `+HolderColumns+` FROM lock_holders WHERE lock_name = $1 AND exclusive = 0 ORDER BY request_id`, name)
}

// LoadAllHolders returns every holder of every lock, exclusive and
// shared, ordered by lock and request id.
func LoadAllHolders(ctx context.Context, q Querier) ([]*HolderRow, error) {
	return QueryAll(ctx, q, scanHolder, `SELECT `+HolderColumns+` FROM lock_holders ORDER BY lock_name, request_id`)
}

func scanHolder(rs *sql.Rows, r **HolderRow) (err error) {
	*r, err = ScanHolder(rs)
	return err
}

func SaveHolder(ctx context.Context, tx Execer, r *HolderRow) error {
	exclusive := 0
	if r.Exclusive {
		exclusive = 1
	}
	if b := batchOf(tx); b != nil {
		b.add(r.Name, func(w *decisionWrites) {
			w.Rows = append(w.Rows, holderJSON{"save_holder", r.Name, r.RequestID, r.Actor, r.Intent, r.IntentVersion, r.HostID,
				r.PID, r.PIDStart, r.BootID, r.CreatedAt, r.HeartbeatAt, r.TTLSeconds, r.Metadata, r.FencingToken, r.Limit,
				r.UpdatedSeq, r.PIDNS, exclusive, r.TargetsJSON()})
		})
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO lock_holders (`+HolderColumns+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19)
		ON CONFLICT (lock_name, request_id) DO UPDATE SET actor=excluded.actor, intent=excluded.intent,
		intent_version=excluded.intent_version, host_id=excluded.host_id, pid=excluded.pid, pid_start=excluded.pid_start,
		boot_id=excluded.boot_id, created_at=excluded.created_at, heartbeat_at=excluded.heartbeat_at,
		ttl_seconds=excluded.ttl_seconds, metadata=excluded.metadata, fencing_token=excluded.fencing_token,
		slot_limit=excluded.slot_limit, updated_seq=excluded.updated_seq, pid_ns=excluded.pid_ns,
		exclusive=excluded.exclusive, targets=excluded.targets`,
		r.Name, r.RequestID, r.Actor, r.Intent, r.IntentVersion, r.HostID, r.PID, r.PIDStart, r.BootID, r.CreatedAt,
		r.HeartbeatAt, r.TTLSeconds, r.Metadata, r.FencingToken, r.Limit, r.UpdatedSeq, r.PIDNS, exclusive, r.TargetsJSON())
	return err
}

func DeleteHolder(ctx context.Context, tx Execer, name, requestID string) error {
	if b := batchOf(tx); b != nil {
		b.add(name, func(w *decisionWrites) { w.Rows = append(w.Rows, deleteJSON{"delete_holder", name, requestID}) })
		return nil
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM lock_holders WHERE lock_name = $1 AND request_id = $2`, name, requestID)
	return err
}

// DeleteExclusive deletes request requestID's row of lock name when it is
// the exclusive holder's (a shared row of the same request stays).
func DeleteExclusive(ctx context.Context, tx Execer, name, requestID string) error {
	if b := batchOf(tx); b != nil {
		b.add(name, func(w *decisionWrites) { w.Rows = append(w.Rows, deleteJSON{"delete_exclusive", name, requestID}) })
		return nil
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM lock_holders WHERE lock_name = $1 AND request_id = $2 AND exclusive = 1`, name, requestID)
	return err
}
