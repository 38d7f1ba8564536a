package auditcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/cli/eventfmt"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/stream"
)

type exportOptions struct {
	g           *invocation.Globals
	format      string
	out         string
	actor       string
	checkpoints bool
	invocation.TimeRange
	cmd    *cobra.Command
	follow followOptions
}

var exportListing = invocation.Listing{
	Use:   "export [--format jsonl|csv] [--since T] [--until T] [-o FILE] | export --follow [--after-seq N] [--format jsonl|cloudevents|syslog]",
	Short: "Write events with their hashes for auditors",
}

func NewExport(g *invocation.Globals) *cobra.Command {
	o := &exportOptions{g: g}
	cmd := exportListing.Of(&cobra.Command{
		Long: `Write events in log order with their seq, prev_hash and hash.

jsonl (default): one event per line, {"seq","prev_hash","hash","body"},
body being the stored canonical body verbatim: verify --file checks such
a file on its own, recomputing each hash from canonical JSON of the body.
csv: seq, event_id, at, type, lock_name, request_id, actor, host_id, pid,
prev_hash, hash, body (the canonical body as text), uid, user (the OS
user id and name of the process that wrote the event; empty for events
written before lockledger recorded them).

--since/--until select the contiguous seq range from the first event at
or after --since to the last at or before --until, so that the slice
chains.

A jsonl export carries, before its events, the signed checkpoints the
ledger holds that it covers (one {"checkpoint": NOTE} line each: those of
a size from the slice's first seq - 1 to its last) and, for a slice that
starts after seq 1, the Merkle tree before it ({"tree": {"size",
"frontier"}}), so that verify --file --verifier-key checks the slice
against them (--checkpoints=false leaves them out). A slice that ends
before the ledger's checkpoints also carries the smallest and the largest
after its end, each with a consistency proof from its last seq
({"consistency": {"from", "to", "proof"}}): verify --file checks that its
events are those positions of the log they sign.

-o FILE writes a new file beside FILE and renames it into place once it
is complete, so FILE is whole or as it was. FILE may not be inside the
root (under any name), a symlink, or anything but a regular file: exit 2,
nothing written.

Reading the audit log is itself recorded: once the export is written,
export appends a ledger_exported event (the range asked for and written,
the count, the format, the file or stdout, who ran it) that changes no
lock, so the next export or verify sees one more event. That takes the
ledger's writer lock for a moment; where the root is read-only, or
writers hold the lock past 2s, export still succeeds and says on stderr
that it could not record itself.` + followHelp,
		Example: `  lockledger export -o ledger-2025-03.jsonl --since 2025-03-01 --until 2025-04-01
  lockledger verify --file ledger-2025-03.jsonl
  lockledger export --follow --format cloudevents --after-seq 41873 >>/var/log/lockledger/events.jsonl`,
		Args: invocation.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runExport(cmd.Context(), o) },
	})
	o.cmd = cmd
	o.registerFollow()
	fl := cmd.Flags()
	fl.StringVar(&o.format, "format", eventfmt.FormatJSONL, "jsonl or csv; with --follow, jsonl, cloudevents or syslog")
	fl.StringVarP(&o.out, "output", "o", "", "write to FILE (mode 0600, renamed into place when complete) instead of stdout")
	fl.StringVar(&o.Since, "since", "", "from the first event at or after this time (RFC 3339, or a duration ago)")
	fl.StringVar(&o.Until, "until", "", "to the last event at or before this time")
	fl.StringVar(&o.actor, "actor", "", "who exports, as recorded (default $LOCKLEDGER_ACTOR, else $USER, else the OS user name)")
	fl.BoolVar(&o.checkpoints, "checkpoints", true, "jsonl: carry the signed checkpoints the export covers, before its events")
	return cmd
}

// writeCheckpointLines writes the tree, checkpoint, cosignature and
// consistency lines of a jsonl export of seq from-to, when the ledger
// holds checkpoints or cosignatures it covers, or checkpoints after it:
// for an export that ends before them, the smallest and the largest, each
// with a consistency proof from the tree of the first to events, so that
// the export proves its events are those positions of the log they sign.
func writeCheckpointLines(ctx context.Context, r *invocation.Reader, w io.Writer, from, to int64) error {
	cps, err := store.StoredCheckpoints(ctx, r.Tx, max(from-1, 1), to)
	if err != nil {
		return err
	}
	after, err := store.CheckpointsAfter(ctx, r.Tx, to)
	if err != nil {
		return err
	}
	cos, err := store.StoredCosignatures(ctx, r.Tx)
	cos = slices.DeleteFunc(cos, func(c store.StoredCosignature) bool { return c.Size < max(from-1, 1) || c.Size > to })
	if err != nil || len(cps)+len(cos)+len(after) == 0 {
		return err
	}
	hashes := store.TreeReader(ctx, r.Tx)
	if from > 1 {
		tree, err := checkpoint.TreeFrom(from-1, hashes)
		if err != nil {
			return fmt.Errorf("export: the Merkle tree before seq %d: %w (lockledger verify says why)", from, err)
		}
		if err := replay.WriteTreeLine(w, from-1, tree.Frontier()); err != nil {
			return err
		}
	}
	for _, c := range append(cps, after...) {
		if err := replay.WriteCheckpointLine(w, c.Note); err != nil {
			return err
		}
	}
	proved := map[int64]bool{}
	for _, c := range after {
		if proved[c.Size] {
			continue
		}
		proved[c.Size] = true
		proof, err := tlog.ProveTree(c.Size, to, hashes)
		if err != nil {
			return fmt.Errorf("export: the consistency proof from seq %d to checkpoint size %d: %w (lockledger verify says why)", to, c.Size, err)
		}
		if err := replay.WriteConsistencyLine(w, to, c.Size, proof); err != nil {
			return err
		}
	}
	for _, c := range cos {
		if err := replay.WriteCosignatureLine(w, c.Note); err != nil {
			return err
		}
	}
	return nil
}

