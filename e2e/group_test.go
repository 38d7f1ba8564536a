package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestGroupSharedRoot: a root created with --group is used by two users of
// the group, each creating files there (the ledger, lock files, SQLite's
// -wal and -shm) that the other can write, whatever their umask; a user
// outside the group cannot read it.
func TestGroupSharedRoot(t *testing.T) {
	t.Parallel()
	team := newTeamRoot(t)
	root := team.root
	// A strict umask: the group's modes must not depend on it.
	as := func(uid int, umask string, args ...string) clitest.Result {
		t.Helper()
		return team.run(asUser{uid: uid, umask: umask}, args...)
	}
	must := func(uid int, args ...string) string {
		t.Helper()
		return team.must(asUser{uid: uid, umask: "077"}, args...)
	}

	ridA := must(aliceUID, "--group", strconv.Itoa(teamGID), "acquire", "deploy")
	// Bob names no group: the root's mode says it is shared.
	must(bobUID, "acquire", "migrate")
	if st := must(bobUID, "status", "deploy"); !strings.Contains(st, "held") {
		t.Fatalf("bob's status of alice's lock: %s", st)
	}
	must(aliceUID, "release", "migrate", "--force", "--yes", "--reason", "cleanup")
	must(bobUID, "acquire", "migrate")
	must(aliceUID, "release", "deploy", "--request-id", ridA)
	if out := must(aliceUID, "verify"); out == "" {
		t.Fatal("verify printed nothing")
	}

	checkMode := func(p string, want fs.FileMode) {
		t.Helper()
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		got := fi.Mode() & (fs.ModePerm | fs.ModeSetgid)
		if got != want || st.Gid != teamGID {
			t.Errorf("%s: mode %v group %d, want %v group %d", p, got, st.Gid, want, teamGID)
		}
	}
	checkMode(root, 0o770|fs.ModeSetgid)
	checkMode(filepath.Join(root, "locks"), 0o770|fs.ModeSetgid)
	for _, f := range []string{"ledger.db", "ledger.db-wal", "ledger.db-shm", "writer.flock", "locks/migrate.lock"} {
		checkMode(filepath.Join(root, f), 0o660)
	}
	// The group's writers sign with one key beside the root, made by the
	// first writer and only hers to replace; each member pins the ledger in
	// a trust store of their own, and checks the others' signatures with it.
	key := filepath.Join(filepath.Dir(root), ".locks-root.signing.key")
	checkMode(key, 0o640)
	if fi, err := os.Lstat(key); err != nil || fi.Sys().(*syscall.Stat_t).Uid != aliceUID {
		t.Errorf("the group's key %s is not alice's: %v", key, err)
	}
	if out := must(bobUID, "verify"); !strings.Contains(out, "verify: OK") || !strings.Contains(out, "match checkpoint") {
		t.Errorf("bob's verify of the group root:\n%s", out)
	}

	// Outside the group: nothing to read, nothing to write.
	if r := as(eveUID, "022", "status", "migrate"); r.Code == 0 {
		t.Errorf("uid %d outside the group read the root: %s", eveUID, r.Stdout)
	}
	if r := as(eveUID, "022", "acquire", "other"); r.Code == 0 {
		t.Errorf("uid %d outside the group acquired a lock", eveUID)
	}
}

// TestGroupOnlyAtCreation: --group does not turn a private root with a
// ledger into a shared one (exit 2, naming --group, nothing changed), and a
// private root stays private.
func TestGroupOnlyAtCreation(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "r")
	clitest.Must(t, 0, root, "acquire", "a")
	r := clitest.Must(t, 2, root, "--group", strconv.Itoa(os.Getegid()), "acquire", "b")
	if !strings.Contains(r.Stderr, "--group") {
		t.Fatalf("message does not name --group: %s", r.Stderr)
	}
	for _, f := range []string{"", "locks", "ledger.db", "writer.flock", "locks/a.lock"} {
		fi, err := os.Lstat(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&(0o077|fs.ModeSetgid) != 0 {
			t.Errorf("%s: mode %v, want private", filepath.Join(root, f), fi.Mode())
		}
	}
	r = clitest.Must(t, 2, filepath.Join(t.TempDir(), "r"), "--group", "no-such-group-here", "acquire", "b")
	if !strings.Contains(r.Stderr, "--group") {
		t.Fatalf("message does not name --group: %s", r.Stderr)
	}
}

