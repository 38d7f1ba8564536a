package cli

import (
	"errors"
	"fmt"
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
