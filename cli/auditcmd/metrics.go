package auditcmd

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/outfile"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/metrics"
)

// metricsFileMode lets node_exporter, which runs as its own user, read
// the file metrics -o writes.
const metricsFileMode = 0o644

// metricsShutdown bounds how long --listen waits for scrapes in progress
// once asked to stop.
const metricsShutdown = 5 * time.Second

type metricsOptions struct {
	g      *invocation.Globals
	format string
	out    string
	listen string
	state  string // --state FILE; "" is the default place
	full   bool
}

var metricsListing = invocation.Listing{
	Use:   "metrics [--format text|openmetrics] [-o FILE] [--state FILE] [--full] | metrics --listen ADDR",
	Short: "Print Prometheus metrics derived from the ledger, or serve them on /metrics",
}

func NewMetrics(g *invocation.Globals) *cobra.Command {
	o := &metricsOptions{g: g}
	cmd := metricsListing.Of(&cobra.Command{
		Long: `Print the ledger's metrics for Prometheus: per lock, whether it is held,
by how many holders and who, whether its holder is stale, counters of
acquisitions, steals (by reason), releases (by result), lost locks,
refusals (by action) and failed heartbeats, and histograms of how long
holdings lasted and how long acquirers waited before giving up; for the
ledger, its events, the age and size of the newest signed checkpoint,
and the last verify's result. Every number is derived from the event log
in one pass, through the fold timeline draws, so it agrees with
timeline. docs/metrics.md lists the metrics.

--format text (the default) is the Prometheus text format that
node_exporter's textfile collector reads; openmetrics is OpenMetrics
1.0.0. -o FILE writes to FILE (mode 0644, so node_exporter can read it):
a new file beside it, renamed into place once complete, so the collector
never reads half of one; FILE may not be inside the root, a symlink, or
anything but a regular file (exit 2, nothing written).

Each run keeps its fold in a state file (--state FILE; by default
lockledger/metrics/ in the user's cache directory, $XDG_CACHE_HOME or
~/.cache), so the next folds only the events appended since: a scrape
costs the new events, not the whole log. The state names the ledger, the
seq and the hash of the last event it folded; one of another ledger, or
that the log no longer holds (a restored or cut database, a prune past
it), is not used: the log is folded again from its start and the log
says why. --full folds the whole log and replaces the state. A state
that cannot be written (no cache directory) costs only speed: a warning.

--listen ADDR (host:port) serves the metrics on http://ADDR/metrics until
SIGINT or SIGTERM, then stops accepting, lets the scrapes in progress
finish and exits 0. It folds the log before it listens; each scrape then
folds only the events appended since the last one, and answers in
OpenMetrics when the scraper asks for it (as Prometheus does), else in
the text format.

metrics only reads: it takes no lock and records nothing; a root or
database with no ledger is exit 6.`,
		Example: `  lockledger metrics -o /var/lib/node_exporter/textfile/lockledger.prom
  lockledger metrics --format openmetrics
  lockledger metrics --listen 127.0.0.1:9817`,
		Args: invocation.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.listen != "" && (o.out != "" || cmd.Flags().Changed("format")) {
				return &invocation.UsageError{Err: fmt.Errorf("metrics: --listen serves the format each scraper asks for; -o and --format are for a single print")}
			}
			return runMetrics(cmd.Context(), o)
		},
	})
	fl := cmd.Flags()
	fl.StringVar(&o.format, "format", "text", "text (Prometheus text format, for node_exporter's textfile collector) or openmetrics")
	fl.StringVarP(&o.out, "output", "o", "", "write to FILE (mode 0644, renamed into place when complete) instead of stdout")
	fl.StringVar(&o.listen, "listen", "", "serve http://ADDR/metrics (ADDR is host:port) until SIGINT or SIGTERM")
	fl.StringVar(&o.state, "state", "", "keep the fold between runs in FILE (default: lockledger/metrics/ in the user's cache directory)")
	fl.BoolVar(&o.full, "full", false, "fold the whole log, not the kept state and the events after it (the state is then replaced)")
	return cmd
}

func runMetrics(ctx context.Context, o *metricsOptions) error {
	format, ok := map[string]metrics.Format{"text": metrics.Text, "openmetrics": metrics.OpenMetrics}[o.format]
	if !ok {
		return events.Invalid("--format", o.format, "must be text or openmetrics")
	}
	if o.listen != "" {
		return serveMetrics(ctx, o)
	}
	return o.g.ReadInto(ctx, o.out, func(w io.Writer, r *invocation.Reader) error {
		s := &metricsServer{g: o.g, state: o.keeper(r.Ledger)}
		return s.scrape(ctx, r.Tx, format, w)
	}, outfile.WithMode(metricsFileMode))
}

