package eventfmt

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/replay"
)

// Event output formats of history and timeline.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatJSONL = "jsonl"
	FormatCSV   = "csv"
)

// JSONFormat applies --json (asJSON) to the *format of history and
// timeline: json (one array, as --format json) unless --format names json
// or jsonl; any other --format contradicts --json.
func JSONFormat(cmd *cobra.Command, asJSON bool, format *string) error {
	switch {
	case !asJSON:
		return nil
	case !cmd.Flags().Changed("format"):
		*format = FormatJSON
		return nil
	case *format != FormatJSON && *format != FormatJSONL:
		return events.Invalid("--format", *format, "must be json or jsonl with --json (which writes JSON on stdout)")
	}
	return nil
}

// EventSink prints events one at a time, streaming.
type EventSink interface {
	Event(ev *replay.Event) error
	Close() error
}

// NewEventSink prints events in format (FormatTable, FormatJSON,
// FormatJSONL or FormatCSV) on w, coloured when color is set and the
// format is the table.
func NewEventSink(format string, w io.Writer, color bool) (EventSink, error) {
	switch format {
	case FormatTable:
		return &tableSink{t: NewTable(w, color, EventHeader...)}, nil
	case FormatJSON:
		return &jsonSink{w: w}, nil
	case FormatJSONL:
		return &jsonlSink{w: w}, nil
	case FormatCSV:
		c := NewCSVWriter(w)
		// uid and user come last, so that the older columns keep their places.
		err := c.Write([]string{"seq", "at", "type", "lock_name", "actor", "host_id", "pid", "request_id", "details", "prev_hash", "hash",
			"uid", "user"})
		return &csvSink{w: c}, err
	}
	return nil, events.Invalid("--format", format, "must be table, json, jsonl or csv")
}

// DisplayTime is the table's time column: UTC, milliseconds.
const DisplayTime = "2006-01-02T15:04:05.000Z"

// EventHeader names the columns of the event table; EventCells are ev's
// row, not escaped.
var EventHeader = []string{"SEQ", "TIME (UTC)", "EVENT", "LOCK", "ACTOR", "OS USER", "PID@HOST", "REQUEST", "DETAILS"}

func EventCells(ev *replay.Event) []Cell {
	return []Cell{
		{Text: strconv.FormatInt(ev.Seq, 10)},
		{Text: ev.Time.Format(DisplayTime)},
		{Text: string(ev.Type), Color: EventColor(ev)},
		{Text: LockText(ev)},
		{Text: ev.Actor},
		{Text: OSUserText(&ev.Envelope)},
		{Text: fmt.Sprintf("%d@%s", ev.PID, ev.HostID)},
		{Text: ev.RequestID},
		{Text: Details(ev)},
	}
}

type tableSink struct{ t *Table }

func (s *tableSink) Event(ev *replay.Event) error { return s.t.Row(EventCells(ev)...) }

func (s *tableSink) Close() error { return s.t.Flush() }

// ledgerWideLock is the table's LOCK cell of an event about the whole
// ledger (it has no lock_name): no lock can be named so.
const ledgerWideLock = "(ledger)"

// LockText is the lock column of ev: its lock, or "(ledger)" for an event
// about the whole ledger.
func LockText(ev *replay.Event) string {
	if ev.Type.LedgerWide() {
		return ledgerWideLock
	}
	return ev.LockName
}

type jsonSink struct {
	w io.Writer
	n int
}

func (s *jsonSink) Event(ev *replay.Event) error {
	sep := ",\n"
	if s.n == 0 {
		sep = "[\n"
	}
	s.n++
	if _, err := io.WriteString(s.w, sep); err != nil {
		return err
	}
	_, err := s.w.Write(ev.JSON())
	return err
}

func (s *jsonSink) Close() error {
	end := "\n]\n"
	if s.n == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(s.w, end)
	return err
}

type jsonlSink struct{ w io.Writer }

func (s *jsonlSink) Event(ev *replay.Event) error {
	b := append(ev.JSON(), '\n')
	_, err := s.w.Write(b)
	return err
}

func (s *jsonlSink) Close() error { return nil }

type csvSink struct{ w *CSVWriter }

