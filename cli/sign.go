package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/outfile"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/trust"
)

// signFlags are the global flags of signed checkpoints.
type signFlags struct {
	key         string   // --signing-key FILE, or LOCKLEDGER_SIGNING_KEY (a file, or the key itself)
	keyFromEnv  bool     // key came from the environment
	witnesses   []string // --witness PATH (writers append, verify reads)
	every       string
	interval    string
	unsigned    bool            // --unsigned, LOCKLEDGER_UNSIGNED=1
	witnessURLs witnessURLFlags // --witness-url URL=VKEY (see witnessurl.go)
}

func (f *signFlags) register(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	f.key = os.Getenv("LOCKLEDGER_SIGNING_KEY")
	f.keyFromEnv = f.key != ""
	var envWitness []string
	if w := os.Getenv("LOCKLEDGER_WITNESS"); w != "" {
		envWitness = filepath.SplitList(w)
	}
	every, interval := os.Getenv("LOCKLEDGER_CHECKPOINT_EVERY"), os.Getenv("LOCKLEDGER_CHECKPOINT_INTERVAL")
	if every == "" {
		every = strconv.Itoa(ledger.DefaultCheckpointEvery)
	}
	if interval == "" {
		interval = ledger.DefaultCheckpointInterval.String()
	}
	pf.Var(&keyFlag{f}, "signing-key", "file holding the Ed25519 key (lockledger keygen) writers sign checkpoints with; never inside the root "+
		"(env LOCKLEDGER_SIGNING_KEY: the file, or the key itself)")
	pf.StringArrayVar(&f.witnesses, "witness", envWitness, "writers copy each checkpoint here (a directory: one file each; else appended to the file); "+
		"verify reads the checkpoints here (repeatable; env LOCKLEDGER_WITNESS, a list like PATH)")
	pf.BoolVar(&f.unsigned, "unsigned", os.Getenv(envUnsigned) == "1", "write without the trust store: unsigned, the ledger not pinned, no head kept (an explicit --signing-key still signs); "+
		"nothing outside the root vouches for what is written (env "+envUnsigned+"=1)")
	f.registerWitnessURLs(pf)
	pf.StringVar(&f.every, "checkpoint-every", every, "with a key, writers sign a checkpoint every this many events (env LOCKLEDGER_CHECKPOINT_EVERY)")
	pf.StringVar(&f.interval, "checkpoint-interval", interval, "with a key, the first write after this long without a checkpoint signs one (env LOCKLEDGER_CHECKPOINT_INTERVAL)")
}

// keyFlag marks a key given on the command line as a file, never the key.
type keyFlag struct{ f *signFlags }

func (k *keyFlag) String() string {
	if k.f.keyFromEnv {
		return "" // never print a key, even a mistyped one
	}
	return k.f.key
}
func (k *keyFlag) Set(s string) error { k.f.key, k.f.keyFromEnv = s, false; return nil }
func (k *keyFlag) Type() string       { return "FILE" }