// metricsServer answers scrapes from one open ledger, folding the events
// appended since the last scrape in a snapshot of its own.
type metricsServer struct {
	g      *invocation.Globals
	l      *ledger.Ledger
	state  *metricsState
	mu     sync.Mutex // the fold is one per server
	fold   *metrics.Fold
	closed bool // the server stopped: the ledger is being closed
}

// errMetricsStopped answers a scrape that comes after the server stopped.
var errMetricsStopped = errors.New("metrics: the server is stopping")

func serveMetrics(ctx context.Context, o *metricsOptions) error {
	g, addr := o.g, o.listen
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return events.Invalid("--listen", addr, "must be host:port (a port alone is :PORT)")
	}
	return g.Using(ctx, invocation.Reads, func(l *ledger.Ledger) error {
		// The log up to now is folded (from the kept state) before the first
		// scrape, which then reads only what was appended since.
		s := &metricsServer{g: g, l: l, state: o.keeper(l)}
		if err := s.collect(ctx, metrics.Text, nil); err != nil { // the kept state, folded before the first scrape
			return err
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("metrics: --listen: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /metrics", s.serve)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
			BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		g.Log.Info("serving metrics", "address", ln.Addr().String(), "path", "/metrics")
		select {
		case err := <-served:
			return fmt.Errorf("metrics: serving %s: %w", ln.Addr(), err)
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), metricsShutdown)
		defer cancel()
		err = srv.Shutdown(sctx)
		if err != nil {
			// Scrapes still running past the bound: their connections are
			// closed, which cancels them.
			_ = srv.Close()
		}
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		// A scrape still running ends before the deferred close of the
		// ledger, and none starts after.
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		if err != nil {
			return fmt.Errorf("metrics: stopping: %w", err)
		}
		g.Log.Info("metrics server stopped", "address", ln.Addr().String())
		return nil
	})
}

func (s *metricsServer) serve(w http.ResponseWriter, req *http.Request) {
	format := negotiate(req.Header.Get("Accept"))
	var buf strings.Builder
	if err := s.collect(req.Context(), format, &buf); err != nil {
		s.g.Log.Warn("metrics scrape failed", "error", err)
		http.Error(w, "lockledger metrics: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", format.ContentType())
	_, _ = io.WriteString(w, buf.String())
}

func (s *metricsServer) collect(ctx context.Context, format metrics.Format, w io.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errMetricsStopped
	}
	tx, err := s.l.BeginRead(ctx)
	if err != nil {
		return fmt.Errorf("ledger: read: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	return s.scrape(ctx, tx, format, w)
}

// scrape brings the fold up to the log tx reads (from the kept state on
// first use; after that, one the log no longer follows is folded again
// from its start), keeps it when it moved, and writes its families in
// format on w (nil: nowhere).
func (s *metricsServer) scrape(ctx context.Context, tx *sql.Tx, format metrics.Format, w io.Writer) (err error) {
	seq := int64(-1)
	if s.fold == nil {
		if s.fold, err = s.state.load(ctx, tx); err != nil {
			return err
		}
	} else {
		if err := s.fold.Follows(ctx, tx); err != nil {
			if !errors.As(err, new(*metrics.StaleStateError)) {
				return err
			}
			s.g.Log.Warn("metrics: folding the log again from its start", "reason", err)
		}
		seq = s.fold.Seq()
	}
	if err := s.fold.Update(ctx, tx); err != nil {
		return err
	}
	if s.fold.Seq() != seq {
		if err := s.state.save(s.fold); err != nil {
			return err
		}
	}
	if w == nil {
		return nil
	}
	cp, err := metrics.LastCheckpoint(ctx, tx)
	if err != nil {
		return err
	}
	return metrics.Write(w, format, s.fold.Families(time.Now(), cp))
}

// negotiate picks OpenMetrics when the Accept header lists it (version
// 1.0.0, 0.0.1 or none) with a q above 0, else the text format.
func negotiate(accept string) metrics.Format {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || mt != "application/openmetrics-text" {
			continue
		}
		if q, err := strconv.ParseFloat(params["q"], 64); err == nil && q <= 0 {
			continue
		}
		switch params["version"] {
		case "", "1.0.0", "0.0.1":
			return metrics.OpenMetrics
		}
	}
	return metrics.Text
}
