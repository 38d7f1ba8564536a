package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockledger/lockledger/store"
)

// WatchLog listens on its own connection, opened and LISTENing before it
// returns: every write that appends events notifies the channel inside its
// transaction, and PostgreSQL delivers the notification once it commits,
// so a reader that reads after WatchLog returns misses none.
func (s *Store) WatchLog(ctx context.Context) (store.Waker, error) {
	conn, err := s.listen(ctx)
	if err != nil {
		return nil, err
	}
	return &logWaker{s: s, conn: conn}, nil
}

// listen opens a connection of its own that LISTENs on the channel.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Wait)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, s.pgx.ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("ledger: listen on %s: %w", s.source, err)
	}
	if _, err := conn.Exec(cctx, `LISTEN `+notifyChannel); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("ledger: listen on %s: %w", s.source, err)
	}
	return conn, nil
}

// logWaker wakes on any notification of the channel. A broken connection
// is opened again at the next wait; until then it sleeps.
type logWaker struct {
	s    *Store
	conn *pgx.Conn
}

func (w *logWaker) Wait(ctx context.Context, d time.Duration) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if w.conn == nil {
		// A notification sent while no connection listened is lost: the
		// caller reads again after every wait, so waking now is right.
		conn, err := w.s.listen(wctx)
		if err != nil {
			w.s.cfg.Log.Debug("following without LISTEN until the database answers", "err", err)
			<-wctx.Done()
			return
		}
		w.conn = conn
		return
	}
	if _, err := w.conn.WaitForNotification(wctx); err != nil && wctx.Err() == nil {
		w.Close()
	}
}

func (w *logWaker) Close() {
	if w.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		w.conn.Close(ctx)
		w.conn = nil
	}
}
