package auditcmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/trust"
)

var trustListing = invocation.Listing{
	Use:   "trust",
	Short: "Show, export, pin, forget or adopt the ledger this user trusts at the root",
}

func NewTrust(g *invocation.Globals) *cobra.Command {
	cmd := trustListing.Of(&cobra.Command{
		Long: `The trust store, outside every root ($LOCKLEDGER_TRUST_DIR, else
$XDG_CONFIG_HOME/lockledger, else ~/.config/lockledger; mode 0700, owned
by this user), holds this user's signing key (signing.key), the ledger
pinned at each root with its verifier key (known_ledgers, like ssh's
known_hosts) and the latest signed head of each ledger (heads/). Writers
sign with the key and pin a ledger on its first write (trust on first
use); every signed write proves that the log extends the head kept, and
plain verify checks the root's ledger against the pin and the head.`,
		Args: invocation.NoArgs,
	})
	var showJSON bool
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the trust store, the key writes at this root sign with (a group root: the group's), its pins and heads",
		Args:  invocation.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runTrustShow(g, showJSON || g.JSON) },
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print JSON")
	export := &cobra.Command{
		Use:   "export",
		Short: "Print this root's pins, for an auditor to pin on another host (trust pin)",
		Args:  invocation.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runTrustExport(g) },
	}
	var id, key string
	pin := &cobra.Command{
		Use:   "pin --ledger-id ID --verifier-key KEY",
		Short: "Pin the ledger this root must hold and the key that signs it (e.g. from trust export)",
		Args:  invocation.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runTrustPin(cmd.Context(), g, id, key) },
	}
	pin.Flags().StringVar(&id, "ledger-id", "", "the ledger id the root must hold")
	pin.Flags().StringVar(&key, "verifier-key", "", "the verifier key its checkpoints are signed with, or a file holding it")
	var yes bool
	forget := &cobra.Command{
		Use:   "forget [--yes]",
		Short: "Remove this root's pins (and the heads kept of the ledgers no pin names any more)",
		Long: `Remove the pins of this root from known_ledgers, and the signed heads
kept of the ledgers no other pin names. The next write pins whatever
ledger the root then holds (trust on first use). Asks on a terminal;
elsewhere --yes is required.`,
		Args: invocation.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTrustForget(cmd.Context(), g, yes) },
	}
	forget.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask")
	adopt := &cobra.Command{
		Use:   "adopt",
		Short: "Verify the root's ledger in full, pin it and sign its current head",
		Long: `Adopt a ledger made before signing was on by default, or with
--unsigned: verify it in full (exit 1, nothing pinned, when it fails),
pin it with this user's key and sign a checkpoint of its whole log, stored
in the ledger and kept in heads/. A first signed write does the same
without the full verify.`,
		Args: invocation.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTrustAdopt(cmd.Context(), g) },
	}
	cmd.AddCommand(show, export, pin, forget, adopt)
	return cmd
}

type trustShown struct {
	Dir         string      `json:"dir"`
	Root        string      `json:"root"`
	KeyFile     string      `json:"key_file,omitempty"`
	VerifierKey string      `json:"verifier_key,omitempty"`
	GroupKey    bool        `json:"group_key"`
	KeyError    string      `json:"key_error,omitempty"`
	Pins        []trust.Pin `json:"pins"`
	Heads       []shownHead `json:"heads"`
}

type shownHead struct {
	LedgerID string `json:"ledger_id"`
	File     string `json:"file"`
	Size     int64  `json:"size"`
	Root     string `json:"root_hash"`
	Time     string `json:"time,omitempty"`
}

