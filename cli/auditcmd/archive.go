package auditcmd

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/archive"
	"github.com/lockledger/lockledger/cli/eventfmt"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/outfile"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/verify"
)

type archiveOptions struct {
	g      *invocation.Globals
	below  int64
	before string
	out    string
	actor  string
}

var archiveListing = invocation.Listing{
	Use:   "archive (--below SEQ | --before TIME) -o FILE",
	Short: "Write the oldest events, up to a signed checkpoint, to a self-contained archive",
}

func NewArchive(g *invocation.Globals) *cobra.Command {
	o := &archiveOptions{g: g}
	cmd := archiveListing.Of(&cobra.Command{
		Long: `Write the live log's events below seq SEQ to FILE, exactly as stored, in
export's JSON Lines: the signed checkpoint of size SEQ-1 (which covers
exactly them) first, then one line per event with its seq, prev_hash,
hash and canonical body. verify --file FILE --verifier-key KEY checks an
archive on its own; prune --archive FILE then removes those events from
the live store.

SEQ-1 must be the size of a checkpoint the ledger stores, and the event
SEQ must exist (the live log keeps at least one event): otherwise the
nearest boundaries are named (lockledger checkpoint signs one at the
head). --before TIME picks the largest boundary whose events are all
dated before TIME.

-o FILE is written as export's is: never inside the root, never through
a symlink, renamed into place once complete. The archive is recorded as a
read of the log (ledger_exported).`,
		Example: `  lockledger archive --before 2025-01-01 -o ledger-2024.jsonl
  lockledger verify --file ledger-2024.jsonl --verifier-key ops.vkey
  lockledger prune --archive ledger-2024.jsonl`,
		Args: invocation.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runArchive(cmd.Context(), o) },
	})
	fl := cmd.Flags()
	fl.Int64Var(&o.below, "below", 0, "archive the events below this seq (SEQ-1 is a stored checkpoint's size)")
	fl.StringVar(&o.before, "before", "", "archive up to the largest checkpoint boundary whose events are all older (RFC 3339, or a duration ago)")
	fl.StringVarP(&o.out, "output", "o", "", "the archive file to write (required)")
	fl.StringVar(&o.actor, "actor", "", "who archives, as recorded (default $LOCKLEDGER_ACTOR, else $USER, else the OS user name)")
	return cmd
}

func runArchive(ctx context.Context, o *archiveOptions) error {
	var before time.Time
	switch {
	case o.out == "":
		return events.Invalid("-o", "", "is required: the archive file to write")
	case (o.below == 0) == (o.before == ""):
		return events.Invalid("--below", strconv.FormatInt(o.below, 10), "give exactly one of --below SEQ and --before TIME")
	case o.below < 0 || o.below == 1:
		return events.Invalid("--below", strconv.FormatInt(o.below, 10), "must be a seq from 2")
	case o.before != "":
		var err error
		if before, err = invocation.ParseTime("--before", o.before, time.Now()); err != nil {
			return err
		}
	}
	if err := invocation.ValidActor(o.actor); err != nil {
		return err
	}
	var w *archive.Written
	err := o.g.ReadInto(ctx, o.out, func(file io.Writer, r *invocation.Reader) error {
		below, err := archive.Boundary(ctx, r.Tx, o.below, before)
		if err == nil {
			w, err = archive.Write(ctx, r.Tx, file, below)
		}
		return boundaryInput(o.below, o.before, err)
	})
	if err != nil {
		return err
	}
	dest := invocation.AbsPath(o.out)
	termtext.Fprintf(o.g.IO.Out, "archived seq %d-%d (%d events) to %s\n  sha256 %s\n  prune them from the live store with: lockledger prune --archive %s\n",
		w.FirstSeq, w.LastSeq, w.Events, dest, w.SHA256, dest)
	o.g.RecordAccess(ctx, "archive", events.LedgerExported, o.actor, &events.Exported{FirstSeq: w.FirstSeq, LastSeq: w.LastSeq,
		Events: w.Events, Format: eventfmt.FormatJSONL, Destination: dest})
	return nil
}

// boundaryInput makes a boundary error bad input (exit 2), naming the flag.
func boundaryInput(below int64, before string, err error) error {
	var be *archive.BoundaryError
	if !errors.As(err, &be) {
		return err
	}
	rule := *be
	rule.Below = 0 // the field is named already
	if before != "" {
		return events.Invalid("--before", before, rule.Error())
	}
	return events.Invalid("--below", strconv.FormatInt(below, 10), rule.Error())
}

// pruneOptions are prune's and unprune's.
type pruneOptions struct {
	g       *invocation.Globals
	archive string
	actor   string
}

var pruneListing = invocation.Listing{
	Use:   "prune --archive FILE",
	Short: "Remove archived events from the live store, once their archive verifies against it",
}

