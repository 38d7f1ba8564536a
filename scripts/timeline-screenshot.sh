#!/usr/bin/env bash
# Regenerates docs/timeline.png: runs the postmortem walkthrough of docs/timeline.md
# on a throwaway root with the built CLI, draws its timeline page, and
# photographs the page with headless Chromium (offline, fresh profile).
set -euo pipefail
bin=$(realpath "${1:-bin/lockledger}")
out=${2:-docs/timeline.png}
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$chromium" ] || { echo "chromium is not installed (apt-get install chromium)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LOCKLEDGER_ROOT=$work/root LOCKLEDGER_TRUST_DIR=$work/trust NO_COLOR=1
ll() { "$bin" "$@"; }

rid=$(LOCKLEDGER_ACTOR=alice ll acquire app-prod --pid $$ --ttl 60 --intent deploy --intent-version v42 --metadata ticket=INC-7)
LOCKLEDGER_ACTOR=alice ll heartbeat app-prod --request-id "$rid" >/dev/null
LOCKLEDGER_ACTOR=bob ll acquire app-prod --pid $$ --wait 1s >/dev/null 2>&1 || true # exit 3
LOCKLEDGER_ACTOR=alice ll release app-prod --request-id "$rid" --result failure --failure-step migrate --exit-code 3 >/dev/null
LOCKLEDGER_ACTOR=carol ll acquire app-prod --pid $$ --ttl 2 >/dev/null
sleep 3
LOCKLEDGER_ACTOR=dave ll acquire app-prod --pid $$ >/dev/null 2>&1 || true # exit 4 (stale)
LOCKLEDGER_ACTOR=dave ll acquire app-prod --pid $$ --force >/dev/null

ll timeline --lock app-prod --format html -o "$work/timeline.html"
# The page opens with the steal (seq 7) in the details panel.
"$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
	--disable-component-update --disable-sync --no-first-run --hide-scrollbars \
	--user-data-dir="$work/profile" --window-size=1240,760 \
	--screenshot="$(realpath -m "$out")" "file://$work/timeline.html#seq=7" 2>/dev/null
echo "wrote $out"
