package proc

import (
	"encoding/binary"
	"slices"
	"testing"
)

func procArgsBuf(argc int32, parts ...string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(argc))
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestParseProcArgs(t *testing.T) {
	b := procArgsBuf(2, "/usr/local/bin/lockledger\x00\x00\x00\x00",
		"lockledger\x00run\x00",
		"HOME=/Users/a\x00LOCKLEDGER_REQUEST_ID=r-1\x00\x00",
		"executable_path=/usr/local/bin/lockledger\x00")
	p, ok := parseProcArgs(b)
	if !ok {
		t.Fatal("not parsed")
	}
	if p.exe != "/usr/local/bin/lockledger" || !slices.Equal(p.args, []string{"lockledger", "run"}) {
		t.Fatalf("exe %q args %q", p.exe, p.args)
	}
	if string(p.env) != "HOME=/Users/a\x00LOCKLEDGER_REQUEST_ID=r-1\x00" {
		t.Fatalf("env %q", p.env)
	}
	if id, ok := envValue(p.env, []byte("\x00"+JobEnv+"=")); !ok || id != "r-1" {
		t.Fatalf("request id %q %v", id, ok)
	}
	if _, ok := envValue(p.env, []byte("\x00executable_path=")); ok {
		t.Fatal("an apple string read as a variable")
	}
}

func TestParseProcArgsRefusesShort(t *testing.T) {
	for _, b := range [][]byte{nil, {1, 0}, procArgsBuf(-1, "/x\x00"), procArgsBuf(3, "/x\x00\x00a\x00b\x00"), procArgsBuf(1, "/x")} {
		if p, ok := parseProcArgs(b); ok {
			t.Errorf("%q parsed as %+v", b, p)
		}
	}
	p, ok := parseProcArgs(procArgsBuf(1, "/x\x00\x00a\x00"))
	if !ok || len(p.env) != 0 || !slices.Equal(p.args, []string{"a"}) {
		t.Fatalf("no environment: %+v %v", p, ok)
	}
}
