package ledger

import (
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/internal/termtext"
)

// takeoverNote decides, for a stale holder h taken over by force, whether
// its processes are this machine's, in this boot, so that the taker stops
// its job before it starts its own (Acquisition.StopPrevious); when they
// may be elsewhere, note says why its job is not stopped from here. A
// holder no process holds (pid 0) has no job to stop, and one of an
// earlier boot is gone with it. It reads only what is recorded.
func (l *Ledger) takeoverNote(h *holding, note string) (string, bool) {
	if h.foreign || h.rec.PID <= 0 {
		return note, false
	}
	var why string
	if h.rec.HostID != l.host.ID {
		why = "the stale holder's job runs on host " + h.rec.HostID + ": it is not stopped from here"
	} else {
		switch proc.CompareBoot(h.bootID, h.heartbeat, l.host.BootID, l.host.Booted) {
		case proc.ThisBoot:
			return note, true
		case proc.Rebooted:
			return note, false
		default:
			why = "the stale holder may run on another machine under host id " + h.rec.HostID + ": its job is not stopped from here"
		}
	}
	if note != "" {
		note += "; "
	}
	return termtext.Clip(note+why, 1024), false
}
