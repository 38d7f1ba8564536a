#!/usr/bin/env bash
# Builds the release archives (make release runs it, after make build and
# make man): for each GOOS/GOARCH argument, a static binary (CGO_ENABLED=0,
# -trimpath) packed with LICENSE, README.md, docs/, the man pages, the bash, zsh and
# fish completions and (for linux) the example systemd units into
# dist/lockledger_VERSION_GOOS_GOARCH.tar.gz; then dist/SHA256SUMS.
# The same commit gives the same archives: names sorted, owner 0, file
# times the commit's.
# Environment: VERSION (required), LDFLAGS (the -X stamps), GO, BIN (a
# binary for this machine, to write the completions), MANDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${GO:=go}" "${BIN:=bin/lockledger}" "${MANDIR:=man/man1}" "${LDFLAGS:=}"
if [ -z "${VERSION:-}" ]; then
	echo "release: no version (not a git checkout?); tag the commit, e.g. git tag v0.3.0" >&2
	exit 2
fi
if [ $# -eq 0 ]; then
	echo "usage: release.sh GOOS/GOARCH..." >&2
	exit 2
fi
case $VERSION in
*+dirty) echo "release: WARNING: the tree has uncommitted changes; these archives are not any commit's ($VERSION)" >&2 ;;
esac
epoch=$(git log -1 --format=%ct 2>/dev/null || date +%s)

rm -rf dist
work=dist/.work
mkdir -p "$work/completions"
"$BIN" completion bash >"$work/completions/lockledger.bash"
"$BIN" completion zsh >"$work/completions/_lockledger"
"$BIN" completion fish >"$work/completions/lockledger.fish"

for platform in "$@"; do
	goos=${platform%/*} goarch=${platform#*/}
	name=lockledger_${VERSION}_${goos}_${goarch}
	dir=$work/$name
	mkdir -p "$dir/man"
	echo "release: $name" >&2
	CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch "$GO" build -trimpath -ldflags "$LDFLAGS -s -w" -o "$dir/lockledger" .
	cp LICENSE README.md "$dir/"
	cp -R docs "$dir/docs"
	cp -R "$MANDIR" "$dir/man/man1"
	cp -R "$work/completions" "$dir/completions"
	if [ "$goos" = linux ]; then
		mkdir -p "$dir/systemd"
		cp packaging/systemd/*.service packaging/systemd/*.timer "$dir/systemd/"
	fi
	find "$dir" -exec touch -h -d "@$epoch" {} +
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C "$work" -cf - "$name" | gzip -n -9 >"dist/$name.tar.gz"
done
rm -rf "$work"
(cd dist && sha256sum -- *.tar.gz >SHA256SUMS)
ls -l dist >&2
