package trust

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
)

// PinsFile holds the pins, one a line: root, ledger id, verifier key.
const PinsFile = "known_ledgers"

// Pin says that the ledger at Root is LedgerID, signed by Verifier.
type Pin struct {
	Root     string `json:"root"`
	LedgerID string `json:"ledger_id"`
	Verifier string `json:"verifier_key"`
}

// Line is the pin as known_ledgers holds it: the root escaped so that no
// path can split or forge a line.
func (p Pin) Line() string {
	return EscapePath(p.Root) + " " + p.LedgerID + " " + p.Verifier
}

// ParsePin reads a line of known_ledgers (or of trust export).
func ParsePin(line string) (Pin, error) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return Pin{}, fmt.Errorf("a pin is ROOT LEDGER_ID VERIFIER_KEY, got %d fields", len(f))
	}
	root, err := url.PathUnescape(f[0]) // EscapePath's %XX
	if err != nil {
		return Pin{}, fmt.Errorf("root %q: %w", f[0], err)
	}
	p := Pin{Root: root, LedgerID: f[1], Verifier: f[2]}
	return p, p.Valid()
}

// Valid checks a pin's fields.
func (p Pin) Valid() error {
	if !filepath.IsAbs(p.Root) {
		return events.Invalid("root", p.Root, "must be an absolute path")
	}
	if !ValidLedgerID(p.LedgerID) {
		return events.Invalid("ledger id", p.LedgerID, "must be 1-128 of A-Z a-z 0-9 _ . : -")
	}
	if _, err := checkpoint.NewVerifier(p.Verifier); err != nil {
		return events.Invalid("verifier key", p.Verifier, err.Error())
	}
	return nil
}

// EscapePath writes every byte that is not printable ASCII, and '%', as %XX
// (url.PathUnescape undoes it).
func EscapePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c <= ' ' || c >= 0x7f || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// PinsPath is the known_ledgers file.
func (s *Store) PinsPath() string { return filepath.Join(s.dir, PinsFile) }

// Pins are every pin of the store, in file order; lines that are not pins
// (comments, damage) are skipped.
func (s *Store) Pins() ([]Pin, error) {
	f, err := openOwn(s.PinsPath(), os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Pin
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if p, err := ParsePin(line); err == nil {
			out = append(out, p)
		}
	}
	return out, sc.Err()
}

// PinsOf are the pins of the root at root (resolved).
func (s *Store) PinsOf(root string) ([]Pin, error) {
	all, err := s.Pins()
	if err != nil {
		return nil, err
	}
	r := Resolve(root)
	var out []Pin
	for _, p := range all {
		if p.Root == r {
			out = append(out, p)
		}
	}
	return out, nil
}

// Add appends p unless the same pin is there, under the file's lock, so
// concurrent writers never lose or tear a line. It reports whether it
// added it.
func (s *Store) Add(p Pin) (bool, error) {
	if err := p.Valid(); err != nil {
		return false, err
	}
	unlock, err := lockFile(s.PinsPath() + ".lock")
	if err != nil {
		return false, err
	}
	defer unlock()
	have, err := s.Pins()
	if err != nil {
		return false, err
	}
	if slices.Contains(have, p) {
		return false, nil
	}
	f, err := openOwn(s.PinsPath(), os.O_RDWR|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return false, err
	}
	line, size, err := appendLine(f, p.Line())
	if err != nil {
		f.Close()
		return false, err
	}
	if err := lockfile.AppendWhole(f, size, line); err != nil {
		f.Close()
		return false, err
	}
	return true, lockfile.SyncClose(f)
}

// appendLine is line as it is appended to f: after a newline where f's
// last line has none (a line torn by a crash, or by an older release on a
// full disk), so that the pin does not run on from it and go unread; and
// f's size before it.
func appendLine(f *os.File, line string) (string, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
			return "", 0, err
		}
		if last[0] != '\n' {
			line = "\n" + line
		}
	}
	return line + "\n", fi.Size(), nil
}

// Forget removes every pin of root (resolved) for which keep is false,
// rewriting known_ledgers aside and renaming it into place under its lock;
// it returns the pins removed.
func (s *Store) Forget(root string, drop func(Pin) bool) ([]Pin, error) {
	unlock, err := lockFile(s.PinsPath() + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	b, err := readAll(openOwn(s.PinsPath(), os.O_RDONLY))
	if err != nil || b == nil {
		return nil, err
	}
	r := Resolve(root)
	var kept strings.Builder
	var gone []Pin
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if p, err := ParsePin(strings.TrimSpace(line)); err == nil && p.Root == r && drop(p) {
			gone = append(gone, p)
			continue
		}
		kept.WriteString(line)
	}
	if len(gone) == 0 {
		return nil, nil
	}
	return gone, replaceFile(s.PinsPath(), []byte(kept.String()))
}

// replaceFile puts b at path: written aside in the same directory,
// fsynced, renamed into place, the directory fsynced.
func replaceFile(path string, b []byte) error {
	tmp, err := writeAside(path, b, nil)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return lockfile.SyncDir(filepath.Dir(path))
}

// writeAside writes b to a new file (0600, CreateTemp's mode) beside
// path, after prepare (when not nil) has had the open file, and fsyncs
// it; it returns the file's name. The caller removes it.
func writeAside(path string, b []byte, prepare func(*os.File) error) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", err
	}
	if prepare != nil {
		err = prepare(f)
	}
	if err == nil {
		_, err = f.Write(b)
	}
	if err = errors.Join(err, lockfile.SyncClose(f)); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// ValidLedgerID: an id a pin can hold (lockledger makes 32 hex digits):
// 1-128 of A-Z a-z 0-9 _ . : -, a request id's characters.
func ValidLedgerID(id string) bool { return events.IsRequestID(id) }

// PinnedVerifiers are the verifier keys the store pins at root, each
// once; a pin whose key does not parse vouches for nothing and is left
// out. A host's pin of its fleet owner's key is what vouches for the
// ledger's signer events.
func (s *Store) PinnedVerifiers(root string) ([]note.Verifier, error) {
	pins, err := s.PinsOf(root)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.PinsPath(), err)
	}
	var keys []note.Verifier
	for _, p := range pins {
		v, err := checkpoint.NewVerifier(p.Verifier)
		if err == nil && !slices.ContainsFunc(keys, func(k note.Verifier) bool { return checkpoint.VerifierID(k) == checkpoint.VerifierID(v) }) {
			keys = append(keys, v)
		}
	}
	return keys, nil
}
