package schema

import (
	"cmp"
	"math"
)

// numFacts are exact decimal facts about a JSON number, as math/big sees it.
type numFacts struct {
	// ok: big.Rat.SetString accepts the number. It refuses an exponent that
	// does not fit in int64, and (for a non-zero number) a power of ten
	// beyond ±10^6 once the fraction digits are counted; the library then
	// panics on a nil *big.Rat (which schemaref.Validate reports as a refusal).
	ok   bool
	sign int // -1, 0, 1
	// ip is the integer part of |value| when it is at most ipLimit; big
	// is set when it is larger.
	ip   int64
	big  bool
	frac bool // the fractional part is not zero
}

const ipLimit = 1e17

func (n numFacts) isInt() bool { return n.sign == 0 || !n.frac }

// cmp compares the value with k, |k| <= ipLimit.
func (n numFacts) cmp(k int64) int {
	switch {
	case n.sign == 0:
		return cmp.Compare(0, k)
	case n.sign < 0:
		if k >= 0 {
			return -1
		}
		// k < 0: compare -(ip.frac) with k, i.e. ip.frac with -k.
		if n.big {
			return -1
		}
		c := cmp.Compare(n.ip, -k)
		if c == 0 && n.frac {
			c = 1
		}
		return -c
	default:
		if k < 0 || n.big {
			return 1
		}
		c := cmp.Compare(n.ip, k)
		if c == 0 && n.frac {
			c = 1
		}
		return c
	}
}

// analyzeNumber reads a number that the scanner accepted (JSON grammar).
func analyzeNumber(raw []byte) numFacts {
	var n numFacts
	i := 0
	neg := false
	if raw[0] == '-' {
		neg = true
		i++
	}
	is := i
	for i < len(raw) && isDigit(raw[i]) {
		i++
	}
	intDigits := raw[is:i]
	var fracDigits []byte
	if i < len(raw) && raw[i] == '.' {
		i++
		fs := i
		for i < len(raw) && isDigit(raw[i]) {
			i++
		}
		fracDigits = raw[fs:i]
	}
	var exp int64
	if i < len(raw) { // 'e' or 'E'
		i++
		eneg := false
		if raw[i] == '+' {
			i++
		} else if raw[i] == '-' {
			eneg = true
			i++
		}
		limit := uint64(math.MaxInt64)
		if eneg {
			limit++
		}
		var mag uint64
		for ; i < len(raw); i++ {
			d := uint64(raw[i] - '0')
			if mag > (limit-d)/10 {
				return n // strconv.ParseInt overflows: not ok
			}
			mag = mag*10 + d
		}
		if eneg {
			exp = int64(-mag) // -(1<<63) wraps to itself, as intended
		} else {
			exp = int64(mag)
		}
	}
	digit := func(k int) byte {
		if k < len(intDigits) {
			return intDigits[k]
		}
		return fracDigits[k-len(intDigits)]
	}
	nd := len(intDigits) + len(fracDigits)
	zero := true
	for k := 0; k < nd; k++ {
		if digit(k) != '0' {
			zero = false
			break
		}
	}
	n.ok = true
	if zero {
		return n // sign 0: an integer, whatever the exponent
	}
	// math/big's exp5: the exponent less the fraction digits.
	fc := int64(len(fracDigits))
	if exp > 1e6+fc || exp < fc-1e6 {
		n.ok = false
		return n
	}
	n.sign = 1
	if neg {
		n.sign = -1
	}
	// The decimal point sits after digit p of intDigits++fracDigits.
	p := int64(len(intDigits)) + exp
	for k := int64(0); k < p; k++ {
		if k >= int64(nd) {
			if n.ip == 0 {
				break
			}
			n.ip *= 10
		} else {
			n.ip = n.ip*10 + int64(digit(int(k))-'0')
		}
		if n.ip > ipLimit {
			n.big = true
			break
		}
	}
	for k := max(p, 0); k < int64(nd); k++ {
		if digit(int(k)) != '0' {
			n.frac = true
			break
		}
	}
	return n
}
