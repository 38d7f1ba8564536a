package ledger

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/store"
)

// loadAcquirer reads what the event that gave h the lock records of its
// acquirer (its fencing token is that event's seq): the uid of the process
// that wrote it (h.uid), the release secret's hash (h.secretSum) and
// whether the holder is a lockledger run (h.run); h.recorded says that it
// was found. It is not when the live log does not have it: a holding
// whose acquiring event a prune archived, or another tool's lock. h.uid
// stays nil then, and for a holding acquired before uids were recorded.
func (w *writeTx) loadAcquirer(h *holding) error {
	if h == nil || h.foreign || h.token <= 0 || h.recorded {
		return nil
	}
	body, err := store.EventBody(w.ctx, w.q, h.token, h.rec.RequestID)
	if err != nil || body == nil {
		return err
	}
	var env struct {
		Type      events.Type `json:"type"`
		UID       *int        `json:"uid"`
		SecretSum string      `json:"release_secret_sha256"`
		Run       bool        `json:"run"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("ledger: the acquiring event of %s (seq %d): %w", h.rec.RequestID, h.token, err)
	}
	if env.Type == events.LockAcquired || env.Type == events.LockStolen {
		h.recorded, h.uid, h.secretSum, h.run = true, env.UID, env.SecretSum, env.Run
	}
	return nil
}

// releaseDenied says why the caller may not release h without Force, ""
// when it may, and whether it may only because it presented h's release
// secret. A release without Force is the holder's own: from the uid that
// acquired h and, while h's holder is a running lockledger run, only from
// that run itself, which releases its holding when its command ends; or
// from anyone who presents the release secret only h's acquirer received.
// A secret presented is always checked: a wrong one is refused. h must be
// loaded (loadAcquirer). A holding whose acquiring
// event the live log no longer has (acquired before uids were recorded, or
// archived by a prune) has no uid to compare: a caller without a secret is
// then not checked by uid, so that its holder can still release it; the
// running-run rule still holds.
func (l *Ledger) releaseDenied(h *holding, secret string) (why string, bySecret bool) {
	if secret != "" {
		switch {
		case h.secretSum == "":
			return "it was acquired without a release secret (or its acquiring event is no longer in the live log), " +
				"so no secret releases it; a release without --force is accepted only from the uid that acquired it", false
		case !secretMatches(h, secret):
			return "the release secret given is not the one its acquirer received, and a release without --force " +
				"is accepted only from the uid that acquired it or with that secret", false
		}
		return "", l.holderDenied(h) != ""
	}
	return l.holderDenied(h), false
}

// holderDenied is releaseDenied's rule for a caller without a secret.
func (l *Ledger) holderDenied(h *holding) string {
	uid, _ := proc.Self()
	switch {
	case h.uid != nil && *h.uid != uid && h.secretSum != "":
		// Its acquirer took a release secret for a step of another uid:
		// the caller is likely that step, without the secret.
		return fmt.Sprintf("you are uid %d and it was acquired by uid %d, and a release without --force is accepted only from the uid that acquired it "+
			"or with the release secret its acquirer received ($LOCKLEDGER_RELEASE_SECRET, --secret-file)", uid, *h.uid)
	case h.uid != nil && *h.uid != uid:
		return fmt.Sprintf("you are uid %d and it was acquired by uid %d, and a release without --force is accepted only from the uid that acquired it", uid, *h.uid)
	case l.liveRun(h):
		return fmt.Sprintf("its holder is a running lockledger run (pid %d), which releases the lock itself when its command ends", h.rec.PID)
	}
	return ""
}

// liveRun reports whether h's holder is a running lockledger run other
// than this process: recorded as a run by its acquiring event, and the
// process recorded (same pid, same start time, this boot of this machine)
// still alive. A holding whose acquiring event the live log no longer has
// (archived by a prune) has no record to read: its holder is then taken
// for a run while that process runs lockledger's executable.
func (l *Ledger) liveRun(h *holding) bool {
	if h.recorded && !h.run {
		return false
	}
	if h.rec.PID <= 0 || h.rec.PID == os.Getpid() || h.rec.HostID != l.host.ID || h.pidStart == "" {
		return false
	}
	if proc.CompareBoot(h.bootID, h.heartbeat, l.host.BootID, l.host.Booted) != proc.ThisBoot {
		return false
	}
	live, start := l.probe.Probe(h.rec.PID)
	return live == proc.Alive && start == h.pidStart && (h.recorded || proc.IsLockledger(h.rec.PID))
}

// heldByOther is what a lock_released (or heartbeat_failed) written by id
// records of h: nil when id is h's holder itself (the same actor, pid, uid
// and host: the envelope then says whose holding it was), else h with its uid.
func (w *writeTx) heldByOther(id Identity, h *holding) *events.Holder {
	uid, _ := proc.Self()
	if id.Actor == h.rec.Actor && id.PID == h.rec.PID && h.rec.HostID == w.l.host.ID && h.uid != nil && *h.uid == uid {
		return nil
	}
	held, _ := heldBy(h)
	return held
}
