package auditcmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/outfile"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/metrics"
	"github.com/lockledger/lockledger/replay"
)

// metricsState is where metrics keeps its fold between runs: a file of
// this user's, outside the root, since metrics writes nothing into the
// ledger (see metrics.LoadState for why the state is not a table).
type metricsState struct {
	g        *invocation.Globals
	path     string // "" when there is nowhere to keep it
	explicit bool   // --state FILE: a FILE refused is bad input
	id       string // the ledger's id
	full     bool   // --full: the kept state is not read
}

// keeper is the state of ledger l: --state, else a file per ledger and
// source (a root or a database) in the user's cache directory, so that
// two copies of one ledger do not take turns folding from the start.
func (o *metricsOptions) keeper(l *ledger.Ledger) *metricsState {
	st := &metricsState{g: o.g, path: o.state, explicit: o.state != "", id: l.ID(), full: o.full}
	if st.path != "" {
		return st
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		o.g.Log.Warn("metrics: no cache directory to keep the fold in: each run folds the whole log", "error", err)
		return st
	}
	src := sha256.Sum256([]byte(l.Source()))
	st.path = filepath.Join(dir, "lockledger", "metrics", l.ID()+"-"+hex.EncodeToString(src[:8])+".json")
	return st
}

// load is the kept fold when it is this log's, else a new one (and the
// log says why a state that was there is not used).
func (st *metricsState) load(ctx context.Context, q replay.Querier) (*metrics.Fold, error) {
	if st.path == "" || st.full {
		return metrics.NewFold(), nil
	}
	f, err := metrics.LoadState(ctx, q, st.path, st.id)
	var stale *metrics.StaleStateError
	switch {
	case errors.As(err, &stale):
		st.g.Log.Warn("metrics: the kept state is not this log's: folding the log from its start", "state", st.path, "reason", stale.Reason)
		return metrics.NewFold(), nil
	case err != nil && ctx.Err() != nil:
		return nil, err
	case err != nil:
		st.g.Log.Warn("metrics: cannot read the kept state: folding the log from its start", "state", st.path, "error", err)
		return metrics.NewFold(), nil
	case f == nil:
		st.g.Log.Debug("metrics: no kept state: folding the log from its start", "state", st.path)
		return metrics.NewFold(), nil
	}
	st.g.Log.Debug("metrics: folding from the kept state", "state", st.path, "seq", f.Seq())
	return f, nil
}

// save keeps f for the next run; a failure costs the next run a full
// fold, and is a warning, except a --state FILE refused (inside the
// root, a symlink, not a regular file): bad input.
func (st *metricsState) save(f *metrics.Fold) error {
	if st.path == "" {
		return nil
	}
	err := st.write(f)
	if st.explicit && errors.As(err, new(*events.InvalidError)) {
		return err
	}
	if err != nil {
		st.g.Log.Warn("metrics: cannot keep the fold for the next run", "state", st.path, "error", err)
	}
	return nil
}

func (st *metricsState) write(f *metrics.Fold) error {
	b, err := f.MarshalState(st.id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(st.path), 0o700); err != nil {
		return err
	}
	out, err := st.g.CreateOutput("--state", st.path, outfile.WithMode(0o600))
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := out.Write(b); err != nil {
		return err
	}
	return st.g.CommitOutput("--state", out)
}
