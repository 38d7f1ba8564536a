package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/termtext"
)

// syslogMessage is an RFC 5424 message as a receiver parses it.
type syslogMessage struct {
	pri, version                        int
	timestamp, host, app, procid, msgid string
	sd                                  map[string]map[string]string // SD-ID -> PARAM-NAME -> value, unescaped
	sdOrder                             []string
	msg                                 string
}

// parseSyslog parses one line as RFC 5424 (section 6): the header's
// fields printable US-ASCII, SD-ELEMENTs with PARAM-VALUEs in which '"',
// '\' and ']' are escaped by '\' (6.3.3), then the message.
func parseSyslog(line string) (*syslogMessage, error) {
	m := &syslogMessage{sd: map[string]map[string]string{}}
	for i := 0; i < len(line); i++ {
		if line[i] < 0x20 || line[i] == 0x7f {
			return nil, fmt.Errorf("control character %#x at %d", line[i], i)
		}
	}
	if i := strings.IndexAny(line, "\u0085\u009b\u2028\u2029\u202e"); i >= 0 {
		return nil, fmt.Errorf("a line separator, C1 control or bidi override at %d", i)
	}
	rest, ok := strings.CutPrefix(line, "<")
	if !ok {
		return nil, fmt.Errorf("no PRI")
	}
	pri, rest, ok := strings.Cut(rest, ">")
	var err error
	if m.pri, err = strconv.Atoi(pri); !ok || err != nil || m.pri < 0 || m.pri > 191 {
		return nil, fmt.Errorf("PRI %q", pri)
	}
	fields := strings.SplitN(rest, " ", 7)
	if len(fields) != 7 {
		return nil, fmt.Errorf("header has %d fields", len(fields))
	}
	if m.version, err = strconv.Atoi(fields[0]); err != nil || m.version != 1 {
		return nil, fmt.Errorf("VERSION %q", fields[0])
	}
	for i, f := range fields[1:6] {
		if f == "" {
			return nil, fmt.Errorf("header field %d empty", i+2)
		}
		for j := 0; j < len(f); j++ {
			if f[j] < 33 || f[j] > 126 {
				return nil, fmt.Errorf("header field %d %q: not PRINTUSASCII", i+2, f)
			}
		}
	}
	m.timestamp, m.host, m.app, m.procid, m.msgid = fields[1], fields[2], fields[3], fields[4], fields[5]
	if m.timestamp != "-" {
		if _, err := time.Parse(time.RFC3339Nano, m.timestamp); err != nil {
			return nil, fmt.Errorf("TIMESTAMP: %v", err)
		}
		if _, frac, ok := strings.Cut(strings.TrimSuffix(m.timestamp, "Z"), "."); ok && len(frac) > 6 {
			return nil, fmt.Errorf("TIMESTAMP %q: more than 6 digits of TIME-SECFRAC", m.timestamp)
		}
	}
	rest = fields[6]
	if strings.HasPrefix(rest, "- ") || rest == "-" {
		rest = strings.TrimPrefix(strings.TrimPrefix(rest, "-"), " ")
		m.msg = rest
		return m, nil
	}
	for strings.HasPrefix(rest, "[") {
		end := strings.IndexAny(rest, " ]")
		if end < 0 {
			return nil, fmt.Errorf("unterminated SD-ELEMENT")
		}
		id := rest[1:end]
		params := map[string]string{}
		m.sd[id], m.sdOrder = params, append(m.sdOrder, id)
		rest = rest[end:]
		for strings.HasPrefix(rest, " ") {
			name, after, ok := strings.Cut(rest[1:], `="`)
			if !ok || name == "" || strings.ContainsAny(name, ` ="]`) {
				return nil, fmt.Errorf("SD-PARAM in %s: %q", id, rest)
			}
			var v strings.Builder
			i := 0
			for ; i < len(after) && after[i] != '"'; i++ {
				switch {
				case after[i] == '\\' && i+1 < len(after) && strings.IndexByte(`"\]`, after[i+1]) >= 0:
					i++
					v.WriteByte(after[i])
				case after[i] == ']':
					return nil, fmt.Errorf("SD-PARAM %s: an unescaped ']'", name)
				default:
					v.WriteByte(after[i])
				}
			}
			if i == len(after) {
				return nil, fmt.Errorf("SD-PARAM %s: unterminated value", name)
			}
			params[name] = v.String()
			rest = after[i+1:]
		}
		if !strings.HasPrefix(rest, "]") {
			return nil, fmt.Errorf("SD-ELEMENT %s: %q", id, rest)
		}
		rest = rest[1:]
	}
	if rest != "" {
		msg, ok := strings.CutPrefix(rest, " ")
		if !ok {
			return nil, fmt.Errorf("no SP before MSG: %q", rest)
		}
		m.msg = msg
	}
	return m, nil
}

