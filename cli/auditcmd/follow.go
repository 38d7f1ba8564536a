package auditcmd

import (
	"context"
	"os"
	"strconv"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/stream"
)

// followOptions are export --follow's own flags.
type followOptions struct {
	on    bool
	after int64
}

const followHelp = `

--follow streams every event as it is appended, until SIGINT or SIGTERM
(exit 0): each event once, in seq order, one record per line, written out
at once (a SIEM reading the pipe sees each event as it is recorded). It is
woken by the database (PostgreSQL LISTEN/NOTIFY) or by a watch on
ROOT/ledger.db and its write-ahead log, and reads again on its own only
every 30s as a safety net. --after-seq N starts after seq N: give it the
last seq the receiver holds to resume a follower that was stopped or
killed, losing and repeating nothing. Formats: jsonl (export's lines,
each event's with its Merkle "leaf" hash; verify --file checks the
stream), cloudevents (CloudEvents 1.0 JSON, one per line) and syslog
(RFC 5424). Every signed checkpoint the writers store is written right
after the event of its size, and a checkpoint record at least every
--checkpoint-every events or --checkpoint-interval (the newest the writers
signed). The follower signs nothing and records nothing in the ledger; a
missing ledger exits 6. docs/siem.md says how a receiver detects a gap.`

func (o *exportOptions) registerFollow() {
	fl := o.cmd.Flags()
	fl.BoolVar(&o.follow.on, "follow", false, "stream every event as it is appended, until SIGINT or SIGTERM (formats jsonl, cloudevents, syslog)")
	fl.Int64Var(&o.follow.after, "after-seq", 0, "with --follow, start after this seq (the last one the receiver holds)")
}

// checkFollow refuses what --follow cannot do, before anything is opened.
func (o *exportOptions) checkFollow() error {
	if !o.follow.on {
		if o.cmd.Flags().Changed("after-seq") {
			return events.Invalid("--after-seq", strconv.FormatInt(o.follow.after, 10), "is for --follow")
		}
		if o.format == stream.FormatCloudEvents || o.format == stream.FormatSyslog {
			return events.Invalid("--format", o.format, "is for --follow; export writes jsonl or csv")
		}
		return nil
	}
	switch {
	case o.format != stream.FormatJSONL && o.format != stream.FormatCloudEvents && o.format != stream.FormatSyslog:
		return events.Invalid("--format", o.format, "with --follow must be jsonl, cloudevents or syslog")
	case o.follow.after < 0:
		return events.Invalid("--after-seq", strconv.FormatInt(o.follow.after, 10), "must be 0 or more")
	case o.out != "":
		return events.Invalid("-o", o.out, "is not for --follow, which writes to standard output until stopped")
	case o.Since != "" || o.Until != "":
		return events.Invalid("--since/--until", o.Since+o.Until, "are not for --follow: use --after-seq")
	}
	return nil
}

// runFollow is export --follow, its flags checked (checkFollow).
func runFollow(ctx context.Context, o *exportOptions) error {
	every, interval, err := o.g.CheckpointPolicy()
	if err != nil {
		return err
	}
	return o.g.Using(ctx, invocation.Reads, func(l *ledger.Ledger) error {
		host, _ := os.Hostname()
		// Every format's records are JSON, or (syslog) carry it.
		w, err := stream.NewWriter(o.format, invocation.JSONOut(o.g.IO.Out), l.ID(), host)
		if err != nil {
			return err
		}
		return stream.Follow(ctx, l, w, stream.Options{After: o.follow.after, Every: every, Interval: interval, Log: o.g.Log})
	})
}