func runExport(ctx context.Context, o *exportOptions) error {
	if o.g.JSON && (o.format == eventfmt.FormatCSV || o.format == stream.FormatSyslog) {
		return events.Invalid("--format", o.format, "is not JSON: give --json only with jsonl or cloudevents")
	}
	if err := o.checkFollow(); err != nil || o.follow.on {
		if err != nil {
			return err
		}
		return runFollow(ctx, o)
	}
	if o.format != eventfmt.FormatJSONL && o.format != eventfmt.FormatCSV {
		return events.Invalid("--format", o.format, "must be jsonl or csv")
	}
	since, until, err := o.TimeRange.Parse(time.Now())
	if err != nil {
		return err
	}
	if err := invocation.ValidActor(o.actor); err != nil {
		return err
	}
	done, err := export(ctx, o, since, until)
	if err != nil {
		return err
	}
	o.g.RecordAccess(ctx, "export", events.LedgerExported, o.actor, done)
	return nil
}

// export writes the events and says what it wrote, for ledger_exported.
func export(ctx context.Context, o *exportOptions, since, until time.Time) (*events.Exported, error) {
	done := &events.Exported{Format: o.format, Destination: events.DestinationStdout}
	if !since.IsZero() {
		done.Since = events.FormatTime(since)
	}
	if !until.IsZero() {
		done.Until = events.FormatTime(until)
	}
	if o.out != "" {
		done.Destination = invocation.AbsPath(o.out)
	}
	var from, to int64
	var ok bool
	err := o.g.ReadInto(ctx, o.out, func(w io.Writer, r *invocation.Reader) error {
		var err error
		if from, to, ok, err = store.SeqRange(ctx, r.Tx, since, until); err != nil {
			return err
		}
		if o.format != eventfmt.FormatCSV {
			w = invocation.JSONOut(w)
		}
		bw := bufio.NewWriterSize(w, 256<<10)
		write := func(row *replay.Row) error { return replay.WriteExportLine(bw, row) }
		flush := bw.Flush
		if o.format == eventfmt.FormatCSV {
			cw := eventfmt.NewCSVWriter(bw)
			if err := cw.Write(exportCSVHeader); err != nil {
				return err
			}
			write = func(row *replay.Row) error { return cw.Write(csvRecord(row)) }
			flush = func() error { return errors.Join(cw.Flush(), bw.Flush()) }
		} else if ok && o.checkpoints {
			if err := writeCheckpointLines(ctx, r, bw, from, to); err != nil {
				return err
			}
		}
		if ok {
			err = replay.ScanRows(ctx, r.Tx, replay.Filter{FromSeq: from, ToSeq: to}, func(row *replay.Row) error {
				done.Events++
				return write(row)
			})
		}
		if err != nil {
			return err
		}
		return flush()
	})
	if err != nil {
		return done, err
	}
	if ok {
		done.FirstSeq, done.LastSeq = from, to
		o.g.Log.Info("exported", "events", done.Events, "from_seq", from, "to_seq", to)
	} else {
		o.g.Log.Info("no events to export")
	}
	return done, nil
}

// exportCSVHeader names export's CSV columns. uid and user come last, so
// that the older columns keep their places.
var exportCSVHeader = []string{"seq", "event_id", "at", "type", "lock_name", "request_id", "actor", "host_id", "pid",
	"prev_hash", "hash", "body", "uid", "user"}

func csvRecord(row *replay.Row) []string {
	var env events.Envelope
	_ = json.Unmarshal(row.Body, &env) // a damaged body leaves the columns empty; body keeps it
	uid, user := eventfmt.OSUserColumns(&env)
	return []string{strconv.FormatInt(row.Seq, 10), env.EventID, env.At, string(env.Type), env.LockName, env.RequestID,
		env.Actor, env.HostID, strconv.Itoa(env.PID), row.PrevHash, row.Hash, string(row.Body), uid, user}
}
