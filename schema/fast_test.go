package schema

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// schemaFilesSHA256 is the sha256 of every embedded schema file (see
// schemaFilesDigest), for which the validator was last fuzzed.
const schemaFilesSHA256 = "52de45b14204c698ea12b9e0140ec1e0122f5d0312e59e775c9174f4b887efd8"

func schemaFilesDigest(t *testing.T) string {
	t.Helper()
	entries, err := Files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, e := range entries { // ReadDir sorts by name
		b, err := Files.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestFastMirrorsSchemaFiles fails whenever a schema file changes, so that
// the validator is regenerated and fuzzed against the library.
func TestFastMirrorsSchemaFiles(t *testing.T) {
	if got := schemaFilesDigest(t); got != schemaFilesSHA256 {
		t.Fatalf("the schema files changed (sha256 %s, the validator was fuzzed for %s).\n"+
			"Run go generate ./schema/ (fields_gen.go), add the new cases to\n"+
			"schema/fast_corpus_test.go, run\n"+
			"  go test -run '^$' -fuzz '^FuzzFastMatchesSchema$' -fuzztime 3m ./schema/\n"+
			"and only then set schemaFilesSHA256 in schema/fast_test.go to %s.", got, schemaFilesSHA256, got)
	}
}

// TestFastPatterns checks each hand-written pattern against the regexp of
// the schema files, on valid examples, every one-byte change of them, and
// random strings.
func TestFastPatterns(t *testing.T) {
	byPattern := map[string]func([]byte) bool{
		"^[0-9A-HJKMNP-TV-Z]{26}$": isEventID,
		`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z$`: isEventTime,
		"^[a-z0-9]([a-z0-9_-]{0,126}[a-z0-9])?$":                             isLockName,
		"^[A-Za-z0-9_.:-]{1,128}$":                                           isRequestID,
		"^sha256:[0-9a-f]{64}$":                                              isSHA256Ref,
		"^[0-9a-f]{64}$":                                                     isHexHash,
		"^/":                                                                 func(b []byte) bool { return len(b) > 0 && b[0] == '/' },
	}
	// defs.json's lock_time is defined but no schema refers to it.
	unreferenced := map[string]bool{"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$": true}
	examples := map[string][]string{
		"^[0-9A-HJKMNP-TV-Z]{26}$": {"01M82NQNZDDVC3QZH7KVMR0924", "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"},
		`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z$`: {"2026-11-22T22:23:54.861197406Z"},
		"^[a-z0-9]([a-z0-9_-]{0,126}[a-z0-9])?$":                             {"a", "ab", "a-b_c", strings.Repeat("a", 128), strings.Repeat("a-", 63) + "aa"},
		"^[A-Za-z0-9_.:-]{1,128}$":                                           {"r", "req_01HX:a.b-c", strings.Repeat("R", 128)},
		"^sha256:[0-9a-f]{64}$":                                              {"sha256:" + strings.Repeat("0a", 32)},
		"^[0-9a-f]{64}$":                                                     {strings.Repeat("0a", 32), strings.Repeat("f9", 32)},
		"^/":                                                                 {"/", "/x", "/é"},
	}
	seen := map[string]bool{}
	entries, _ := Files.ReadDir(".")
	for _, e := range entries {
		b, _ := Files.ReadFile(e.Name())
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		walkPatterns(doc, func(p string) {
			if unreferenced[p] {
				return
			}
			if byPattern[p] == nil {
				t.Errorf("%s: pattern %q has no hand-written matcher in patterns.go", e.Name(), p)
			}
			seen[p] = true
		})
	}
	alphabet := []byte("0123456789abcdefzAFHIJLOUVZ_-.:/T Z\n\x00")
	rng := rand.New(rand.NewPCG(1, 2))
	for p, match := range byPattern {
		if !seen[p] {
			t.Errorf("patterns.go has a matcher for %q, which no schema file uses", p)
		}
		re := regexp.MustCompile(p)
		check := func(s string) {
			if got, want := match([]byte(s)), re.MatchString(s); got != want {
				t.Errorf("pattern %q on %q: fast %v, regexp %v", p, s, got, want)
			}
		}
		var inputs []string
		for _, ex := range examples[p] {
			inputs = append(inputs, ex, "", ex+ex, "\n"+ex, ex+"\n")
			for i := 0; i <= len(ex); i++ {
				inputs = append(inputs, ex[:i]) // prefixes
				if i < len(ex) {
					inputs = append(inputs, ex[:i]+ex[i+1:]) // deletions
					for _, c := range alphabet {
						inputs = append(inputs, ex[:i]+string(c)+ex[i+1:]) // substitutions
					}
					inputs = append(inputs, ex[:i]+"é"+ex[i+1:])
				}
				for _, c := range alphabet {
					inputs = append(inputs, ex[:i]+string(c)+ex[i:]) // insertions
				}
			}
		}
		for range 5000 {
			n := rng.IntN(140)
			b := make([]byte, n)
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			inputs = append(inputs, string(b))
		}
		for _, s := range inputs {
			check(s)
		}
	}
}

func walkPatterns(v any, f func(string)) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := v[k].(string); ok && k == "pattern" {
				f(p)
			} else {
				walkPatterns(v[k], f)
			}
		}
	case []any:
		for _, x := range v {
			walkPatterns(x, f)
		}
	}
}