func NewPrune(g *invocation.Globals) *cobra.Command {
	o := &pruneOptions{g: g}
	cmd := pruneListing.Of(&cobra.Command{
		Long: `Check the archive FILE (written by lockledger archive) on its own, as
verify --file does, and against the live ledger: the same ledger, starting
where the live log starts, ending on a stored checkpoint whose root the
live Merkle tree has, holding exactly the leaves the tree stores, and
chaining into the first event that stays. Then, in one write, delete
those events from the live store and append a ledger_pruned event naming
the archive's SHA-256, the range and the tree root at its end, with a
checkpoint of the log through it signed by the ledger's key. Anything
else refuses the prune (exit 2) and changes nothing.

A prune needs the ledger's signing key: --unsigned alone is refused, and
so is a key the trust store did not pin for this ledger at this root
before. Plain verify fails on a ledger_pruned event that no checkpoint of
exactly its size, signed by a key it trusts, covers.

The Merkle hashes of every event stay (about 70 bytes an event), so every
inclusion and consistency proof keeps working; plain verify checks the
live log from the boundary and names it; verify --archive FILE checks
archive and live ledger as one log. The database's triggers allow the
deletion only in the transaction that appends its ledger_pruned event:
any other deletion is still refused, and still fails verify.

On SQLite the file is VACUUMed afterwards, and its size before and after
printed. On PostgreSQL the space is reused by later appends (VACUUM FULL
events returns it to the system); the role needs DELETE on events and
INSERT on prune_horizon, which the writers' role need not have.
lockledger unprune --archive FILE puts the events back.`,
		Example: `  lockledger prune --archive ledger-2024.jsonl
  lockledger verify --archive ledger-2024.jsonl`,
		Args: invocation.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPrune(cmd.Context(), o) },
	})
	cmd.Flags().StringVar(&o.archive, "archive", "", "the archive of the events to remove (required)")
	cmd.Flags().StringVar(&o.actor, "actor", "", "who prunes, as recorded (default $LOCKLEDGER_ACTOR, else $USER, else the OS user name)")
	return cmd
}

func runPrune(ctx context.Context, o *pruneOptions) error {
	return o.withArchive(ctx, "prune", "the archive file lockledger archive wrote", func(l *ledger.Ledger, id ledger.Identity, _ *os.File, c *archive.Checked) error {
		sizeBefore := ledgerSize(ctx, o.g, l)
		seq, err := l.Prune(ctx, id, c, invocation.AbsPath(o.archive))
		if err != nil {
			return archiveInput(o.archive, err)
		}
		termtext.Fprintf(o.g.IO.Out, "pruned seq %d-%d (%d events): the live log starts at seq %d\n  archive %s, sha256 %s\n  recorded: ledger_pruned, seq %d\n",
			c.FirstSeq, c.LastSeq, c.LastSeq-c.FirstSeq+1, c.LastSeq+1, invocation.AbsPath(o.archive), c.SHA256, seq)
		if o.g.Database == "" {
			if err := l.Compact(ctx); err != nil {
				o.g.Log.Warn("VACUUM after the prune failed; the space is reused by later appends", "err", err)
			}
		}
		if after := ledgerSize(ctx, o.g, l); sizeBefore > 0 && after > 0 {
			what := "after VACUUM"
			if o.g.Database != "" {
				what = "after the prune (PostgreSQL reuses the space; VACUUM FULL events returns it)"
			}
			termtext.Fprintf(o.g.IO.Out, "  database: %d bytes before, %d %s\n", sizeBefore, after, what)
		}
		return nil
	})
}

// withArchive runs prune's or unprune's write (verb) on the ledger, opened
// with its signing key, once the --archive (required: what it is) checks
// out on its own.
func (o *pruneOptions) withArchive(ctx context.Context, verb, required string,
	write func(*ledger.Ledger, ledger.Identity, *os.File, *archive.Checked) error) error {
	if o.archive == "" {
		return events.Invalid("--archive", "", "is required: "+required)
	}
	f, c, err := readArchive(ctx, o.g, o.archive, o.actor)
	if err != nil {
		return err
	}
	defer f.Close()
	l, err := o.g.OpenKeyed(ctx, verb)
	if err != nil {
		return err
	}
	defer o.g.Finish(l)
	return write(l, ledger.Identity{Actor: o.actor, PID: os.Getppid()}, f, c)
}

// readArchive checks prune's and unprune's --actor, opens their --archive
// and checks it on its own with the keys plain verify trusts; the file is
// left open for the write to read again.
func readArchive(ctx context.Context, g *invocation.Globals, path, actor string) (*os.File, *archive.Checked, error) {
	if err := invocation.ValidActor(actor); err != nil {
		return nil, nil, err
	}
	f, err := openInput("--archive", path, archiveWhat)
	if err != nil {
		return nil, nil, err
	}
	trust, err := (&verifyOptions{g: g}).trust(ctx)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	c, err := checkArchive(f, path, trust)
	if err != nil {
		f.Close()
		return nil, nil, archiveInput(path, err)
	}
	return f, c, nil
}