func runTrustShow(g *invocation.Globals, asJSON bool) error {
	s, err := g.TrustStore()
	if err != nil {
		return err
	}
	out := trustShown{Dir: s.Path(), Root: trust.Resolve(g.Root), Pins: []trust.Pin{}, Heads: []shownHead{}}
	// The key writes at this root sign with: at a group root the group's,
	// not this user's own, which signs nothing there.
	k, path, group, err := s.ReadDefaultKey(g.Root)
	switch {
	case group && errors.Is(err, fs.ErrPermission):
		// Someone outside the group looking: the pins are still theirs
		// to see.
		out.KeyFile, out.KeyError = path, "cannot be read by this user: "+invocation.ErrText(err)
	case err != nil:
		return err
	case k != nil:
		out.KeyFile, out.VerifierKey = k.Path, k.Verifier
	}
	out.GroupKey = group
	if out.Pins, err = s.PinsOf(g.Root); err != nil {
		return err
	}
	if out.Pins == nil {
		out.Pins = []trust.Pin{}
	}
	for _, p := range out.Pins {
		v, err := checkpoint.NewVerifier(p.Verifier)
		if err != nil {
			continue
		}
		heads := invocation.Heads(s, p.Root)
		h, err := heads.Last(p.LedgerID, v)
		if err != nil || h == nil {
			continue
		}
		sh := shownHead{LedgerID: p.LedgerID, File: heads.Kept(p.LedgerID), Size: h.Size, Root: h.Root.String()}
		if !h.Time.IsZero() {
			sh.Time = events.FormatTime(h.Time)
		}
		out.Heads = append(out.Heads, sh)
	}
	if asJSON {
		invocation.WriteJSON(g.IO.Out, out)
		return nil
	}
	w := g.IO.Out
	termtext.Fprintf(w, "trust store  %s\n", out.Dir)
	switch {
	case out.KeyError != "":
		termtext.Fprintf(w, "signing key  %s (the group's: the root is a group root): %s\n", out.KeyFile, out.KeyError)
	case out.VerifierKey != "" && out.GroupKey:
		termtext.Fprintf(w, "signing key  %s (the group's: the root is a group root)\nverifier key %s\n", out.KeyFile, out.VerifierKey)
	case out.VerifierKey != "":
		termtext.Fprintf(w, "signing key  %s\nverifier key %s\n", out.KeyFile, out.VerifierKey)
	case out.GroupKey:
		// A group root prepared by hand: the key a member's first write
		// makes is the group's, not the one of this user's trust store.
		termtext.Fprintf(w, "signing key  none yet: the group's (the root is a group root), made at %s by a member's first signed write\n", path)
	default:
		termtext.Fprintf(w, "signing key  none yet (made by the first signed write)\n")
	}
	termtext.Fprintf(w, "root         %s\n", out.Root)
	if len(out.Pins) == 0 {
		fmt.Fprintln(w, "pins         none: the next write pins the ledger it finds (trust on first use)")
	}
	for _, p := range out.Pins {
		termtext.Fprintf(w, "pin          ledger %s, key %s\n", p.LedgerID, p.Verifier)
	}
	for _, h := range out.Heads {
		termtext.Fprintf(w, "head         ledger %s: %d events, root %s, signed %s (%s)\n", h.LedgerID, h.Size, h.Root, h.Time, h.File)
	}
	return nil
}

func runTrustExport(g *invocation.Globals) error {
	s, pins, err := g.RootPins()
	if err != nil {
		return err
	}
	if len(pins) == 0 {
		return fmt.Errorf("trust export: no ledger is pinned at %s in %s (write to it, or run lockledger trust adopt)", trust.Resolve(g.Root), s.PinsPath())
	}
	return g.Answer(pins, true, func(w io.Writer) {
		for _, p := range pins {
			termtext.Fprintf(w, "# lockledger trust pin --ledger-id %s --verifier-key %s\n%s\n", p.LedgerID, p.Verifier, p.Line())
		}
	})
}