// TestFastNumbers checks the exact decimal facts against math/big, which
// the library uses.
func TestFastNumbers(t *testing.T) {
	ints := []string{"0", "1", "2", "9", "10", "99", "254", "255", "256", "1000", "123456789012345678901234567890"}
	fracs := []string{"", ".0", ".5", ".000", ".0001", ".9999999999999999999999", ".10"}
	exps := []string{"", "e0", "E1", "e-1", "e+2", "e-3", "e17", "e18", "e19", "e-20", "e00000000000000000000001",
		"e9223372036854775807", "e9223372036854775808", "e-9223372036854775808", "e-9223372036854775809", "e99999999999999999999"}
	// Exponents near big.Rat's limit of 10^6 cost it 50 ms each (far more
	// under -race): they meet the shortest and longest mantissas only.
	bigExps := []string{"e1000007", "e-1000001", "e1000031", "e-1000031"}
	var nums []string
	for _, sign := range []string{"", "-"} {
		for _, i := range ints {
			for _, f := range fracs {
				for _, e := range exps {
					nums = append(nums, sign+i+f+e)
				}
			}
		}
		for _, i := range []string{"0", "1", "255", ints[len(ints)-1]} {
			for _, f := range []string{"", ".5", ".000", fracs[5]} {
				for _, e := range bigExps {
					nums = append(nums, sign+i+f+e)
				}
			}
		}
	}
	nums = append(nums, strings.Repeat("9", 308), strings.Repeat("9", 309), "-"+strings.Repeat("9", 307)+".9", "1e1000000", "1.0e1000001", "0.1e-999999", "-1.5e-999999", "10e999999", "0.000001e-999994",
		"0.000001e-999995", "1.000e1000003", "1.000e1000004")
	for _, s := range nums {
		checkNumber(t, s)
	}
}

// checkNumber compares analyzeNumber with big.Rat on one JSON number.
func checkNumber(t *testing.T, s string) {
	t.Helper()
	n := analyzeNumber([]byte(s))
	r, ok := new(big.Rat).SetString(s)
	if ok != n.ok {
		t.Fatalf("%s: big.Rat ok=%v, fast ok=%v", s, ok, n.ok)
	}
	if !ok {
		return
	}
	if r.IsInt() != n.isInt() {
		t.Fatalf("%s: big.Rat IsInt=%v, fast %v", s, r.IsInt(), n.isInt())
	}
	_, ferr := strconv.ParseFloat(s, 64)
	if got := fitsFloat64([]byte(s)); got != (ferr == nil) {
		t.Fatalf("%s: fitsFloat64 %v, strconv.ParseFloat %v", s, got, ferr)
	}
	for _, k := range []int64{0, 1, 255, -3, ipLimit, -ipLimit} {
		if got, want := n.cmp(k), r.Cmp(new(big.Rat).SetInt64(k)); got != want {
			t.Fatalf("%s: cmp(%d) fast %d, big.Rat %d", s, k, got, want)
		}
	}
}

// TestMayBeSpecial: the eight-bytes-at-a-time string scan never misses a
// byte that needs attention, and flags nothing in plain ASCII.
func TestMayBeSpecial(t *testing.T) {
	special := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80 }
	var w [8]byte
	for pos := range 8 {
		for c := range 256 {
			for i := range w {
				w[i] = 'a'
			}
			w[pos] = byte(c)
			if got := mayBeSpecial(binary.LittleEndian.Uint64(w[:])); got != special(byte(c)) {
				t.Fatalf("byte %#x at %d: %v", c, pos, got)
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200_000 {
		want := false
		for i := range w {
			w[i] = byte(rng.IntN(256))
			if rng.IntN(2) == 0 {
				w[i] = byte(0x20 + rng.IntN(0x60)) // mostly printable
			}
			want = want || special(w[i])
		}
		if got := mayBeSpecial(binary.LittleEndian.Uint64(w[:])); got != want {
			if want {
				t.Fatalf("%q: missed", w)
			}
			t.Fatalf("%q: flagged plain ASCII", w)
		}
	}
}