// TestTrustShowAtAGroupRootNamesTheGroupsKey: at a group root, trust show
// names the key the members' writes sign with there, the group's beside
// the root, so that the README's hand-over to an auditor (trust show's
// verifier key, an export and a checkpoint, then verify --file) passes.
// It named the member's own key, which signs nothing at that root, and
// the auditor's verify failed on every checkpoint ("not vouched for").
func TestTrustShowAtAGroupRootNamesTheGroupsKey(t *testing.T) {
	t.Parallel()
	team := newTeamRoot(t)
	alice, bob := asUser{uid: aliceUID}, asUser{uid: bobUID}
	team.must(alice, "--group", strconv.Itoa(teamGID), "acquire", "deploy")
	team.must(bob, "run", "migrate", "--", "true")
	// Bob has a key of his own too, as any user who wrote a private root.
	own := t.TempDir()
	if err := os.Chown(own, bobUID, bobUID); err != nil {
		t.Fatal(err)
	}
	team.must(bob, "--root", filepath.Join(own, "root"), "init")

	var shown struct {
		KeyFile     string `json:"key_file"`
		VerifierKey string `json:"verifier_key"`
		GroupKey    bool   `json:"group_key"`
		Pins        []struct {
			Verifier string `json:"verifier_key"`
		} `json:"pins"`
	}
	if err := json.Unmarshal([]byte(team.must(bob, "trust", "show", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	groupKey := filepath.Join(filepath.Dir(team.root), ".locks-root.signing.key")
	if shown.KeyFile != groupKey || !shown.GroupKey || len(shown.Pins) != 1 || shown.VerifierKey != shown.Pins[0].Verifier {
		t.Fatalf("bob's trust show at the group root: %+v; want key_file %s, group_key true, the verifier key the ledger is pinned with", shown, groupKey)
	}
	if text := team.must(bob, "trust", "show"); !strings.Contains(text, groupKey+" (the group's") {
		t.Errorf("trust show does not say the key is the group's:\n%s", text)
	}
	// Someone outside the group cannot read the group's key: trust show
	// still shows the rest, and says so of the key.
	var eves struct {
		KeyFile  string `json:"key_file"`
		GroupKey bool   `json:"group_key"`
		KeyError string `json:"key_error"`
	}
	if err := json.Unmarshal([]byte(team.must(asUser{uid: eveUID}, "trust", "show", "--json")), &eves); err != nil ||
		eves.KeyFile != groupKey || !eves.GroupKey || !strings.Contains(eves.KeyError, "permission denied") {
		t.Errorf("trust show outside the group: %+v (%v)", eves, err)
	}

	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	handOver := map[string]string{
		"head.checkpoint": team.must(bob, "checkpoint") + "\n",
		"audit.jsonl":     team.must(bob, "export") + "\n",
	}
	for name, text := range handOver {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out := team.must(bob, "verify", "--file", filepath.Join(dir, "audit.jsonl"), "--verifier-key", shown.VerifierKey,
		"--checkpoint", filepath.Join(dir, "head.checkpoint")); !strings.HasPrefix(out, "verify: OK") {
		t.Errorf("the auditor's verify with trust show's key:\n%s", out)
	}
}

// TestGroupRefusedLeavesNothingAndSaysWhy: a --group that the root refuses
// (exit 2, naming --group) is refused before anything is made: no group
// signing key beside a private root (one was made, then the open refused
// the group), and of a group root of another group it says which, where it
// said the group's key "has group G, not the root's group: remove it and
// write again", advice that would delete the group's key. init is held to
// it too (it said "already in ...; nothing written", exit 0), and a user
// outside the group is told so before the kernel refuses a chgrp.
func TestGroupRefusedLeavesNothingAndSaysWhy(t *testing.T) {
	t.Parallel()
	team := newTeamRoot(t)
	alice, eve := asUser{uid: aliceUID}, asUser{uid: eveUID}
	team.must(alice, "--group", strconv.Itoa(teamGID), "acquire", "deploy")
	groupKey := filepath.Join(filepath.Dir(team.root), ".locks-root.signing.key")
	keyBefore, err := os.ReadFile(groupKey)
	if err != nil {
		t.Fatal(err)
	}

	// A private root of alice's, with a ledger, beside the team's.
	private := filepath.Join(team.home, "private")
	team.must(alice, "--root", private, "acquire", "own")
	ownGID := strconv.Itoa(aliceUID) // her primary group has her uid's number
	sticky := t.TempDir()            // where eve may make a root of her own
	if err := os.Chmod(sticky, 0o1777); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		u    asUser
		args []string
		want string
	}{
		{"a private root", alice, []string{"--root", private, "--group", strconv.Itoa(teamGID), "acquire", "x"}, "already holds files and is not a group root of that group"},
		{"init of a private root", alice, []string{"--root", private, "--group", strconv.Itoa(teamGID), "init"}, "already holds files and is not a group root of that group"},
		{"a group root of another group", alice, []string{"--group", ownGID, "acquire", "x"}, "is a group root of group " + strconv.Itoa(teamGID) + " already"},
		{"init of a group root of another group", alice, []string{"--group", ownGID, "init"}, "is a group root of group " + strconv.Itoa(teamGID) + " already"},
		{"a group the user is not in", eve, []string{"--root", filepath.Join(sticky, "new"), "--group", strconv.Itoa(teamGID), "init"}, "is not a member of group " + strconv.Itoa(teamGID)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := team.run(tc.u, tc.args...)
			if r.Code != 2 || !strings.Contains(r.Stderr, "lockledger: --group ") || !strings.Contains(r.Stderr, tc.want) || strings.Contains(r.Stderr, "remove it") {
				t.Errorf("exit %d, stderr %q; want exit 2 naming --group and %q", r.Code, r.Stderr, tc.want)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(team.home, ".private.signing.key")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused --group made a group key beside the private root: %v", err)
	}
	if names := dirNames(t, sticky); names != "" {
		t.Errorf("eve's refused init left [%s]", names)
	}
	if b, err := os.ReadFile(groupKey); err != nil || !bytes.Equal(b, keyBefore) {
		t.Errorf("the team's key changed: %v", err)
	}
	if out := team.must(alice, "verify"); !strings.Contains(out, "verify: OK") {
		t.Errorf("verify of the team's root:\n%s", out)
	}
}

// TestAnotherUsersPrivateRootIsNamedWhenItCannotBeRead: a user whose
// LOCKLEDGER_ROOT names another user's private root reads nothing (exit
// 1) and is told whose root it is and what a shared root is; the message
// was "ledger: lstat ROOT/ledger.db: permission denied".
func TestAnotherUsersPrivateRootIsNamedWhenItCannotBeRead(t *testing.T) {
	t.Parallel()
	team := newTeamRoot(t)
	alice, bob := asUser{uid: aliceUID}, asUser{uid: bobUID}
	private := filepath.Join(team.home, "private")
	team.must(alice, "--root", private, "acquire", "deploy")
	for _, args := range [][]string{{"status", "deploy"}, {"list"}, {"verify"}, {"history", "deploy"}} {
		r := team.run(bob, append([]string{"--root", private}, args...)...)
		if r.Code != 1 || !strings.Contains(r.Stderr, private+" is owned by ") || !strings.Contains(r.Stderr, "mode 0700: ") ||
			!strings.Contains(r.Stderr, "(uid "+strconv.Itoa(bobUID)+") cannot read it") || !strings.Contains(r.Stderr, "a root several users share is a group root") {
			t.Errorf("bob's %v of alice's private root: exit %d, stderr %q", args, r.Code, r.Stderr)
		}
	}
}

// TestOutsiderAtAGroupRootIsToldItIsNotInTheGroup: a user outside a group
// root's group (LOCKLEDGER_ROOT in /etc/environment names it for every
// user) is told that the root is a group root of a group they are not in,
// and how to join it. A write said the group's key "cannot be read or
// created" and advised making one with keygen or writing --unsigned; with
// --unsigned it said "lstat ROOT/writer.flock: permission denied"; a read
// advised making the root a group root. The team's gid has no name here,
// as after a groupdel: that is said instead of usermod.
func TestOutsiderAtAGroupRootIsToldItIsNotInTheGroup(t *testing.T) {
	t.Parallel()
	team := newTeamRoot(t)
	team.must(asUser{uid: aliceUID}, "--group", strconv.Itoa(teamGID), "acquire", "deploy")
	want := team.root + `": is a group root of gid ` + strconv.Itoa(teamGID) + ", a group with no name here (deleted with groupdel?), which "
	notIn := "(uid " + strconv.Itoa(eveUID) + ") is not in: only its members (and root) use it; make the group again with that gid"
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"acquire", "x"}, 2, "lockledger: --root \"" + want},
		{[]string{"--unsigned", "acquire", "x"}, 2, "lockledger: --root \"" + want},
		{[]string{"run", "x", "--", "true"}, 2, "lockledger: --root \"" + want},
		{[]string{"list"}, 1, strings.Replace(want, `": is`, " is", 1)},
		{[]string{"status", "deploy"}, 1, strings.Replace(want, `": is`, " is", 1)},
	} {
		r := team.run(asUser{uid: eveUID}, tc.args...)
		if r.Code != tc.code || !strings.Contains(r.Stderr, tc.want) || !strings.Contains(r.Stderr, notIn) || strings.Contains(r.Stderr, "keygen") ||
			strings.Contains(r.Stderr, "writer.flock") || strings.Contains(r.Stderr, "--group GROUP init") {
			t.Errorf("eve's %v at the team's root: exit %d, stderr %q; want exit %d, %q and %q", tc.args, r.Code, r.Stderr, tc.code, tc.want, notIn)
		}
	}
	if out := team.must(asUser{uid: aliceUID}, "verify"); !strings.Contains(out, "verify: OK") {
		t.Errorf("verify of the team's root:\n%s", out)
	}
}

// TestMakingTheGroupsKeySaysItIsTheGroups: the first write at a group root
// makes the group's signing key beside it, and its log line says so; it
// said "made a signing key for this user's checkpoints", of a key every
// member signs with, on the administrator's init of the systemd set-up.
func TestMakingTheGroupsKeySaysItIsTheGroups(t *testing.T) {
	t.Parallel()
	team := newTeamRoot(t)
	r := team.run(asUser{uid: aliceUID}, "--group", strconv.Itoa(teamGID), "init")
	groupKey := filepath.Join(filepath.Dir(team.root), ".locks-root.signing.key")
	if r.Code != 0 || !strings.Contains(r.Stderr, "made the group's signing key") || !strings.Contains(r.Stderr, groupKey) || strings.Contains(r.Stderr, "this user's") {
		t.Errorf("the group root's first write: exit %d, stderr %q; want it to say it made the group's key %s", r.Code, r.Stderr, groupKey)
	}
	// A member's own key, made at a private root, is still this user's.
	own := filepath.Join(team.home, "private")
	if r := team.run(asUser{uid: aliceUID}, "--root", own, "init"); r.Code != 0 || !strings.Contains(r.Stderr, "made a signing key for this user's checkpoints") {
		t.Errorf("a private root's first write: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// TestTrustShowAtAGroupRootWithNoKeyYet: at a group root prepared by hand
// (mkdir, chgrp, chmod 2770), before any write, trust show says the key
// to come is the group's and where it will be; it said "none yet (made by
// the first signed write)", as of the member's own key.
func TestTrustShowAtAGroupRootWithNoKeyYet(t *testing.T) {
	t.Parallel()
	team := newTeamRoot(t)
	if err := os.MkdirAll(team.root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(team.root), team.root} {
		if err := os.Chown(d, aliceUID, teamGID); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(team.root, os.ModeSetgid|0o770); err != nil {
		t.Fatal(err)
	}
	groupKey := filepath.Join(filepath.Dir(team.root), ".locks-root.signing.key")
	if out := team.must(asUser{uid: bobUID}, "trust", "show"); !strings.Contains(out, "signing key  none yet: the group's (the root is a group root), made at "+groupKey) {
		t.Errorf("bob's trust show at a group root with no key yet:\n%s", out)
	}
}
