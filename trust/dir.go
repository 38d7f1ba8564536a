// Package trust is the user's trust store, kept outside every root: the
// key that signs the user's checkpoints (signing.key), the ledgers the
// user trusts at each root (known_ledgers, like ssh's known_hosts) and
// the latest signed head of each ledger (heads/, a local witness).
// Whoever can write a root cannot write the trust store, so a ledger cut,
// re-chained or swapped in the root no longer matches what it holds.
package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
)

// EnvDir names the trust store's directory, before the defaults.
const EnvDir = "LOCKLEDGER_TRUST_DIR"

// Store is an opened trust store: a directory this user owns that no one
// else can write, outside the root it serves.
type Store struct {
	dir string
}

// Dir is where the trust store lives: $LOCKLEDGER_TRUST_DIR, else
// $XDG_CONFIG_HOME/lockledger, else ~/.config/lockledger (the home from
// $HOME, else the user database).
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "lockledger"), nil
	}
	home := os.Getenv("HOME")
	if home == "" {
		u, err := user.LookupId(fmt.Sprint(os.Geteuid()))
		if err != nil || u.HomeDir == "" {
			return "", events.Invalid(EnvDir, "", "must be set: there is no $HOME and no home directory for this user to keep the trust store in")
		}
		home = u.HomeDir
	}
	return filepath.Join(home, ".config", "lockledger"), nil
}

// Open opens (creating it, mode 0700) the trust store at dir for the
// ledger at root. It refuses (events.Invalid, exit 2) a directory inside
// root, a symlink, one another user owns or others can write: each would
// let whoever can rewrite the ledger rewrite what vouches for it.
func Open(dir, root string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, events.Invalid(EnvDir, dir, err.Error())
	}
	if Within(root, abs) {
		return nil, refuse(abs, fmt.Sprintf("is inside the root %s: whoever can rewrite the ledger could rewrite what vouches for it; set %s to a directory outside it", Resolve(root), EnvDir))
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, refuse(abs, cannotCreate(err))
	}
	if err := os.Mkdir(abs, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, refuse(abs, cannotCreate(err))
	}
	if err := ownDir(abs); err != nil {
		return nil, err
	}
	s := &Store{dir: abs}
	if err := os.Mkdir(s.HeadsDir(), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, refuse(s.HeadsDir(), "cannot be created: "+errText(err))
	}
	if err := ownDir(s.HeadsDir()); err != nil { // the heads are what a rollback is checked against
		return nil, err
	}
	return s, nil
}

// ownDir refuses a directory of the store that is a symlink, another
// user's or writable by others.
func ownDir(path string) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return refuse(path, "cannot be read: "+errText(err))
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return refuse(path, "is a symlink: the trust store must be a directory of its own, never followed")
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return refuse(path, "is not a directory")
	case int(st.Uid) != os.Geteuid():
		return refuse(path, fmt.Sprintf("is owned by uid %d, not by this user (uid %d): only its owner may keep a trust store in it", st.Uid, os.Geteuid()))
	case st.Mode&0o022 != 0:
		return refuse(path, fmt.Sprintf("has mode %04o: others can write it; chmod go-w it (0700)", st.Mode&0o7777))
	}
	return nil
}

// cannotCreate is the rule of a trust directory that could not be made
// (a HOME this user cannot write, such as sudo keeping another's).
func cannotCreate(err error) string {
	return fmt.Sprintf("cannot be created: %s; set %s to a directory of this user's, outside every root", errText(err), EnvDir)
}

func refuse(path, rule string) error {
	return events.Invalid("trust directory", path, rule)
}

// Path is the trust store's directory.
func (s *Store) Path() string { return s.dir }

// HeadsDir is the local witness: the latest signed head of each ledger.
func (s *Store) HeadsDir() string { return filepath.Join(s.dir, "heads") }

// Resolve is path as it will name its file or directory once that exists:
// absolute, its nearest existing directory with symlinks resolved and the
// rest of it below that. It is the name the trust store pins a root under,
// and how paths are compared with a root, made yet or not.
func Resolve(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	rest := ""
	for dir := abs; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		if filepath.Dir(dir) == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// Within reports whether path is root or below it, symlinks resolved.
func Within(root, path string) bool {
	rel, err := filepath.Rel(Resolve(root), Resolve(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
