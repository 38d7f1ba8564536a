package jepsen

import (
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// Job is one job as the outside record shows it: [Start, Last] is when it
// certainly ran, and so certainly held the lock.
type Job struct {
	Client  int
	Request string
	Token   int64
	PID     int
	Start   int64 // mono ns of its start line
	Last    int64 // mono ns of its last line
	Ended   bool  // it wrote its end line
}

// Jobs gathers the record's lines of lock into jobs, in start order.
func Jobs(lines []Line, lock string) []Job {
	idx := map[string]int{}
	var jobs []Job
	for _, l := range lines {
		if l.Lock != lock {
			continue
		}
		i, ok := idx[l.Request]
		if !ok {
			i = len(jobs)
			idx[l.Request] = i
			jobs = append(jobs, Job{Client: l.Client, Request: l.Request, Token: l.Token, PID: l.PID, Start: l.Mono, Last: l.Mono})
		}
		j := &jobs[i]
		if l.Kind == "start" {
			j.Start = l.Mono
		}
		j.Last = max(j.Last, l.Mono)
		j.Ended = j.Ended || l.Kind == "end"
	}
	slices.SortStableFunc(jobs, func(a, b Job) int { return cmp64(a.Start, b.Start) })
	return jobs
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Overlap is two jobs that ran at once.
type Overlap struct {
	First, Second string // request ids, in start order
	By            time.Duration
}

// Exclusion returns every pair of jobs whose [Start, Last] intervals
// overlap (check a). Jobs must be in start order.
func Exclusion(jobs []Job) []Overlap {
	var out []Overlap
	for i := range jobs {
		for k := i + 1; k < len(jobs) && jobs[k].Start <= jobs[i].Last; k++ {
			by := min(jobs[i].Last, jobs[k].Last) - jobs[k].Start
			out = append(out, Overlap{First: jobs[i].Request, Second: jobs[k].Request, By: time.Duration(by)})
		}
	}
	return out
}

// FencingViolations counts the jobs whose token is not above every token
// of the jobs that started before them (check b). Jobs must be in start order.
func FencingViolations(jobs []Job) int {
	n := 0
	var top int64
	for i, j := range jobs {
		if i > 0 && j.Token <= top {
			n++
		}
		top = max(top, j.Token)
	}
	return n
}

// Holding is one lock_acquired or lock_stolen event of the ledger's history.
type Holding struct {
	Seq     int64
	Type    string
	Request string
	Token   int64
	At      int64 // mono ns (converted from the event's time)
}

// Disagreements counts where the outside record and the ledger's history
// disagree (check c): a job with no holding of its request id and token,
// and, once, holdings whose order is not the jobs' start order.
func Disagreements(jobs []Job, holdings []Holding) int {
	byReq := map[string]Holding{}
	for _, h := range holdings {
		byReq[h.Request] = h
	}
	n := 0
	var seqs []int64
	for _, j := range jobs {
		h, ok := byReq[j.Request]
		if !ok || h.Token != j.Token {
			n++
			continue
		}
		seqs = append(seqs, h.Seq)
	}
	if !slices.IsSorted(seqs) {
		n++
	}
	return n
}

// Run is one `lockledger run` process as the harness saw it.
type Run struct {
	Client  int
	Request string
	Launch  int64 // mono ns just before it started
	Exit    int64 // mono ns just after it was reaped
	Code    int   // its exit code; -1 when a signal killed it
}

// pending is the response time of an operation whose response was never
// seen (its process killed): it may take effect any time after its call.
const pending = math.MaxInt64 / 2

// lockInput is an operation of the lock model.
type lockInput struct {
	acquire bool
	client  int
}

// LockModel is a mutex: acquire succeeds only when free, release only by
// the holder.
var LockModel = porcupine.Model{
	Init: func() interface{} { return -1 },
	Step: func(state, input, _ interface{}) (bool, interface{}) {
		holder, in := state.(int), input.(lockInput)
		if in.acquire {
			return holder == -1, in.client
		}
		return holder == in.client, -1
	},
}

// TokenModel is the fencing token as a register whose reads must go up.
var TokenModel = porcupine.Model{
	Init: func() interface{} { return int64(0) },
	Step: func(state, _, output interface{}) (bool, interface{}) {
		top, tok := state.(int64), output.(int64)
		return tok > top, tok
	},
}

// Histories turns jobs and the runs that started them into the lock
// model's and the token model's histories (check d). A job's acquire is
// called when its run was launched and returns at its start line; its
// release is called at its last line and returns when its run exited, or
// never when the run was killed. Its token read spans its acquire.
func Histories(jobs []Job, runs []Run) (lock, token []porcupine.Operation) {
	byReq := map[string]Run{}
	for _, r := range runs {
		byReq[r.Request] = r
	}
	for _, j := range jobs {
		r, ok := byReq[j.Request]
		call := j.Start
		if ok && r.Launch < j.Start {
			call = r.Launch
		}
		ret := int64(pending)
		if ok && r.Code >= 0 && r.Exit >= j.Last {
			ret = r.Exit
		}
		lock = append(lock,
			porcupine.Operation{ClientId: j.Client, Input: lockInput{acquire: true, client: j.Client}, Call: call, Return: j.Start},
			porcupine.Operation{ClientId: j.Client, Input: lockInput{client: j.Client}, Call: j.Last, Return: ret})
		token = append(token, porcupine.Operation{ClientId: j.Client, Input: nil, Output: j.Token, Call: call, Return: j.Start})
	}
	return lock, token
}

// Linearizable checks both models; it returns porcupine's verdicts.
func Linearizable(jobs []Job, runs []Run, timeout time.Duration) (lock, token porcupine.CheckResult) {
	lh, th := Histories(jobs, runs)
	return porcupine.CheckOperationsTimeout(LockModel, lh, timeout),
		porcupine.CheckOperationsTimeout(TokenModel, th, timeout)
}

// LossToStop is, for each job whose holding ended other than by its own
// release, the time from the event that ended the holding (the next
// holding's event, a loss recorded, or a fault that killed its run or job)
// to the job's last line, or 0 when the job had stopped before.
func LossToStop(jobs []Job, ends map[string]int64) []time.Duration {
	var out []time.Duration
	for _, j := range jobs {
		e, ok := ends[j.Request]
		if !ok {
			continue
		}
		out = append(out, time.Duration(max(0, j.Last-e)))
	}
	return out
}

// StaleAccepted counts the writes a fence accepted whose token is below a
// token it accepted before them (check e): a holder's write after a later
// holding's, which the fence exists to refuse. writes are in the order
// the fence accepted them.
func StaleAccepted(writes []FencedWrite) int {
	n := 0
	var top int64
	for _, w := range writes {
		if w.Token < top {
			n++
		}
		top = max(top, w.Token)
	}
	return n
}

// Rejection is a fence_rejected event of the ledger's history: whose
// write was refused, and its token.
type Rejection struct {
	Request string
	Token   int64
}

// MissingRejections counts the refusals the jobs saw (the record's
// rejected lines) that no fence_rejected of the same request and token
// records (check f). Each event accounts for one refusal.
func MissingRejections(lines []Line, recorded []Rejection) int {
	left := map[Rejection]int{}
	for _, r := range recorded {
		left[r]++
	}
	n := 0
	for _, l := range lines {
		if l.Kind != "rejected" {
			continue
		}
		k := Rejection{Request: l.Request, Token: l.Token}
		if left[k] == 0 {
			n++
			continue
		}
		left[k]--
	}
	return n
}

// Rejected counts the refusals the jobs saw.
func Rejected(lines []Line) int {
	n := 0
	for _, l := range lines {
		if l.Kind == "rejected" {
			n++
		}
	}
	return n
}
