package replay_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/verify"
)

// streamOf writes g's events as a follower's stream does: each event's
// line, then the lines extra asks for after that seq.
func streamOf(t *testing.T, g *ovlLog, after map[int64][]string) string {
	t.Helper()
	var b bytes.Buffer
	err := replay.ScanRows(context.Background(), g.db, replay.Filter{}, func(r *replay.Row) error {
		if err := replay.WriteExportLine(&b, r); err != nil {
			return err
		}
		for _, l := range after[r.Seq] {
			b.WriteString(l + "\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func checkpointLine(t *testing.T, ns replay.NoteSource) string {
	t.Helper()
	var b bytes.Buffer
	if err := replay.WriteCheckpointLine(&b, ns.Note); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func treeLineAt(t *testing.T, g *ovlLog, size int64) string {
	t.Helper()
	var tree checkpoint.Tree
	err := replay.ScanRows(context.Background(), g.db, replay.Filter{ToSeq: size}, func(r *replay.Row) error {
		_, err := tree.Append(checkpoint.LeafHash(r.Body))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := replay.WriteTreeLine(&b, size, tree.Frontier()); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func verifyStream(t *testing.T, s string, v note.Verifier) *verify.Report {
	t.Helper()
	rep, err := replay.VerifyFile(strings.NewReader(s), "stream", "",
		replay.WithTrust(&replay.Trust{Verifiers: []note.Verifier{v}}))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestVerifyFileChecksAStreamsCheckpointsWhereTheyStand(t *testing.T) {
	s, v := keys(t, "ops")
	g := treeLog(t, 12)
	heads := signedHeads(t, g, s, 4, 8)
	c4, c8 := checkpointLine(t, heads[0]), checkpointLine(t, heads[1])

	// Two streams appended: the second resumed after seq 6 with its tree
	// line and the newest checkpoint up to it; c8 repeated as the
	// periodic record.
	rep := verifyStream(t, streamOf(t, g, map[int64][]string{4: {c4}, 6: {treeLineAt(t, g, 6), c4}, 8: {c8}, 11: {c8}}), v)
	if !rep.OK || !strings.HasPrefix(rep.Trust, "seq 1-8 match") || len(rep.Checkpoints) != 2 {
		t.Fatalf("a resumed stream: %+v, trust %q, %d checkpoints", rep.Problems, rep.Trust, len(rep.Checkpoints))
	}

	// A checkpoint first carried past its size cannot be checked, and is
	// no damage.
	rep = verifyStream(t, streamOf(t, g, map[int64][]string{9: {c8}}), v)
	if !rep.OK || len(rep.Checkpoints) != 1 || rep.Checkpoints[0].Result != "not checked" {
		t.Fatalf("a checkpoint past its size: %+v, %+v", rep.Problems, rep.Checkpoints)
	}

	// A stream resumed after another seq than the one it ended with.
	rep = verifyStream(t, streamOf(t, g, map[int64][]string{4: {c4}, 7: {treeLineAt(t, g, 6)}}), v)
	onlyProblem(t, rep, verify.KindMalformed, 8, "a tree line of size 6 after event 7")
	other := treeLineAt(t, treeLog(t, 12), 6)
	rep = verifyStream(t, streamOf(t, g, map[int64][]string{6: {other}}), v)
	onlyProblem(t, rep, verify.KindMalformed, 7, "not those of the events before it")

	// A checkpoint of another log at the size reached.
	forged := signedHeads(t, treeLog(t, 12), s, 8)[0]
	rep = verifyStream(t, streamOf(t, g, map[int64][]string{8: {checkpointLine(t, forged)}}), v)
	if rep.OK || rep.FirstBad.Kind != verify.KindCheckpoint || !strings.Contains(rep.FirstBad.Detail, "no longer matches") {
		t.Fatalf("a forged checkpoint in the stream: %+v", rep.Problems)
	}
}

func TestVerifyFileChecksALinesLeafHash(t *testing.T) {
	g := treeLog(t, 4)
	lines := strings.Split(strings.TrimSpace(streamOf(t, g, nil)), "\n")
	var b strings.Builder
	for i, l := range lines {
		body := l[strings.Index(l, `"body":`)+len(`"body":`) : len(l)-1]
		leaf := checkpoint.LeafHash([]byte(body)).String()
		if i == 2 {
			leaf = tlog.Hash{}.String()
		}
		b.WriteString(strings.TrimSuffix(l, "}") + `,"leaf":"` + leaf + `"}` + "\n")
	}
	rep, err := replay.VerifyFile(strings.NewReader(b.String()), "stream", "")
	if err != nil {
		t.Fatal(err)
	}
	onlyProblem(t, rep, verify.KindMalformed, 3, "is not the Merkle leaf hash of the body")
}