// resolvedRoot is the root as the ledger will resolve it, for comparing
// paths with it.
func resolvedRoot(root string) string {
	abs, err := filepath.Abs(root)
	if err != nil {
		return root
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// insideRoot reports whether path is the root or below it (symlinks
// resolved where they exist).
func insideRoot(root, path string) bool {
	p, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	} else if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(r, filepath.Base(p))
	}
	rel, err := filepath.Rel(resolvedRoot(root), p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func keyInRoot(field, path, root string) error {
	return events.Invalid(field, path, fmt.Sprintf(
		"is inside the root %s: anyone who can write the ledger can read or replace it, so it protects nothing; keep it outside (another user, another host, a secrets store)",
		resolvedRoot(root)))
}

// signer reads the signing key, nil when none is configured.
func (g *globals) signer() (note.Signer, string, error) {
	f := &g.sign
	if f.key == "" {
		return nil, "", nil
	}
	field := "--signing-key"
	if f.keyFromEnv {
		field = "LOCKLEDGER_SIGNING_KEY"
		if strings.Contains(f.key, checkpoint.SignerKeyPrefix) {
			return signerOf(field, "(the key)", f.key)
		}
	}
	fi, err := os.Stat(f.key)
	if err != nil {
		// Not a file: perhaps a key typed wrong, which must not reach a log.
		return nil, "", events.Invalid(field, "(the key)", "is neither a readable key file nor a key ("+checkpoint.SignerKeyPrefix+"...): "+errText(err))
	}
	if insideRoot(g.root, f.key) {
		return nil, "", keyInRoot(field, f.key, g.root)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		g.log.Warn("the signing key file can be read by others than its owner; keep it 0600", "file", f.key, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
	}
	b, err := os.ReadFile(f.key)
	if err != nil {
		return nil, "", events.Invalid(field, f.key, "cannot be read: "+errText(err))
	}
	return signerOf(field, f.key, string(b))
}

// signerOf reads an encoded signer key and its verifier key.
func signerOf(field, shown, key string) (note.Signer, string, error) {
	s, err := checkpoint.NewSigner(strings.TrimSpace(key))
	if err != nil {
		return nil, "", events.Invalid(field, shown, err.Error())
	}
	vkey, err := checkpoint.VerifierKey(key)
	if err != nil {
		return nil, "", events.Invalid(field, shown, err.Error())
	}
	return s, vkey, nil
}

func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// signingOptions are the ledger options of a writer: its key, witnesses
// and policy: the key configured, else the trust store's (with its heads
// witness, and k set: the ledger is pinned once open), unless --unsigned.
func (g *globals) signingOptions() (opts []ledger.Option, k *trust.Key, err error) {
	if g.trusting() {
		if opts, k, err = g.trustOptions(); err != nil {
			return nil, nil, err
		}
	} else {
		s, vkey, err := g.signer()
		if err != nil || s == nil {
			if err == nil {
				_, err = g.cosignerOptions(false)
			}
			return nil, nil, err
		}
		opts = []ledger.Option{ledger.WithSigner(s)}
		// The ledger is pinned with this key too, unless --unsigned, so
		// that plain verify checks what it signs.
		if !g.sign.unsigned {
			if _, err := g.trustStore(); err != nil {
				g.log.Warn("the ledger is not pinned with this key: the trust store cannot be opened", "err", err)
			} else {
				k = &trust.Key{Signer: s, Verifier: vkey}
			}
		}
	}
	more, err := g.policyOptions()
	if err != nil {
		return nil, nil, err
	}
	cosign, err := g.cosignerOptions(true)
	return append(append(opts, more...), cosign...), k, err
}

// checkpointPolicy is --checkpoint-every and --checkpoint-interval.
func (g *globals) checkpointPolicy() (int64, time.Duration, error) {
	every, err := strconv.ParseInt(g.sign.every, 10, 64)
	if err != nil || every < 1 {
		return 0, 0, events.Invalid("--checkpoint-every", g.sign.every, "must be a whole number of events, at least 1")
	}
	interval, err := ParseDuration("--checkpoint-interval", g.sign.interval)
	if err != nil {
		return 0, 0, err
	}
	if interval == 0 {
		return 0, 0, events.Invalid("--checkpoint-interval", g.sign.interval, "must be positive")
	}
	return every, interval, nil
}

// policyOptions are a signing writer's witnesses and checkpoint policy.
func (g *globals) policyOptions() ([]ledger.Option, error) {
	every, interval, err := g.checkpointPolicy()
	if err != nil {
		return nil, err
	}
	for _, w := range g.sign.witnesses {
		if insideRoot(g.root, w) {
			return nil, events.Invalid("--witness", w, fmt.Sprintf(
				"is inside the root %s: whoever can rewrite the ledger can rewrite it too, so it witnesses nothing; use another volume or host",
				resolvedRoot(g.root)))
		}
	}
	return []ledger.Option{ledger.WithWitnesses(g.sign.witnesses...), ledger.WithCheckpointPolicy(every, interval)}, nil
}

// --- keygen ---

type keygenOptions struct {
	g    *globals
	name string
	out  string
}

func newKeygen(g *globals) *cobra.Command {
	o := &keygenOptions{g: g}
	cmd := &cobra.Command{
		Use:   "keygen --name NAME -o FILE",
		Short: "Make the Ed25519 key that signs checkpoints; print its verifier key",
		Long: `Generate an Ed25519 key pair in the signed-note formats of
golang.org/x/mod/sumdb/note. The signer key goes to FILE (mode 0600; an
existing FILE is never overwritten); the verifier key, which auditors use
with verify --verifier-key and verify-proof, is printed.

Keep FILE where someone who can write the ledger cannot read it: another
user that only the writers run as, another host, a secrets store
(LOCKLEDGER_SIGNING_KEY may hold the key itself). A key inside the root
protects nothing, and is refused (exit 2).`,
		Example: `  lockledger keygen --name ops-ledger -o /etc/lockledger/signing.key > ops-ledger.vkey
  LOCKLEDGER_SIGNING_KEY=/etc/lockledger/signing.key lockledger checkpoint`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runKeygen(o) },
	}
	cmd.Flags().StringVar(&o.name, "name", "", "the key's name, shown on every signature (no spaces, no '+')")
	cmd.Flags().StringVarP(&o.out, "output", "o", "", "file to write the signer key to (must not exist)")
	return cmd
}

func runKeygen(o *keygenOptions) error {
	if o.name == "" || !checkpoint.ValidKeyName(o.name) {
		return events.Invalid("--name", o.name, "must be non-empty, without spaces or '+'")
	}
	if o.out == "" {
		return events.Invalid("-o", o.out, "is required: the file to write the signer key to")
	}
	if insideRoot(o.g.root, o.out) {
		return keyInRoot("-o", o.out, o.g.root)
	}
	vkey, err := writeKey(o)
	if errors.Is(err, fs.ErrExist) {
		return events.Invalid("-o", o.out, "already exists: keygen never overwrites a key")
	}
	if err != nil {
		return err
	}
	if o.g.json {
		writeJSON(o.g.io.Out, map[string]string{"name": o.name, "verifier_key": vkey, "signer_key_file": o.out})
		return nil
	}
	fmt.Fprintln(o.g.io.Out, vkey)
	return nil
}

// writeKey makes a key, writes its signer key to a new file at o.out and
// returns its verifier key.
func writeKey(o *keygenOptions) (string, error) {
	f, err := o.g.createOutput("-o", o.out, outfile.NoReplace())
	if err != nil {
		return "", err
	}
	defer f.Abort()
	skey, vkey, err := checkpoint.GenerateKey(o.name)
	if err != nil {
		return "", err
	}
	if _, err := io.WriteString(f, skey+"\n"); err != nil {
		return "", err
	}
	return vkey, o.g.commitOutput("-o", f)
}

// --- checkpoint ---

func newCheckpoint(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "Sign a checkpoint of the whole log now, store it and copy it to every --witness",
		Long: `Sign a C2SP tlog-checkpoint of the event log as it stands: origin
lockledger/<ledger id>, the number of events, the RFC 6962 Merkle root of
their leaves, and the signing time, signed as a note with the key of
--signing-key or LOCKLEDGER_SIGNING_KEY. It is stored in the ledger
(table checkpoints), appended to each --witness and sent to each
--witness-url to be cosigned; the signed note is printed.

Writers with a key sign checkpoints on their own too (--checkpoint-every,
--checkpoint-interval); run this from cron to cover idle periods, or
before handing an export to an auditor. Exit 1 when a witness cannot be
written, or a --witness-url witness does not cosign (the checkpoint is
stored in the ledger all the same).`,
		Example: `  lockledger checkpoint --signing-key /etc/lockledger/signing.key --witness /mnt/audit/ledger.checkpoints`,
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runCheckpoint(cmd.Context(), g) },
	}
	return cmd
}

func runCheckpoint(ctx context.Context, g *globals) error {
	if g.sign.key == "" && !g.trusting() {
		return events.Invalid("--signing-key", "", "is required to sign a checkpoint with --unsigned (or LOCKLEDGER_SIGNING_KEY)")
	}
	l, err := g.open(ctx, rewrites)
	if err != nil {
		return err
	}
	defer g.finish(l)
	cp, err := l.Checkpoint(ctx)
	if cp != nil {
		if g.json {
			writeJSON(g.io.Out, cp)
		} else {
			fmt.Fprint(g.io.Out, cp.Note)
		}
	}
	if err != nil && cp != nil && g.json {
		g.sayError(err.Error(), "exit_code", ExitFailure)
		return &ExitError{Code: ExitFailure}
	}
	return err
}
