package stream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
)

// RFC 5424 syslog, one message per line (for a collector that reads lines,
// or octet-counted framing added by the collector):
//
//	<PRI>1 TIMESTAMP HOSTNAME lockledger PROCID MSGID [meta sequenceId="N"][lockledger@32473 seq="N" ...] MSG
//
// PRI is facility 13 (log audit) with a severity by event type; TIMESTAMP
// the event's at (microseconds, UTC); HOSTNAME the follower's host; PROCID
// the pid that wrote the event; MSGID the event type; MSG the event's
// canonical body (JSON, with every character that could break a line or
// drive a terminal written as a JSON escape). meta sequenceId is the seq
// (wrapping past 2147483647, as RFC 5424 7.3.1 says); SD-ID
// lockledger@32473 carries the full seq, the chain and leaf hashes and
// the fields a SIEM filters on. 32473 is the private enterprise number
// RFC 5612 reserves for documentation: lockledger has none of its own.
// PARAM-VALUEs escape '"', '\' and ']' (RFC 5424 6.3.3), after control
// characters are written as visible escapes (internal/termtext).
//
// A checkpoint is a message of MSGID checkpoint, with
// [lockledger@32473 size="N" root="..."] and MSG {"checkpoint":"<note>"}.

// SyslogSDID is the SD-ID of lockledger's structured data.
const SyslogSDID = "lockledger@32473"

// syslogFacility is log audit.
const syslogFacility = 13

const (
	sevWarning = 4
	sevNotice  = 5
	sevInfo    = 6
)

func severity(t events.Type) int {
	switch t {
	case events.LockStolen, events.HeartbeatFailed, events.FenceRejected:
		return sevWarning
	case events.ActionRefused, events.AcquireBlocked:
		return sevNotice
	}
	return sevInfo
}

// maxSequenceID is where meta sequenceId wraps.
const maxSequenceID = 2147483647

type syslogWriter struct {
	lineWriter
	hostname string
}

func (s *syslogWriter) Start(int64, []tlog.Hash) error { return nil }

func (s *syslogWriter) Event(r *Record) error {
	b := &s.buf
	procid := "-"
	if r.Env.PID > 0 {
		procid = strconv.Itoa(r.Env.PID)
	}
	s.header(severity(r.Env.Type), r.Time, procid, headerToken(string(r.Env.Type), 32))
	fmt.Fprintf(b, `[meta sequenceId="%d"]`, (r.Row.Seq-1)%maxSequenceID+1)
	b.WriteString("[" + SyslogSDID)
	param(b, "seq", strconv.FormatInt(r.Row.Seq, 10))
	param(b, "hash", r.Row.Hash)
	param(b, "prev", r.Row.PrevHash)
	param(b, "leaf", r.Leaf.String())
	param(b, "type", string(r.Env.Type))
	if r.Env.LockName != "" {
		param(b, "lock", r.Env.LockName)
	}
	param(b, "actor", r.Env.Actor)
	param(b, "host", r.Env.HostID)
	if r.Env.User != nil {
		param(b, "user", *r.Env.User)
	}
	b.WriteString("] ")
	return s.send(bodyJSON(r.Row.Body))
}

func (s *syslogWriter) Checkpoint(c *Checkpoint) error {
	b := &s.buf
	s.header(sevInfo, c.Text.Time, "-", "checkpoint")
	b.WriteString("[" + SyslogSDID)
	param(b, "size", strconv.FormatInt(c.Text.Size, 10))
	param(b, "root", c.Text.Root.String())
	b.WriteString("] ")
	msg, err := json.Marshal(map[string]string{"checkpoint": string(c.Note)})
	if err != nil {
		return err
	}
	return s.send(msg)
}

// header starts a message in the emptied buffer; t is its TIMESTAMP
// ("-" when zero).
func (s *syslogWriter) header(sev int, t time.Time, procid, msgid string) {
	s.buf.Reset()
	ts := "-"
	if !t.IsZero() {
		ts = t.UTC().Format("2006-01-02T15:04:05.000000Z")
	}
	fmt.Fprintf(&s.buf, "<%d>1 %s %s lockledger %s %s ", syslogFacility*8+sev, ts, s.hostname, procid, msgid)
}

// send ends the message in the buffer with msg, JSON, and writes its line.
func (s *syslogWriter) send(msg []byte) error {
	s.buf.Write(termtext.AppendJSON(nil, msg))
	s.buf.WriteByte('\n')
	return s.flush()
}

// param writes one SD-PARAM: the value's control characters as visible
// escapes, then '"', '\' and ']' escaped as RFC 5424 6.3.3 asks.
func param(b *bytes.Buffer, name, value string) {
	b.WriteByte(' ')
	b.WriteString(name)
	b.WriteString(`="`)
	for _, r := range termtext.Escape(value) {
		if r == '"' || r == '\\' || r == ']' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
}

// headerToken is s as a header field: printable US-ASCII, at most max
// characters, "-" when empty (RFC 5424 6.2).
func headerToken(s string, max int) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < max; i++ {
		c := s[i]
		if c < 33 || c > 126 {
			c = '_'
		}
		b.WriteByte(c)
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}