func (s *csvSink) Event(ev *replay.Event) error {
	uid, user := OSUserColumns(&ev.Envelope)
	return s.w.Write([]string{strconv.FormatInt(ev.Seq, 10), ev.At, string(ev.Type), ev.LockName, ev.Actor, ev.HostID,
		strconv.Itoa(ev.PID), ev.RequestID, Details(ev), ev.PrevHash, ev.Hash, uid, user})
}

// OSUserText is the table's OS USER cell: uid(name) as id(1) prints it,
// the uid alone when the system has no name for it, "-" for an event
// written before they were recorded.
func OSUserText(env *events.Envelope) string {
	uid, user, ok := env.OSUser()
	switch {
	case !ok:
		return "-"
	case user == "":
		return strconv.Itoa(uid)
	}
	return fmt.Sprintf("%d(%s)", uid, user)
}

// OSUserColumns are the uid and user CSV columns: both empty for an
// event written before they were recorded.
func OSUserColumns(env *events.Envelope) (uid, user string) {
	id, name, ok := env.OSUser()
	if !ok {
		return "", ""
	}
	return strconv.Itoa(id), name
}

func (s *csvSink) Close() error { return s.w.Flush() }

// modeText says "shared" or "shared, limit N" for a shared holding ("" exclusive).
func modeText(ev *replay.Event) string {
	switch {
	case ev.Mode != events.ModeShared:
		return ""
	case ev.Limit > 0:
		return fmt.Sprintf("shared, limit %d", ev.Limit)
	}
	return "shared"
}

// holdingText says that no process holds a lock taken (pid 0: acquire
// --holder none) and how long its taker waited for it.
func holdingText(ev *replay.Event, add func(string, ...any)) {
	if ev.PID == 0 {
		add("no holder process (ttl and heartbeats only)")
	}
	if ev.WaitedSeconds > 0 {
		add("waited %s", seconds(ev.WaitedSeconds))
	}
}

