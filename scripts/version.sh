#!/usr/bin/env bash
# Prints the version `make build` and `make release` stamp into the binary,
# in the form `go install github.com/lockledger/lockledger@VERSION` would
# report it:
#   v0.3.0                                    HEAD is the release tag v0.3.0
#   v0.3.1-0.20261125130928-1e2d0ebe68cc      commits after v0.3.0 (a Go pseudo-version)
#   v0.0.0-20261125130928-1e2d0ebe68cc        no v tag below HEAD (a fresh clone without tags)
# with +dirty when the tree has uncommitted changes. Prints nothing outside
# a git checkout. Usage: version.sh [DIR]
set -euo pipefail
cd "${1:-.}"
rev=$(git rev-parse --verify -q HEAD 2>/dev/null) || exit 0
dirty=
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then dirty=+dirty; fi
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$'

# Of the tags at HEAD, the highest release, else the highest pre-release.
tags=$(git tag --points-at HEAD --list 'v[0-9]*' | while read -r t; do if [[ $t =~ $semver ]]; then echo "$t"; fi; done)
tag=$(grep -v -e - <<<"$tags" | sort -V | tail -n1 || true)
[ -n "$tag" ] || tag=$(sort -V <<<"$tags" | tail -n1)
if [ -n "$tag" ]; then
	echo "$tag$dirty"
	exit 0
fi

when=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S HEAD)
stamp="$when-${rev:0:12}"
base=$(git describe --tags --abbrev=0 --match 'v[0-9]*' HEAD 2>/dev/null || true)
if [[ $base =~ $semver ]]; then
	major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]} patch=${BASH_REMATCH[3]} pre=${BASH_REMATCH[4]}
	if [ -n "$pre" ]; then
		echo "v$major.$minor.$patch$pre.0.$stamp$dirty"
	else
		echo "v$major.$minor.$((patch + 1))-0.$stamp$dirty"
	fi
else
	echo "v0.0.0-$stamp$dirty"
fi
