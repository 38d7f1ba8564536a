package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
)

// What a writer takes from the trust store by default, for the command
// line and the Go API alike (ledger.Open applies it): the key it signs with
// (DefaultKey) and the check of the root's pins against the ledger it
// opened (CheckPin).

// GroupKeyPath is where a group root's shared signing key lives: beside
// the root, <dir of ROOT>/.<base of ROOT>.signing.key, mode 0640 with the
// root's group: the group's writers read it, only its owner writes it,
// and whoever can write ROOT cannot replace it.
func GroupKeyPath(root string) string {
	r := Resolve(root)
	return filepath.Join(filepath.Dir(r), "."+filepath.Base(r)+".signing.key")
}

// GroupRoot reports whether root is a group root, and its group: group
// when given (the root is made one), else the root's own group when its
// mode is a group root's (lockfile.GroupMode).
func GroupRoot(root string, group *int) (gid int, ok bool) {
	if group != nil {
		return *group, true
	}
	var st unix.Stat_t
	if err := unix.Stat(Resolve(root), &st); err != nil {
		return 0, false
	}
	return int(st.Gid), lockfile.GroupMode(uint32(st.Mode))
}

// rootOwner is the uid owning the root, -1 when it cannot be read (a root
// not made yet).
func rootOwner(root string) int {
	var st unix.Stat_t
	if err := unix.Stat(Resolve(root), &st); err != nil {
		return -1
	}
	return int(st.Uid)
}

// DefaultKey is the key a writer at root signs with when none was given:
// the group's shared key for a group root (see GroupRoot), else the
// store's, made on first use. Making one is logged at Info, a group key
// in a directory others can write at Warn.
func (s *Store) DefaultKey(root string, group *int, log *slog.Logger) (*Key, error) {
	gid, isGroup := GroupRoot(root, group)
	var k *Key
	var created bool
	var err error
	if isGroup {
		path := GroupKeyPath(root)
		if err = lockfile.MkdirReachable(filepath.Dir(path)); err == nil {
			k, created, err = LoadOrCreateKey(path, KeyName(), 0o640, gid, rootOwner(root))
		}
		var st unix.Stat_t
		if err == nil && unix.Stat(filepath.Dir(path), &st) == nil && st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
			log.Warn("the group's signing key lies in a directory others can write: any of them can replace it; keep it in one only its owner writes (or sticky)",
				"file", path, "mode", fmt.Sprintf("%04o", st.Mode&0o7777))
		}
		if err != nil && !errors.Is(err, events.ErrInvalid) {
			// Invalid input, not a root others can write: nothing here is
			// another user's, the caller only cannot make the key.
			return nil, events.Invalid("--root", Resolve(root), fmt.Sprintf("is a group root whose signing key cannot be read or created at %s (%s): "+
				"have the member or administrator who should own it run `lockledger keygen --name NAME -o %s` and `chgrp GROUP %s; chmod 0640 %s`, "+
				"or write without signing (--unsigned)", path, errText(err), path, path, path))
		}
	} else {
		k, created, err = s.Key()
	}
	if err != nil {
		return nil, err
	}
	switch {
	case created && isGroup:
		// Not this user's: whoever reads the log of a group root's first
		// write (an administrator's init) is told whose key it is.
		log.Info("made the group's signing key, beside the group root: every member's writes there sign with it", "file", k.Path, "verifier_key", k.Verifier)
	case created:
		log.Info("made a signing key for this user's checkpoints (kept outside every root)", "file", k.Path, "verifier_key", k.Verifier)
	}
	return k, nil
}

// ReadDefaultKey is the key DefaultKey signs with at root (the group's
// for a group root, else the store's), read and checked as DefaultKey
// reads it but never made: nil and no error when there is none yet. path
// is its file; group reports whether it is a group root's.
func (s *Store) ReadDefaultKey(root string) (k *Key, path string, group bool, err error) {
	gid, group := GroupRoot(root, nil)
	if group {
		path = GroupKeyPath(root)
		k, err = readKey(path, 0o640, gid, []int{rootOwner(root)})
	} else {
		path = s.KeyPath()
		k, err = readKey(path, 0o600, -1, nil)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, path, group, nil
	}
	return k, path, group, err
}

// PinError: the trust store pins another ledger at this root.
type PinError struct {
	// Found is "" when the root holds no ledger yet: the open refused
	// to start one.
	Root, Pinned, Found, File string
}