func runTrustPin(ctx context.Context, g *invocation.Globals, id, key string) error {
	if id == "" {
		return events.Invalid("--ledger-id", id, "is required: a ledger id as verify prints it (1-128 of A-Z a-z 0-9 _ . : -)")
	}
	if err := validLedgerIDFlag(id); err != nil {
		return err
	}
	if key == "" {
		return events.Invalid("--verifier-key", key, "is required: a verifier key (NAME+HASH+KEY, as keygen and trust export print it) or a file holding one")
	}
	if _, err := checkpoint.NewVerifier(key); err != nil && trust.Within(g.Root, key) {
		return invocation.KeyInRoot("--verifier-key", key, g.Root)
	}
	vkey, _, err := verifierKeyText(ctx, "--verifier-key", key)
	if err != nil {
		return err
	}
	s, err := g.TrustStore()
	if err != nil {
		return err
	}
	p := trust.Pin{Root: trust.Resolve(g.Root), LedgerID: id, Verifier: vkey}
	added, err := s.Add(p)
	if err != nil {
		return err
	}
	if added {
		termtext.Fprintf(g.IO.Out, "pinned ledger %s at %s in %s\n", id, p.Root, s.PinsPath())
	} else {
		termtext.Fprintf(g.IO.Out, "already pinned: ledger %s at %s\n", id, p.Root)
	}
	return nil
}

func runTrustForget(ctx context.Context, g *invocation.Globals, yes bool) error {
	s, pins, err := g.RootPins()
	if err != nil {
		return err
	}
	if len(pins) == 0 {
		termtext.Fprintf(g.IO.Out, "no pin of %s in %s\n", trust.Resolve(g.Root), s.PinsPath())
		return nil
	}
	if !yes {
		if !invocation.IsTerminal(g.IO.In) {
			return events.Invalid("--yes", "", "is required to forget the pins of "+trust.Resolve(g.Root)+" when not asking on a terminal")
		}
		termtext.Fprintf(g.IO.ErrOut, "forget %d pin(s) of %s (ledger %s)? [y/N] ", len(pins), trust.Resolve(g.Root), pins[0].LedgerID)
		line, err := bufio.NewReader(g.Stdin(ctx)).ReadString('\n')
		if ctx.Err() != nil {
			return err
		}
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			return fmt.Errorf("trust forget: not confirmed; nothing removed")
		}
	}
	gone, err := s.Forget(g.Root, func(trust.Pin) bool { return true })
	if err != nil {
		return err
	}
	left, err := s.Pins()
	if err != nil {
		return err
	}
	for _, p := range gone {
		named := slices.ContainsFunc(left, func(l trust.Pin) bool { return l.LedgerID == p.LedgerID })
		// This root's head goes with its pin; the head kept before heads
		// were per root goes once no root pins the ledger.
		paths := []string{invocation.Heads(s, p.Root).Path(p.LedgerID)}
		if !named {
			paths = append(paths, trust.Heads{Dir: s.HeadsDir()}.Path(p.LedgerID))
		}
		for _, path := range paths {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
		termtext.Fprintf(g.IO.Out, "forgot ledger %s at %s\n", p.LedgerID, p.Root)
	}
	return nil
}

func runTrustAdopt(ctx context.Context, g *invocation.Globals) error {
	if !g.Trusting() {
		return events.Invalid("--unsigned", "", "adopt signs with the trust store's key: drop --unsigned and --signing-key")
	}
	o := &verifyOptions{g: g, clockSkew: "2s", full: true}
	t, err := o.trust(ctx)
	if err != nil {
		return err
	}
	rep, err := g.Verify(ctx, ledger.CheckAgainst(t), ledger.FullStorageCheck())
	if err != nil {
		return err
	}
	o.checkExpected(rep)
	if !rep.OK {
		printReport(g.IO.Out, rep)
		return fmt.Errorf("trust adopt: the ledger does not verify; nothing was pinned or signed: %w", ledger.ErrBrokenChain)
	}
	return g.Using(ctx, invocation.Rewrites, func(l *ledger.Ledger) error {
		if rep.Events == 0 {
			termtext.Fprintf(g.IO.Out, "adopted ledger %s (no events yet)\n", l.ID())
			return nil
		}
		cp, err := l.Checkpoint(ctx)
		if err != nil {
			return err
		}
		termtext.Fprintf(g.IO.Out, "adopted ledger %s: %d events verified, head signed by %s\n", l.ID(), cp.Size, cp.Key)
		return nil
	})
}
