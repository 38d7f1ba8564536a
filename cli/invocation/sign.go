package invocation

import (
	"cmp"
	"context"
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
	"github.com/lockledger/lockledger/internal/outfile"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/trust"
	"github.com/lockledger/lockledger/witness"
)

// signFlags are the global flags of signed checkpoints.
type signFlags struct {
	Key         string   // --signing-key FILE, or LOCKLEDGER_SIGNING_KEY (a file, or the key itself)
	keyFromEnv  bool     // key came from the environment
	Witnesses   []string // --witness PATH (writers append, verify reads)
	every       string
	interval    string
	Unsigned    bool            // --unsigned, LOCKLEDGER_UNSIGNED=1
	witnessURLs witnessURLFlags // --witness-url URL=VKEY (see witnessurl.go)
}

func (f *signFlags) Register(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	f.Key = os.Getenv("LOCKLEDGER_SIGNING_KEY")
	f.keyFromEnv = f.Key != ""
	var envWitness []string
	if w := os.Getenv("LOCKLEDGER_WITNESS"); w != "" {
		envWitness = filepath.SplitList(w)
	}
	every := cmp.Or(os.Getenv("LOCKLEDGER_CHECKPOINT_EVERY"), strconv.Itoa(ledger.DefaultCheckpointEvery))
	interval := cmp.Or(os.Getenv("LOCKLEDGER_CHECKPOINT_INTERVAL"), ledger.DefaultCheckpointInterval.String())
	pf.Var(&keyFlag{f}, "signing-key", "file holding the Ed25519 key (lockledger keygen) writers sign checkpoints with; never inside the root "+
		"(env LOCKLEDGER_SIGNING_KEY: the file, or the key itself)")
	pf.StringArrayVar(&f.Witnesses, "witness", envWitness, "writers copy each checkpoint here (a directory: one file each; else appended to the file); "+
		"verify reads the checkpoints here (repeatable; env LOCKLEDGER_WITNESS, a list like PATH)")
	pf.BoolVar(&f.Unsigned, "unsigned", os.Getenv(EnvUnsigned) == "1", "write without the trust store: unsigned, the ledger not pinned, no head kept (an explicit --signing-key still signs); "+
		"nothing outside the root vouches for what is written (env "+EnvUnsigned+"=1)")
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
	return k.f.Key
}
func (k *keyFlag) Set(s string) error { k.f.Key, k.f.keyFromEnv = s, false; return nil }
func (k *keyFlag) Type() string       { return "FILE" }

// KeyInRoot is the refusal of a key or witness file named by field that
// lies inside the root.
func KeyInRoot(field, path, root string) error {
	return events.Invalid(field, path, fmt.Sprintf(
		"is inside the root %s: anyone who can write the ledger can read or replace it, so it protects nothing; keep it outside (another user, another host, a secrets store)",
		trust.Resolve(root)))
}

