#!/usr/bin/env bash
# Makes and prints a new directory for make test's temporary files (every
# t.TempDir, the throwaway PostgreSQL cluster, go test's own builds): on
# /dev/shm when it is a tmpfs that holds programs that can be run and has
# room (a container's is often 64 MB), else under TMPDIR (or /tmp). The product's fsyncs and file writes are the same
# there; on a tmpfs they cost no disk work, most of the tests' system
# CPU. It is open to every user as /tmp is (mode 1777): some tests run
# the server or the CLI as another user. The caller removes the directory.
set -euo pipefail
room_kb=$((2 * 1024 * 1024))
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && [ -w /dev/shm ] &&
	[ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -ge "$room_kb" ]; then
	dir=$(mktemp -d /dev/shm/lockledger-test.XXXXXX)
	printf '#!/bin/sh\nexit 0\n' >"$dir/probe"
	chmod +x "$dir/probe"
	if "$dir/probe" 2>/dev/null; then
		rm "$dir/probe"
		chmod 1777 "$dir"
		echo "$dir"
		exit 0
	fi
	rm -rf "$dir"
fi
dir=$(mktemp -d)
chmod 1777 "$dir"
echo "$dir"