func (e *PinError) Error() string {
	if e.Found == "" {
		return fmt.Sprintf("refusing to write: %s holds no ledger, but %s pins ledger %s there: refusing to start a new ledger in its place "+
			"(nothing was created); if the pinned ledger is gone for good, `lockledger trust forget` then write again",
			e.Root, e.File, e.Pinned)
	}
	return fmt.Sprintf("refusing to write: %s holds ledger %s, but %s pins ledger %s there: the ledger was swapped or replaced; "+
		"if that was meant, `lockledger trust forget` then write again (or `lockledger trust pin --ledger-id %s --verifier-key KEY`)",
		e.Root, e.Found, e.File, e.Pinned, e.Found)
}

// ErrPinned: see PinError.
var ErrPinned = errors.New("another ledger is pinned at this root")

func (e *PinError) Is(target error) bool { return target == ErrPinned }

// NotPinnedError: a write that needs the ledger's own key (a prune) found
// the key it signs with not pinned for the ledger at the root.
type NotPinnedError struct {
	Root, LedgerID, Verifier, File string
}

func (e *NotPinnedError) Error() string {
	return fmt.Sprintf("signing key %s is not pinned for ledger %s at %s in %s", e.Verifier, e.LedgerID, e.Root, e.File)
}

// ErrNotPinned: see NotPinnedError.
var ErrNotPinned = errors.New("the signing key is not pinned for this ledger")

func (e *NotPinnedError) Is(target error) bool { return target == ErrNotPinned }

// Pinned is a pin a writer's check added: the ledger trusted on first use
// at its root, or another signing key pinned for a ledger pinned there
// already.
type Pinned struct {
	Pin
	File    string // known_ledgers
	Another bool   // the ledger was pinned at the root already, with another key
	// Copies are the other roots the store pins the same ledger at: the
	// root is a copy of one of them, or they of it; or, Shared, roots of
	// the one database the ledger is kept in.
	Copies []string
	Shared bool // the ledger is a database that many roots write (PostgreSQL), not a file of the root
}

// Lines are what a writer says of the pin, once: trust on first use is a
// security event, said even where other messages are not.
func (p *Pinned) Lines() []string {
	if p.Another {
		return []string{fmt.Sprintf("ledger %s at %s: pinned another signing key in %s: %s", p.LedgerID, p.Root, p.File, p.Verifier)}
	}
	out := []string{fmt.Sprintf("trusting ledger %s at %s on first use: pinned in %s with key %s", p.LedgerID, p.Root, p.File, p.Verifier)}
	switch {
	case len(p.Copies) > 0 && p.Shared:
		out = append(out, fmt.Sprintf("ledger %s is pinned at %s too: both roots write the one database it is kept in; each keeps its own signed head, and neither is checked against the other", p.LedgerID, p.Copies[0]))
	case len(p.Copies) > 0:
		out = append(out, fmt.Sprintf("ledger %s is pinned at %s too: this root is a copy of it (or it of this one); each keeps its own signed head, and neither is checked against the other", p.LedgerID, p.Copies[0]))
	}
	return out
}

// CheckPin checks ledger id, opened at root by a writer signing with
// verifier, against the store's pins of the root: another ledger pinned
// there is a *PinError; none pins this one with this key on first use,
// returned (nil when the pin was there). With firstUse false nothing is
// pinned: a key not pinned for the ledger is a *NotPinnedError.
func (s *Store) CheckPin(root, id, verifier string, firstUse bool) (*Pinned, error) {
	r := Resolve(root)
	pins, err := s.PinsOf(r)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.PinsPath(), err)
	}
	same, have := false, false
	var other string
	for _, p := range pins {
		switch {
		case p.LedgerID != id:
			other = p.LedgerID
		case p.Verifier == verifier:
			same, have = true, true
		default:
			same = true
		}
	}
	switch {
	case have:
		return nil, nil
	case !firstUse:
		return nil, &NotPinnedError{Root: r, LedgerID: id, Verifier: verifier, File: s.PinsPath()}
	case other != "" && !same:
		return nil, &PinError{Root: r, Pinned: other, Found: id, File: s.PinsPath()}
	}
	p := &Pinned{Pin: Pin{Root: r, LedgerID: id, Verifier: verifier}, File: s.PinsPath(), Another: same}
	added, err := s.Add(p.Pin)
	if err != nil {
		return nil, fmt.Errorf("pinning the ledger in %s: %w", s.PinsPath(), err)
	}
	if !added {
		return nil, nil // another process pinned it meanwhile, and said so
	}
	if !same {
		if all, err := s.Pins(); err == nil {
			for _, o := range all {
				if o.LedgerID == id && o.Root != r {
					p.Copies = append(p.Copies, o.Root)
				}
			}
		}
	}
	return p, nil
}
