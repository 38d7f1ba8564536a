package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockledger/lockledger/store"
)

// WatchLog listens on its own connection, opened and LISTENing before it
// returns: every write that appends events notifies the channel inside its
// transaction, and PostgreSQL delivers the notification once it commits,
// so a reader that reads after WatchLog returns misses none. Where
// notifications do not reach the connection (see listener), it sleeps.
func (s *Store) WatchLog(ctx context.Context) (store.Waker, error) {
	w := &logWaker{s: s}
	if s.unheard.Load() {
		return w, nil
	}
	l, err := s.listen(ctx, s.cfg.Wait)
	if err != nil {
		return nil, err
	}
	w.l = l
	return w, nil
}

// listener is a connection of its own that LISTENs on the channel, and
// the probe that shows whether notifications reach it. Through a pooler in
// transaction mode (PgBouncer) LISTEN succeeds on whichever server
// connection ran it, which then serves other clients: the notifications
// it gets are dropped, or handed to another client, and the listener
// never hears of them. So it is not trusted until it hears its probe, a
// notification of its own sent from another connection (the pool's); one
// not heard within the busy timeout makes the store poll from then on
// (Store.unheard), said once in the log.
type listener struct {
	s     *Store
	conn  *pgx.Conn
	probe string    // the probe's payload until it is heard
	by    time.Time // the probe is heard by then, or never
}

// probePrefix starts a probe's payload: a lock name has no space.
const probePrefix = "lockledger-probe "

// errUnheard: the listener's probe was not heard in time.
var errUnheard = errors.New("LISTEN hears no notifications")

// listen opens a listener, connecting within timeout, and sends its probe.
func (s *Store) listen(ctx context.Context, timeout time.Duration) (*listener, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg := s.pgx.ConnConfig.Copy()
	cfg.OnNotification = nil // pgx keeps them for WaitForNotification
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ledger: listen on %s: %w", s.source, err)
	}
	l := &listener{s: s, conn: conn, probe: probePrefix + rand.Text()}
	if _, err := conn.Exec(cctx, `LISTEN `+store.NotifyChannel); err != nil {
		l.close()
		return nil, fmt.Errorf("ledger: listen on %s: %w", s.source, err)
	}
	if _, err := s.db.ExecContext(cctx, `SELECT pg_notify($1, $2)`, store.NotifyChannel, l.probe); err != nil {
		l.close()
		return nil, fmt.Errorf("ledger: listen on %s: %w", s.source, err)
	}
	l.by = time.Now().Add(s.cfg.Busy)
	return l, nil
}

// next waits until ctx ends for a notification other than a probe, and
// returns its payload. Its error is ctx's when ctx ended, errUnheard when
// the probe was not heard in time (the store then polls), else the
// connection's.
func (l *listener) next(ctx context.Context) (string, error) {
	for {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if l.probe != "" {
			wctx, cancel = context.WithDeadline(ctx, l.by)
		}
		n, err := l.conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil && strings.HasPrefix(n.Payload, probePrefix):
			if n.Payload == l.probe {
				l.probe = ""
			} // else another listener's probe
		case err == nil:
			return n.Payload, nil
		case ctx.Err() != nil:
			return "", ctx.Err()
		case l.probe != "" && !time.Now().Before(l.by):
			l.s.stopListening()
			return "", errUnheard
		default:
			return "", err
		}
	}
}

// close stops listening and closes the connection. Through a pooler the
// UNLISTEN may reach another server connection than the LISTEN did.
func (l *listener) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if l.probe != "" {
		_, _ = l.conn.Exec(ctx, `UNLISTEN *`)
	}
	l.conn.Close(ctx)
}

// stopListening makes every waiter and follower of the store poll, and
// says why, once.
func (s *Store) stopListening() {
	if s.unheard.CompareAndSwap(false, true) {
		s.cfg.Log.Warn("LISTEN/NOTIFY does not work on this connection: waiters and followers poll instead, "+
			"so they see changes later (the likely cause: a pooler in transaction mode, such as PgBouncer's, between lockledger and PostgreSQL)",
			"database", s.source, "waited", s.cfg.Busy)
	}
}

// logWaker wakes on any notification of the channel. A broken connection
// is opened again at the next wait; until then, and once notifications are
// known not to arrive, it sleeps.
type logWaker struct {
	s *Store
	l *listener
}

func (w *logWaker) Wait(ctx context.Context, d time.Duration) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if w.s.unheard.Load() {
		w.Close()
		<-wctx.Done()
		return
	}
	if w.l == nil {
		// A notification sent while no connection listened is lost: the
		// caller reads again after every wait, so waking now is right.
		l, err := w.s.listen(wctx, w.s.cfg.Wait)
		if err != nil {
			w.s.cfg.Log.Debug("following without LISTEN until the database answers", "err", err)
			<-wctx.Done()
			return
		}
		w.l = l
		return
	}
	if _, err := w.l.next(wctx); err != nil && wctx.Err() == nil {
		w.Close()
	}
}

func (w *logWaker) Close() {
	if w.l != nil {
		w.l.close()
		w.l = nil
	}
}