func TestFollowSyslogKeepsHostileTextOnOneLine(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "seed", "-q")
	const (
		lock  = "prod\"] [x@1 a=\"b\"]\\\n<13>1 - forged\x1b[2J"
		actor = "bot\"]\\\r\n\x1b]0;pwned\x07 \u202e"
		host  = "far]\"\\\n"
	)
	at := time.Now().UTC()
	ev := &events.Event{
		Envelope: events.Envelope{EventID: events.NewULID(at), Type: events.LockAcquired, SchemaVersion: events.SchemaVersion,
			At: events.FormatTime(at), LockName: lock, RequestID: "req_far", Actor: actor, HostID: host, PID: 4242},
		Payload: &events.Acquired{TTLSeconds: 3600, Intent: "deploy", IntentVersion: "1", FencingToken: 2,
			Metadata: map[string]string{"note": "a\nb\u2028c\x7f"}, PIDStart: "1", BootID: "boot"},
	}
	db := fixture.RawDB(t, root)
	forged := fixture.Append(t, db, ev)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	f := startFollower(t, root, nil, "export", "--follow", "--format", "syslog")
	f.await(t, "the forged event", func(lines []string) bool {
		return strings.Contains(strings.Join(lines, "\n"), fmt.Sprintf(`[meta sequenceId="%d"]`, forged.Seq))
	})
	code, lines := f.stop(t, syscall.SIGTERM)
	if code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0; stderr:\n%s", code, f.errText())
	}
	found := false
	for i, line := range lines {
		m, err := parseSyslog(line)
		if err != nil {
			t.Fatalf("line %d is not RFC 5424: %v\n%q", i+1, err, line)
		}
		if m.version != 1 || m.app != "lockledger" || m.pri/8 != 13 {
			t.Errorf("line %d: version %d, app %q, facility %d", i+1, m.version, m.app, m.pri/8)
		}
		if m.msgid == "checkpoint" {
			var c struct{ Checkpoint string }
			if err := json.Unmarshal([]byte(m.msg), &c); err != nil || c.Checkpoint == "" || m.sd["lockledger@32473"]["size"] == "" {
				t.Errorf("line %d: a checkpoint message without its note or size: %q", i+1, line)
			}
			continue
		}
		own := m.sd["lockledger@32473"]
		if len(m.sdOrder) != 2 || m.sdOrder[0] != "meta" || own == nil || m.sd["meta"]["sequenceId"] != own["seq"] {
			t.Errorf("line %d: structured data %v", i+1, m.sd)
		}
		if own["seq"] != strconv.FormatInt(forged.Seq, 10) {
			continue
		}
		found = true
		var body events.Envelope
		if err := json.Unmarshal([]byte(m.msg), &body); err != nil || body.LockName != lock || body.Actor != actor || body.HostID != host {
			t.Errorf("the message is not the event's body, exactly (%v): %q", err, m.msg)
		}
		for _, c := range []struct{ name, got, want string }{
			{"msgid", m.msgid, "lock_acquired"},
			{"procid", m.procid, "4242"},
			{"lock", own["lock"], termtext.Escape(lock)},
			{"actor", own["actor"], termtext.Escape(actor)},
			{"host", own["host"], termtext.Escape(host)},
			{"hash", own["hash"], forged.Hash},
		} {
			if c.got != c.want {
				t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
			}
		}
	}
	if !found {
		t.Errorf("no message for the forged event, seq %d:\n%s", forged.Seq, strings.Join(lines, "\n"))
	}
}
