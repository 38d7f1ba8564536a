package store

import (
	"context"
	"database/sql"
)

// QueuedRow is a request's last acquire_blocked event on a lock, recorded
// at or after a horizon, with nothing after it that ends a wait: no
// lock_acquired, lock_stolen or later acquire_blocked of the same request
// on the same lock. Whether it queued (and whether it is still waiting)
// is in its body, which the ledger reads.
type QueuedRow struct {
	Seq       int64
	Lock      string
	RequestID string
	Actor     string
	At        string
	Body      []byte
}

// queuedOfLock and queuedAll read the log, not a table of their own: a
// waiter's place is its event's seq, and what ends its wait is an event
// too. They differ only in the lock's condition.
const (
	queuedOfLock = `SELECT e.seq, e.lock_name, e.request_id, e.actor, e.at, e.body FROM events e
	WHERE e.type = 'acquire_blocked' AND e.at >= $1 AND e.lock_name = $2
	AND NOT EXISTS (SELECT 1 FROM events f WHERE f.request_id = e.request_id AND f.lock_name = e.lock_name
		AND f.seq > e.seq AND f.type IN ('lock_acquired', 'lock_stolen', 'acquire_blocked'))
	ORDER BY e.seq`
	queuedAll = `SELECT e.seq, e.lock_name, e.request_id, e.actor, e.at, e.body FROM events e
	WHERE e.type = 'acquire_blocked' AND e.at >= $1
	AND NOT EXISTS (SELECT 1 FROM events f WHERE f.request_id = e.request_id AND f.lock_name = e.lock_name
		AND f.seq > e.seq AND f.type IN ('lock_acquired', 'lock_stolen', 'acquire_blocked'))
	ORDER BY e.seq`
)

// LoadQueued returns the candidates of lock's queue (every lock's when lock
// is ""), recorded at or after since (an events.TimeFormat instant), in seq
// order.
func LoadQueued(ctx context.Context, q Querier, lock, since string) ([]QueuedRow, error) {
	if rows, ok := batchOf(q).readQueued(lock, since); ok {
		return rows, nil
	}
	query, args := queuedAll, []any{since}
	if lock != "" {
		query, args = queuedOfLock, append(args, lock)
	}
	return QueryAll(ctx, q, func(rs *sql.Rows, r *QueuedRow) error {
		return rs.Scan(&r.Seq, &r.Lock, &r.RequestID, &r.Actor, &r.At, &r.Body)
	}, query, args...)
}
