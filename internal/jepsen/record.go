// Package jepsen is an outside check of lockledger's one promise, one
// holder at a time: it drives the CLI as real processes (clients looping
// `lockledger run LOCK --wait ... -- JOB` on simulated hosts), injects
// faults into them (kills, pauses, cut database connections), and checks
// what the jobs themselves wrote to one append-only file, the outside
// record, against the promise, the fencing tokens, the ledger's own
// history and two linearizability models (porcupine).
//
// The JOB is the harness binary re-executed (JobMain): it appends start,
// tick and end lines stamped with CLOCK_MONOTONIC, so that the record, the
// harness's fault times and the ledger's (converted) times share one clock.
package jepsen

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/fence"
)

// The environment that makes the harness binary a JOB.
const (
	envRecord = "JEPSEN_RECORD" // the outside record
	envClient = "JEPSEN_CLIENT" // the client's id
	envJobMS  = "JEPSEN_JOB_MS" // how long the job runs
)

// tickEvery is how often a job writes a tick: the resolution of the
// outside record's view of a job's last moment.
const tickEvery = 10 * time.Millisecond

// Mono is this machine's CLOCK_MONOTONIC in nanoseconds, the one clock of
// the record, shared by every process of the machine.
func Mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// Line is one line of the outside record.
type Line struct {
	Mono    int64  // CLOCK_MONOTONIC, ns
	Kind    string // start, tick, end, or rejected (a write the fence refused)
	Client  int
	Request string // LOCKLEDGER_REQUEST_ID
	Token   int64  // LOCKLEDGER_FENCING_TOKEN
	PID     int    // the job's pid
	Lock    string
}

func (l Line) String() string {
	return fmt.Sprintf("%d %s %d %s %d %d %s\n", l.Mono, l.Kind, l.Client, l.Request, l.Token, l.PID, l.Lock)
}

// ParseLine reads one line of the record.
func ParseLine(s string) (Line, error) {
	f := strings.Fields(s)
	if len(f) != 7 {
		return Line{}, fmt.Errorf("record line %q: want 7 fields", s)
	}
	var l Line
	var err error
	var errs [4]error
	l.Mono, errs[0] = strconv.ParseInt(f[0], 10, 64)
	l.Kind, l.Request, l.Lock = f[1], f[3], f[6]
	l.Client, errs[1] = strconv.Atoi(f[2])
	l.Token, errs[2] = strconv.ParseInt(f[4], 10, 64)
	l.PID, errs[3] = strconv.Atoi(f[5])
	for _, e := range errs {
		if e != nil {
			err = e
		}
	}
	if err != nil {
		return Line{}, fmt.Errorf("record line %q: %w", s, err)
	}
	return l, nil
}

// ReadRecord parses a whole record. A torn last line (a job killed in its
// write) cannot happen: each line is one write(2) to an O_APPEND file.
func ReadRecord(r io.Reader) ([]Line, error) {
	var out []Line
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if sc.Text() == "" {
			continue
		}
		l, err := ParseLine(sc.Text())
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

// JobMain makes this process the JOB when the harness started it as one:
// it writes the record and exits, and returns at once otherwise. Call it
// first in main and in TestMain.
func JobMain() {
	path := os.Getenv(envRecord)
	if path == "" || os.Getenv("LOCKLEDGER_REQUEST_ID") == "" {
		return
	}
	os.Exit(job(path))
}

func job(path string) int {
	client, _ := strconv.Atoi(os.Getenv(envClient))
	token, _ := strconv.ParseInt(os.Getenv("LOCKLEDGER_FENCING_TOKEN"), 10, 64)
	ms, _ := strconv.Atoi(os.Getenv(envJobMS))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen job:", err)
		return 1
	}
	line := Line{Client: client, Request: os.Getenv("LOCKLEDGER_REQUEST_ID"), Token: token,
		PID: os.Getpid(), Lock: os.Getenv("LOCKLEDGER_LOCK")}
	fw, err := openFencer(os.Getenv(envFence), path, token, line.Request, line.Lock)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen job: fence:", err)
		return 1
	}
	defer fw.close()
	write := func(kind string) {
		line.Kind, line.Mono = kind, Mono()
		// One write(2) of a short line to an O_APPEND file: never torn,
		// never interleaved with another job's.
		if _, err := f.WriteString(line.String()); err != nil {
			fmt.Fprintln(os.Stderr, "jepsen job:", err)
			os.Exit(1)
		}
	}
	// Each start and tick line is also a write through the fence. A
	// refused write is the lock lost: the job says so in the record (a
	// rejected line), records the refusal in the ledger and stops, as a
	// fenced job does.
	fenced := func() int {
		if fw == nil {
			return -1
		}
		err := fw.write(line.Mono)
		if _, stale := fence.AsStale(err); stale {
			write("rejected")
			if err := fw.record(line.Lock, err); err != nil {
				fmt.Fprintln(os.Stderr, "jepsen job: the refusal was not recorded:", err)
			}
			return 5
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "jepsen job: fenced write:", err)
			return 1
		}
		return -1
	}
	// A signal (run forwarding TERM at the end of a trial, or stopping the
	// job when the lock is lost) ends the job as it would end a real one:
	// at once, with no end line.
	signal.Ignore(syscall.SIGPIPE)
	write("start")
	if code := fenced(); code >= 0 {
		return code
	}
	end := time.Now().Add(time.Duration(ms) * time.Millisecond)
	for time.Now().Before(end) {
		time.Sleep(tickEvery)
		write("tick")
		if code := fenced(); code >= 0 {
			return code
		}
	}
	write("end")
	return 0
}