// Details is the key facts of an event in a few words, for a postmortem:
// steal reasons, release results and failure steps, waiting times,
// refusals, what project changed, a job's leftover processes, and who
// exported, verified or projected the ledger, with what result.
func Details(ev *replay.Event) string {
	var parts []string
	add := func(format string, a ...any) { parts = append(parts, fmt.Sprintf(format, a...)) }
	addIf := func(ok bool, format string, a ...any) {
		if ok {
			add(format, a...)
		}
	}
	switch ev.Type {
	case events.LockAcquired:
		add("token %d, ttl %ds", ev.FencingToken, ev.TTLSeconds)
		addIf(ev.Mode == events.ModeShared, "%s", modeText(ev))
		holdingText(ev, add)
		addIf(ev.Intent != "", "intent %s", strings.TrimSpace(ev.Intent+" "+ev.IntentVersion))
		addIf(len(ev.Metadata) > 0, "%s", metadataText(ev.Metadata))
		addIf(ev.Note != "", "note %q", ev.Note)
	case events.LockHeartbeat:
		add("renewed")
	case events.LockStolen:
		add("reason %s", ev.Reason)
		if p := ev.PreviousLock; p != nil {
			add("from %s (%s, pid %d@%s, last heartbeat %s)", p.RequestID, p.Actor, p.PID, p.HostID, p.LastHeartbeatAt)
		}
		addIf(ev.Note != "", "note %q", ev.Note)
		add("token %d, ttl %ds", ev.FencingToken, ev.TTLSeconds)
		addIf(ev.Mode == events.ModeShared, "%s", modeText(ev))
		holdingText(ev, add)
	case events.LockReleased:
		addIf(ev.Result != events.ResultForced, "result %s", ev.Result) // a forced one says FORCED below
		addIf(ev.FailureStep != "", "failure step %s", ev.FailureStep)
		if ev.ExitCode != nil {
			add("exit %d", *ev.ExitCode)
		}
		add("held %s", seconds(ev.HeldDurationSeconds))
		addIf(ev.Forced && ev.ReleasedRequestID != "", "FORCED, released %s", ev.ReleasedRequestID)
		addIf(ev.Forced && ev.ReleasedRequestID == "", "FORCED")
		addIf(ev.Note != "", "note %q", ev.Note)
		if h := ev.DisplacedBy; h != nil {
			add("DISPLACED by %s (%s, pid %d@%s) via %s file %s", h.RequestID, h.Actor, h.PID, h.HostID,
				ev.DisplacedByFormat, ev.DisplacedByPath)
		}
	case events.HeartbeatFailed:
		add("%d consecutive %s", ev.ConsecutiveFailures, termtext.Plural(ev.ConsecutiveFailures, "failure", "failures"))
		addIf(ev.LockLost, "LOCK LOST")
		add("error %q", ev.Error)
		if c := ev.RecordedBy; c != nil {
			add("recorded by %s (pid %d@%s)", c.Actor, c.PID, c.HostID)
		}
	case events.AcquireBlocked:
		add("state %s", ev.State)
		heldBy(ev, add)
		addIf(ev.Foreign, "foreign lock file")
		addIf(ev.Mode == events.ModeShared, "asked %s", modeText(ev))
		add("waited %s", seconds(ev.WaitedSeconds))
		addIf(ev.Reason == events.BlockedByQueue, "behind queued waiters")
		switch {
		case ev.Until != "" && ev.QueuedSeq > 0:
			add("still QUEUED since seq %d", ev.QueuedSeq) // a renewal of the place
		case ev.Until != "":
			add("QUEUED") // until is in the JSON forms: too long for a table row
		}
	case events.ActionRefused:
		add("REFUSED %s", ev.Action)
		addIf(ev.State != "", "state %s", ev.State)
		heldBy(ev, add)
		add("error %q", ev.Error)
	case events.LockProjected:
		addIf(ev.BrokenChainAccepted, "BROKEN CHAIN accepted (first bad seq %d)", ev.FirstBadSeq)
		changes := strings.Join(ev.Changes, "; ")
		add("%s", changes)
		addIf(ev.MovedAside != "" && !strings.Contains(changes, "moved aside to "+ev.MovedAside), "moved aside to %s", ev.MovedAside)
	case events.JobProcesses:
		add("job %s: %s %s", ev.JobRequestID, count(len(ev.PIDs), "process", "processes"), strings.ReplaceAll(ev.Action, "_", " "))
		add("pids %s", pidList(ev.PIDs))
		addIf(ev.Note != "", "note %q", ev.Note)
	case events.FenceRejected:
		add("REFUSED %s %s: token %d, below %d", fenceWrite(ev.Fence), ev.Resource, ev.StaleToken, ev.CurrentToken)
	case events.LedgerExported:
		add("exported %s%s", eventCount(ev.Events), seqRange(ev.FirstSeq, ev.LastSeq))
		addIf(ev.Since != "", "since %s", ev.Since)
		addIf(ev.Until != "", "until %s", ev.Until)
		add("as %s to %s", ev.Format, ev.Destination)
	case events.SignerAdded:
		add("signer %s added as %s", ev.Key, ev.Role)
	case events.SignerRemoved:
		add("signer %s removed (was %s)", ev.Key, ev.Role)
	case events.LedgerPruned, events.LedgerUnpruned:
		verb := "pruned %s%s from the live store"
		if ev.Type == events.LedgerUnpruned {
			verb = "put %s%s back into the live store"
		}
		add(verb, eventCount(ev.Events), seqRange(ev.FirstSeq, ev.LastSeq))
		if sha, _, ok := events.ParsePruneNote(ev.Note); ok {
			add("archive sha256 %s", sha)
		}
		addIf(ev.File != "", "archive file %s", ev.File)
	case events.LedgerVerified:
		if ev.Result == events.AuditOK {
			add("OK")
		} else {
			add("FAILED: %s", count(ev.Problems, "problem", "problems"))
		}
		addIf(ev.FirstBadSeq > 0, "first bad seq %d", ev.FirstBadSeq)
		add("%s checked%s", eventCount(ev.Events), seqRange(ev.FirstSeq, ev.LastSeq))
		addIf(ev.HeadHash != "", "head %s", ev.HeadHash)
		addIf(ev.File != "", "export file %s", ev.File)
	case events.LedgerProjected:
		switch {
		case ev.Result == events.AuditRefused:
			add("REFUSED: damaged log (%s, first bad seq %d)", count(ev.Problems, "problem", "problems"), ev.FirstBadSeq)
		case ev.BrokenChainAccepted:
			add("BROKEN CHAIN accepted (first bad seq %d)", ev.FirstBadSeq)
		}
		add("%s replayed, %s", eventCount(ev.Events), count(ev.Locks, "lock", "locks"))
		if ev.Result != events.AuditRefused {
			if ev.RowsChanged == 0 && ev.FilesChanged == 0 {
				add("no change")
			} else {
				add("%s and %s changed", count(ev.RowsChanged, "row", "rows"), count(ev.FilesChanged, "file", "files"))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// heldBy adds what blocked or refused an action: the holder, or the
// unreadable file at the lock's path (never shown as a holder).
func heldBy(ev *replay.Event, add func(format string, a ...any)) {
	switch h := ev.HeldBy; {
	case ev.UnreadableFile != nil:
		add("held by an %s", ev.UnreadableFile)
	case h != nil:
		add("held by %s (%s, pid %d@%s, since %s)", h.RequestID, h.Actor, h.PID, h.HostID, h.CreatedAt)
	}
}

// count is n and the noun: "1 event", "2 events".
func count[N int | int64](n N, one, many string) string {
	return strconv.FormatInt(int64(n), 10) + " " + termtext.Plural(int(n), one, many)
}

func eventCount(n int64) string { return count(n, "event", "events") }

func seqRange(first, last int64) string {
	if first == 0 && last == 0 {
		return ""
	}
	return fmt.Sprintf(" (seq %d-%d)", first, last)
}

// maxListedPIDs bounds the pids a detail line names; the body keeps all.
const maxListedPIDs = 8

func pidList(pids []int) string {
	n := min(len(pids), maxListedPIDs)
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(pids[i])
	}
	out := strings.Join(s, " ")
	if len(pids) > n {
		out += fmt.Sprintf(" and %d more", len(pids)-n)
	}
	return out
}

func metadataText(md map[string]string) string {
	if len(md) == 0 {
		return ""
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(md)) {
		kv = append(kv, k+"="+md[k])
	}
	return "metadata " + strings.Join(kv, " ")
}

func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d >= time.Second {
		d = d.Round(time.Second)
	} else {
		d = d.Round(time.Millisecond)
	}
	return d.String()
}

// ANSI colours for the table's EVENT column, on a terminal only.
const (
	ansiRed     = "\x1b[31m"
	ansiGreen   = "\x1b[32m"
	ansiYellow  = "\x1b[33m"
	AnsiMagenta = "\x1b[35m"
	AnsiDim     = "\x1b[2m"
	AnsiBold    = "\x1b[1m"
	AnsiReset   = "\x1b[0m"
)

// typeColor is the ANSI colour of each event type in a table; EventColor
// turns a failure of a type red (or magenta, an accepted broken chain).
var typeColor = map[events.Type]string{
	events.LockAcquired: ansiGreen, events.LockReleased: ansiGreen, events.LockHeartbeat: AnsiDim, events.LockStolen: AnsiMagenta,
	events.HeartbeatFailed: ansiRed, events.AcquireBlocked: ansiYellow, events.ActionRefused: ansiYellow,
	events.LockProjected: AnsiMagenta, events.JobProcesses: ansiYellow, events.LedgerExported: AnsiDim,
	events.LedgerPruned: AnsiMagenta, events.LedgerUnpruned: AnsiMagenta, events.SignerAdded: AnsiMagenta,
	events.SignerRemoved: AnsiMagenta, events.FenceRejected: ansiRed, events.LedgerVerified: AnsiDim, events.LedgerProjected: AnsiDim,
}

// EventColor is the ANSI colour of ev's type in a table ("" for none).
func EventColor(ev *replay.Event) string {
	switch ev.Type {
	case events.LockReleased:
		if ev.Result != events.ResultSuccess || ev.Forced {
			return ansiRed
		}
	case events.JobProcesses:
		if ev.Action == events.JobKilled {
			return ansiRed
		}
	case events.LedgerVerified:
		if ev.Result != events.AuditOK {
			return ansiRed
		}
	case events.LedgerProjected:
		switch {
		case ev.Result == events.AuditRefused:
			return ansiRed
		case ev.BrokenChainAccepted:
			return AnsiMagenta
		}
	}
	return typeColor[ev.Type]
}

// fenceWrite is fence_rejected's fence in words, before its resource.
func fenceWrite(fence string) string {
	switch fence {
	case events.FenceFileWrite:
		return "write to file"
	case events.FencePostgresWrite:
		return "write to PostgreSQL resource"
	}
	return "write to"
}