// signer reads the signing key, nil when none is configured.
func (g *Globals) signer() (note.Signer, string, error) {
	f := &g.Sign
	if f.Key == "" {
		return nil, "", nil
	}
	field := "--signing-key"
	if f.keyFromEnv {
		field = "LOCKLEDGER_SIGNING_KEY"
		if strings.Contains(f.Key, checkpoint.SignerKeyPrefix) {
			return signerOf(field, "(the key)", f.Key)
		}
	}
	fi, err := os.Stat(f.Key)
	if err != nil {
		// Not a file: perhaps a key typed wrong, which must not reach a log.
		return nil, "", events.Invalid(field, "(the key)", "is neither a readable key file nor a key ("+checkpoint.SignerKeyPrefix+"...): "+ErrText(err))
	}
	if trust.Within(g.Root, f.Key) {
		return nil, "", KeyInRoot(field, f.Key, g.Root)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		g.Log.Warn("the signing key file can be read by others than its owner; keep it 0600", "file", f.Key, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
	}
	b, err := readKeyFile(f.Key)
	if errors.Is(err, errTooLong) {
		return nil, "", tooLong(err, field, f.Key, keyLimit)
	} else if err != nil {
		return nil, "", events.Invalid(field, f.Key, "cannot be read: "+ErrText(err))
	}
	return signerOf(field, f.Key, string(b))
}

// readKeyFile reads a key file named on the command line: a regular file,
// opened without blocking (a FIFO there would hold the writer for ever).
func readKeyFile(path string) ([]byte, error) {
	f, _, err := outfile.OpenRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAtMost(f, keyLimit)
}

// keyLimit is the most a key file may hold: a key is a line of less than
// a hundred bytes.
const keyLimit = 4096

// signerOf reads an encoded signer key and its verifier key.
func signerOf(field, shown, key string) (note.Signer, string, error) {
	s, err := checkpoint.NewSigner(strings.TrimSpace(key))
	if err != nil {
		return nil, "", events.Invalid(field, shown, err.Error())
	}
	return s, checkpoint.VerifierKeyOf(s), nil
}

// KeyOrFile reads a key given as field: the key itself, or a file holding
// one (what the key is, for the refusal of neither), read as ReadFile
// reads, so that a signal ends the wait for a FIFO's writer. It returns
// the key's text and what parse made of it.
func KeyOrFile[K any](ctx context.Context, field, val, what string, parse func(string) (K, error)) (string, K, error) {
	if k, err := parse(val); err == nil {
		return strings.TrimSpace(val), k, nil
	}
	var none K
	b, err := readKeyArg(ctx, field, val, what)
	if err != nil {
		return "", none, err
	}
	k, err := parse(string(b))
	if err != nil {
		return "", none, events.Invalid(field, val, err.Error())
	}
	return strings.TrimSpace(string(b)), k, nil
}

// KeysOrFile is KeyOrFile for a flag whose keys are all trusted alike
// (verify's --verifier-key): a file may hold several, one a line, blank
// lines and # comments left out. A key file kept for a service then
// names the old key and the new across a key's replacement: the
// checkpoints signed before it still verify, and those signed after.
func KeysOrFile[K any](ctx context.Context, field, val, what string, parse func(string) (K, error)) ([]K, error) {
	if k, err := parse(val); err == nil {
		return []K{k}, nil
	}
	b, err := readKeyArg(ctx, field, val, what)
	if err != nil {
		return nil, err
	}
	var keys []K
	n := 0
	for line := range strings.Lines(string(b)) {
		n++
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := parse(line)
		if err != nil {
			return nil, events.Invalid(field, val, fmt.Sprintf("line %d: %v", n, err))
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, events.Invalid(field, val, "holds no key: a file holds "+what+", one a line")
	}
	return keys, nil
}

// readKeyArg reads the file val names as field's key file.
func readKeyArg(ctx context.Context, field, val, what string) ([]byte, error) {
	b, err := readPath(ctx, val, keyLimit, false)
	if err != nil {
		if errors.Is(err, errTooLong) || ctx.Err() != nil {
			// Too long, or a signal's end of the wait: neither is a
			// path that names no file.
			return nil, tooLong(err, field, val, keyLimit)
		}
		return nil, events.Invalid(field, val, "is neither "+what+" nor a file holding one")
	}
	return b, nil
}

// ErrText is err without the operation and path a *fs.PathError adds,
// for a message that names the path itself.
func ErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// signingOptions are the ledger options of a writer: its key, witnesses
// and policy. With no key given the ledger's own default applies (the
// trust store's key, its heads and its pin: ledger.WithTrustStore with
// the store opened here); an explicit key signs and is pinned in the
// trust store too, so that plain verify checks what it signs, unless
// --unsigned; --unsigned alone is ledger.Unsigned.
func (g *Globals) signingOptions() ([]ledger.Option, error) {
	var opts []ledger.Option
	if g.Trusting() {
		opts = []ledger.Option{ledger.WithTrustStoreFrom(g.TrustStore), ledger.WithPinNotice(g.pinNotice)}
	} else {
		s, _, err := g.signer()
		if err != nil || s == nil {
			if err == nil {
				_, err = g.writerCosigners(false)
			}
			return []ledger.Option{ledger.Unsigned()}, err
		}
		opts = []ledger.Option{ledger.WithSigner(s)}
		if !g.Sign.Unsigned {
			opts = append(opts, ledger.WithTrustStoreFrom(g.keyedTrustStore), ledger.WithPinNotice(g.pinNotice))
		}
	}
	more, err := g.policyOptions()
	if err != nil {
		return nil, err
	}
	cosigners, err := g.writerCosigners(true)
	if err != nil {
		return nil, err
	}
	if len(g.Sign.Witnesses) > 0 || len(cosigners) > 0 {
		more = append(more, ledger.WithWitnesses(witness.New(g.Sign.Witnesses, 0, g.Log, cosigners...)))
	}
	return append(opts, more...), nil
}

// keyedTrustStore is the trust store that pins an explicit key: one that
// cannot be opened is none, and the ledger is not pinned with the key.
func (g *Globals) keyedTrustStore() (*trust.Store, error) {
	s, err := g.TrustStore()
	if err != nil {
		g.Log.Warn("the ledger is not pinned with this key: the trust store cannot be opened", "err", err)
		return nil, nil
	}
	return s, nil
}

// CheckpointPolicy is --checkpoint-every and --checkpoint-interval.
func (g *Globals) CheckpointPolicy() (int64, time.Duration, error) {
	every, err := strconv.ParseInt(g.Sign.every, 10, 64)
	if err != nil || every < 1 {
		return 0, 0, events.Invalid("--checkpoint-every", g.Sign.every, "must be a whole number of events, at least 1")
	}
	interval, err := ParseDuration("--checkpoint-interval", g.Sign.interval)
	if err != nil {
		return 0, 0, err
	}
	if interval == 0 {
		return 0, 0, events.Invalid("--checkpoint-interval", g.Sign.interval, "must be positive")
	}
	return every, interval, nil
}

// policyOptions are a signing writer's checkpoint policy, once its
// --witness paths are checked.
func (g *Globals) policyOptions() ([]ledger.Option, error) {
	every, interval, err := g.CheckpointPolicy()
	if err != nil {
		return nil, err
	}
	for _, w := range g.Sign.Witnesses {
		if w == "" {
			return nil, events.Invalid("--witness", w, "must not be empty")
		}
		if err := WitnessOutsideRoot(g.Root, w); err != nil {
			return nil, err
		}
	}
	return []ledger.Option{ledger.WithCheckpointPolicy(every, interval)}, nil
}

// WitnessOutsideRoot refuses a --witness inside the root: whoever can
// rewrite the ledger could rewrite the witness too.
func WitnessOutsideRoot(root, w string) error {
	if !trust.Within(root, w) {
		return nil
	}
	return events.Invalid("--witness", w, fmt.Sprintf(
		"is inside the root %s: whoever can rewrite the ledger can rewrite it too, so it witnesses nothing; use another volume or host",
		trust.Resolve(root)))
}
