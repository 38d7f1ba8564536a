package tlogwitness

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A cosignature litewitness (filippo.io/torchwood v0.6.1) returned for a
// lockledger checkpoint, with the verifier key it printed.
const (
	liteVKey = "example.com/w+38611d82+BDcHPXdKthmD1qNhHTIaGeZ33leZYsx6m03uJSIoaOSx"
	liteText = "lockledger/53c2cbaab7c44a093f8804bec1294b22\n1\neobtwarGS0E7LFTjsSWcnxZloh7Ecyp5Byj9lT3hZy0=\ntime 2026-11-25T12:51:56.48499358Z\n"
	liteSigs = "\u2014 example.com/w OGEdggAAAABrBtns3UTDd0vroZCBJsd36mzLQ2fnXAp+PvHJqEJZGVxstc7lP4TsSXKYvmFFliSCKSUEBPnXWZCIR/GhyXHeNSa7DQ==\n"
	// The log's own key (an Ed25519 note key, type 0x01): not a witness's.
	logVKey = "ops+7a264447+ASeWp4MxW13O+1rq8jyiAK2CmjwIr26Ypzz/jCYMghxL"
)

func TestOpenChecksARealWitnessCosignature(t *testing.T) {
	v, err := NewVerifier(liteVKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open([]byte(liteText), []byte(liteSigs), v)
	if err != nil {
		t.Fatal(err)
	}
	if c.Witness != "example.com/w" || c.Size != 1 || c.Root.String() != "eobtwarGS0E7LFTjsSWcnxZloh7Ecyp5Byj9lT3hZy0=" || !c.Time.Equal(time.Unix(1795611116, 0)) {
		t.Fatalf("cosignature %+v", c)
	}
	if again, err := OpenNote(c.Note, v); err != nil || again.Time != c.Time {
		t.Fatalf("the stored note does not open again: %v", err)
	}
	// The checkpoint changed (another root), or another witness's key of
	// the same name: no cosignature.
	forged := strings.Replace(liteText, "\n1\n", "\n2\n", 1)
	if _, err := Open([]byte(forged), []byte(liteSigs), v); !errors.Is(err, ErrNoCosignature) {
		t.Fatalf("a changed checkpoint: %v, want ErrNoCosignature", err)
	}
	other := "example.com/w+00000000+BDcHPXdKthmD1qNhHTIaGeZ33leZYsx6m03uJSIoaOSx"
	if _, err := NewVerifier(other); !errors.Is(err, ErrKey) {
		t.Fatalf("a key whose hash is wrong: %v, want ErrKey", err)
	}
}

func TestNewVerifierRefusesWhatIsNotACosignatureKey(t *testing.T) {
	for _, k := range []string{logVKey, "", "example.com/w", "example.com/w+38611d82", "example.com/w+38611d82+!!", "a b+38611d82+BDcHPXdKthmD1qNhHTIaGeZ33leZYsx6m03uJSIoaOSx"} {
		if _, err := NewVerifier(k); !errors.Is(err, ErrKey) {
			t.Errorf("NewVerifier(%q): %v, want ErrKey", k, err)
		}
	}
}