// checkArchive checks the archive f, read from path, on its own (verify
// --file's checks), with the verifier keys of t.
func checkArchive(f *os.File, path string, t *replay.Trust, opts ...replay.VerifyOption) (*archive.Checked, error) {
	return archive.Read(f, invocation.AbsPath(path), "", append(opts, replay.WithTrust(&replay.Trust{Verifiers: t.Verifiers,
		Expected: len(t.Verifiers) > 0, OthersUnchecked: t.OthersUnchecked}))...)
}

// archiveWhat is what an --archive file must be, for openInput.
const archiveWhat = "an archive lockledger archive wrote"

// openInput opens the file a flag names for reading, which must be a
// regular file (what, for the message): O_NONBLOCK keeps a FIFO there
// from blocking the open, which no signal would end.
func openInput(flag, path, what string) (*os.File, error) {
	f, _, err := outfile.OpenRegular(path, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, outfile.ErrNotRegular):
		return nil, events.Invalid(flag, path, "must be a regular file ("+what+")")
	case err != nil:
		return nil, events.Invalid(flag, path, "cannot be read: "+invocation.ErrText(err))
	}
	return f, nil
}

var unpruneListing = invocation.Listing{
	Use:   "unprune --archive FILE",
	Short: "Put the events the last prune removed back into the live store, from its archive",
}

func NewUnprune(g *invocation.Globals) *cobra.Command {
	o := &pruneOptions{g: g}
	cmd := unpruneListing.Of(&cobra.Command{
		Long: `Undo the last prune standing: FILE must be the archive it recorded (its
SHA-256), verify on its own as verify --file does, hold the leaves the
live Merkle tree stores and chain into the live log's first event. Then,
in one write, its events are inserted back byte for byte and a
ledger_unpruned event is appended. The head, the seqs and the fencing
tokens do not move; verify checks the whole log from the genesis again.
Anything else refuses (exit 2) and changes nothing. Like prune, unprune
needs the ledger's signing key and signs a checkpoint through its marker. Undo several prunes
last first.`,
		Example: `  lockledger unprune --archive ledger-2024.jsonl`,
		Args:    invocation.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runUnprune(cmd.Context(), o) },
	})
	cmd.Flags().StringVar(&o.archive, "archive", "", "the archive the last prune recorded (required)")
	cmd.Flags().StringVar(&o.actor, "actor", "", "who restores, as recorded (default $LOCKLEDGER_ACTOR, else $USER, else the OS user name)")
	return cmd
}

func runUnprune(ctx context.Context, o *pruneOptions) error {
	return o.withArchive(ctx, "unprune", "the archive the last prune recorded", func(l *ledger.Ledger, id ledger.Identity, f *os.File, c *archive.Checked) error {
		seq, err := l.Unprune(ctx, id, archive.Restore(c, f, l.ID(), invocation.AbsPath(o.archive)))
		if err != nil {
			return archiveInput(o.archive, err)
		}
		termtext.Fprintf(o.g.IO.Out, "put seq %d-%d (%d events) back into the live store from %s\n  recorded: ledger_unpruned, seq %d\n",
			c.FirstSeq, c.LastSeq, c.LastSeq-c.FirstSeq+1, invocation.AbsPath(o.archive), seq)
		return nil
	})
}

// archiveInput makes a refused archive bad input (exit 2), naming the flag.
func archiveInput(path string, err error) error {
	var be *archive.BoundaryError
	if errors.Is(err, archive.ErrMismatch) || errors.As(err, &be) {
		return events.Invalid("--archive", path, err.Error())
	}
	return err
}

// ledgerSize is the database's size in bytes (SQLite: its pages; PostgreSQL:
// the events table with its indexes), 0 when it cannot be read.
func ledgerSize(ctx context.Context, g *invocation.Globals, l *ledger.Ledger) int64 {
	n, err := l.Size(ctx)
	if err != nil {
		g.Log.Debug("database size", "err", err)
		return 0
	}
	return n
}

// withArchives checks the archives of verify --archive with the live
// ledger's report rep: each on its own (verify --file's checks, with the
// verifier keys of t), then all of them and the live log as one log.
func (o *verifyOptions) withArchives(rep *verify.Report, t *replay.Trust, opts ...replay.VerifyOption) error {
	var checked []*archive.Checked
	for _, path := range o.archives {
		f, err := openInput("--archive", path, archiveWhat)
		if err != nil {
			return err
		}
		c, err := checkArchive(f, path, t, opts...)
		f.Close()
		if errors.Is(err, archive.ErrMismatch) {
			rep.Add(verify.Problem{Kind: verify.KindCheckpoint, Detail: err.Error()})
			continue
		}
		if err != nil {
			return err
		}
		checked = append(checked, c)
	}
	archive.AgainstLedger(rep, rep.Genesis, checked)
	return nil
}
