package ledger

import (
	"strings"

	"github.com/lockledger/lockledger/events"
)

// maxRefusalText bounds action_refused's error text (its schema's maxLength).
const maxRefusalText = 4096

// refuse records action_refused for a release, steal or heartbeat the
// ledger refuses, in the same decision, and returns refusal as its outcome:
// the event commits and the caller gets the error it records. h is the
// lock's holder at the time (nil when free).
func (w *writeTx) refuse(action string, id Identity, h *holding, refusal error) (error, error) {
	msg := refusal.Error()
	if len(msg) > maxRefusalText {
		msg = strings.ToValidUTF8(msg[:maxRefusalText], "")
	}
	p := &events.Refused{Action: action, Error: msg, State: events.StateFree}
	if h != nil {
		p.State, _ = judge(h, w.now, w.l.host, w.l.probe, 0)
		p.HeldBy, p.UnreadableFile = heldBy(h)
	}
	if _, err := w.append(events.ActionRefused, id, p); err != nil {
		return nil, err
	}
	return refusal, nil
}
