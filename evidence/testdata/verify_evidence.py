#!/usr/bin/env python3
"""Check a lockledger evidence bundle, written from docs/evidence.md alone.

Usage: verify_evidence.py --verifier-key NAME+HASH+KEY BUNDLE...
Exit 0 when every bundle holds, 1 when one does not; each bundle gets a
line, OK or FAILED naming its first failure (after its name when there
are several).
Python's standard library has no Ed25519: the RFC 8032 arithmetic below
verifies the checkpoints' signatures. It does not recompute the summary.
"""
import base64, datetime, hashlib, json, sys

# --- Ed25519 verification (RFC 8032 section 5.1.7) ---
P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = -121665 * pow(121666, P - 2, P) % P
I = pow(2, (P - 1) // 4, P)

def _xrecover(y, sign):
    x2 = (y * y - 1) * pow(D * y * y + 1, P - 2, P) % P
    x = pow(x2, (P + 3) // 8, P)
    if (x * x - x2) % P:
        x = x * I % P
    if (x * x - x2) % P:
        return None
    if x & 1 != sign:
        x = P - x
    return x

def _decode_point(b):
    y = int.from_bytes(b, "little")
    sign, y = y >> 255, y & ((1 << 255) - 1)
    if y >= P:
        return None
    x = _xrecover(y, sign)
    if x is None or (x == 0 and sign):
        return None
    return (x, y, 1, x * y % P)

def _add(a, b):
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    A = (y1 - x1) * (y2 - x2) % P
    B = (y1 + x1) * (y2 + x2) % P
    C = 2 * t1 * t2 * D % P
    Dd = 2 * z1 * z2 % P
    E, F, G, H = B - A, Dd - C, Dd + C, B + A
    return (E * F % P, G * H % P, F * G % P, E * H % P)

def _mul(s, p):
    q = (0, 1, 1, 0)
    while s:
        if s & 1:
            q = _add(q, p)
        p = _add(p, p)
        s >>= 1
    return q

def _eq(a, b):
    return (a[0] * b[2] - b[0] * a[2]) % P == 0 and (a[1] * b[2] - b[1] * a[2]) % P == 0

_BY = 4 * pow(5, P - 2, P) % P
BASE = (_xrecover(_BY, 0), _BY, 1, _xrecover(_BY, 0) * _BY % P)

def ed25519_verify(pub, msg, sig):
    if len(sig) != 64 or len(pub) != 32:
        return False
    A, R = _decode_point(pub), _decode_point(sig[:32])
    s = int.from_bytes(sig[32:], "little")
    if A is None or R is None or s >= L:
        return False
    k = int.from_bytes(hashlib.sha512(sig[:32] + pub + msg).digest(), "little") % L
    return _eq(_mul(s, BASE), _add(R, _mul(k, A)))

# --- signed notes (C2SP signed-note) ---
def parse_verifier_key(vkey):
    name, khash, key = vkey.strip().split("+", 2)
    raw = base64.b64decode(key)
    if raw[0] != 1 or len(raw) != 33:
        raise ValueError("not an Ed25519 verifier key")
    want = hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4]
    if want.hex() != khash:
        raise ValueError("the key's hash does not match")
    return name, want, raw[1:]

def open_note(msg, key):
    """The note's text when a signature by key verifies, else None."""
    name, khash, pub = key
    text, sep, sigs = msg.rpartition("\n\n")
    if not sep:
        return None
    text += "\n"
    for line in sigs.splitlines():
        if not line.startswith("\u2014 "):
            return None
        sname, _, b64 = line[2:].partition(" ")
        raw = base64.b64decode(b64)
        if sname == name and raw[:4] == khash:
            return text if ed25519_verify(pub, text.encode(), raw[4:]) else None
    return None

def parse_checkpoint(text):
    lines = text.split("\n")
    return {"origin": lines[0], "size": int(lines[1]), "root": base64.b64decode(lines[2]),
            "time": next((l[5:] for l in lines[3:] if l.startswith("time ")), None)}

# --- the Merkle tree (RFC 6962) ---
def leaf(b):
    return hashlib.sha256(b"\x00" + b).digest()

def node(l, r):
    return hashlib.sha256(b"\x01" + l + r).digest()

def root_of(frontier):
    h = frontier[-1]
    for f in reversed(frontier[:-1]):
        h = node(f, h)
    return h

def maxpow2(n):
    return 1 << ((n - 1).bit_length() - 1)

def run_tree_proof(p, lo, hi, n, old):
    if n == hi:
        if lo == 0:
            if p:
                raise ValueError("proof too long")
            return old, old
        if len(p) != 1:
            raise ValueError("proof length")
        return p[0], p[0]
    if not p:
        raise ValueError("proof too short")
    k = maxpow2(hi - lo)
    if n <= lo + k:
        oh, th = run_tree_proof(p[:-1], lo, lo + k, n, old)
        return oh, node(th, p[-1])
    oh, th = run_tree_proof(p[:-1], lo + k, hi, n, old)
    return node(p[-1], oh), node(p[-1], th)

def check_tree(p, t, troot, n, nroot):
    try:
        oh, th = run_tree_proof(p, 0, t, n, nroot)
    except ValueError:
        return False
    return oh == nroot and th == troot

def parse_time(s):
    s = s.replace("Z", "+00:00")
    head, dot, frac = s.partition(".")
    if dot:  # keep microseconds: fromisoformat reads at most 6 digits
        digits = frac[: len(frac) - 6]
        s = head + "." + (digits + "000000")[:6] + frac[len(digits):]
    return datetime.datetime.fromisoformat(s)

class Failed(Exception):
    pass

def fail(msg):
    raise Failed(msg)

def main():
    args = sys.argv[1:]
    if len(args) < 3 or args[0] != "--verifier-key":
        sys.exit(__doc__)
    key = parse_verifier_key(args[1])
    ok = True
    for path in args[2:]:
        name = path + ": " if len(args) > 3 else ""
        try:
            print(name + check(key, path))
        except Failed as e:
            print(name + "FAILED: " + str(e))
            ok = False
        except (ValueError, KeyError, TypeError, IndexError) as e:  # not the bundle's format
            print(name + "FAILED: unreadable: %r" % e)
            ok = False
    sys.exit(0 if ok else 1)

def check(key, path):
    with open(path, "rb") as f:
        raw = [l.rstrip(b"\n") for l in f if l.strip()]
    hd = json.loads(raw[0])["evidence"]
    if hd["version"] != 1:
        fail("version")
    first, last = hd["first_seq"], hd["last_seq"]
    since, until = parse_time(hd["since"]), parse_time(hd["until"])
    cps, proofs, tree, events, summary = {}, {}, None, [], None
    for line in raw[1:]:
        obj = json.loads(line)
        if "seq" in obj:
            # The body's bytes, verbatim: the last member of the line.
            i = line.index(b',"body":')
            events.append((obj, line[i + 8 : -1]))
            continue
        if summary is not None or len(obj) != 1:
            fail("a line after the summary, or not one member")
        (k, v), = obj.items()
        if events and k != "summary":
            fail("a %s line after the events" % k)
        if k in ("start", "end"):
            if k in cps:
                fail("two %s checkpoints" % k)
            text = open_note(v, key)
            if text is None:
                fail("the %s checkpoint is not signed by the verifier key" % k)
            cps[k] = parse_checkpoint(text)
            if cps[k]["origin"] != hd["origin"] or hd["origin"] != "lockledger/" + hd["ledger_id"]:
                fail("the %s checkpoint's origin" % k)
        elif k == "proof":
            proofs[v["kind"]] = v
        elif k == "tree":
            tree = v
        elif k == "summary":
            summary = v
    if summary is None:
        fail("no summary line: the bundle was cut")
    if "end" not in cps or (first > 1 and "start" not in cps):
        fail("a checkpoint is missing")
    end = cps["end"]
    # Rebuild the tree from the frontier, appending each event's leaf.
    stack = [(None, base64.b64decode(h)) for h in tree["frontier"]]
    size = tree["size"]
    prev_hash, seen = None, {}
    for obj, body in events:
        seq = obj["seq"]
        if seq != size + 1:
            fail("seq %d where seq %d belongs" % (seq, size + 1))
        chain = hashlib.sha256(b"%d\n" % seq + obj["prev_hash"].encode() + b"\n" + body).hexdigest()
        if chain != obj["hash"] or (prev_hash is not None and obj["prev_hash"] != prev_hash):
            fail("seq %d: the hash chain" % seq)
        if seq == 1 and obj["prev_hash"] != hashlib.sha256(b"lockledger genesis\n" + hd["ledger_id"].encode()).hexdigest():
            fail("seq 1 does not chain from the genesis")
        prev_hash = obj["hash"]
        seen[seq] = parse_time(json.loads(body)["at"])
        size += 1
        h, lvl = leaf(body), 0
        stack.append((0, h))
        # merge complete subtrees: two of one level make one of the next
        n = size
        while n % 2 == 0 and len(stack) >= 2:
            r, l = stack.pop()[1], stack.pop()[1]
            stack.append((None, node(l, r)))
            n //= 2
    frontier = [h for _, h in stack]
    p = proofs.get("events_to_end")
    if not p or p["from"] != size or p["to"] != end["size"] or not check_tree(
            [base64.b64decode(h) for h in p["hashes"]], end["size"], end["root"], size, root_of(frontier)):
        fail("the events are not seq %d-%d of the end checkpoint's log" % (tree["size"] + 1, size))
    if "start" in cps:
        st, p = cps["start"], proofs.get("start_to_end")
        if st["size"] > first - 1 or not p or p["from"] != st["size"] or p["to"] != end["size"] or not check_tree(
                [base64.b64decode(h) for h in p["hashes"]], end["size"], end["root"], st["size"], st["root"]):
            fail("the end checkpoint does not extend the start checkpoint")
    # The period: every seq of it present, its edges dated outside it.
    if any(s not in seen for s in range(first, last + 1)) or hd["events"] != last - first + 1:
        fail("an event of the period is missing")
    if first > 1 and not (first - 1 in seen and seen[first - 1] < since):
        fail("the event before the period is missing or dated within it")
    if not (since <= seen[first] and seen[last] <= until):
        fail("the period's first or last event is dated outside it")
    if end["size"] < last:
        fail("the end checkpoint ends before the period")
    if end["size"] > last:
        if not (last + 1 in seen and seen[last + 1] > until):
            fail("the event after the period is missing or dated within it")
    elif end["time"] is None or parse_time(end["time"]) <= until or size != last:
        fail("the end checkpoint was signed before the period ended")
    return "OK: seq %d-%d, %d events, are the period %s to %s of %s, signed by %s" % (
        first, last, hd["events"], hd["since"], hd["until"], hd["origin"], key[0])

main()
