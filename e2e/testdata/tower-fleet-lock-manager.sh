#!/bin/bash
# tower-fleet's lock manager, copied from its specification
# (tower-fleet/lock/v1, section 10.2) so that tests run that tool's own
# code against lockledger's files. Two changes: LOCK_DIR can be set from
# the environment, and steal_lock, which the reference script calls but
# does not define, does what section 6 says --force-lock does (read the
# existing lock, delete it; acquire_lock then creates the new one).
# /root/tower-fleet/scripts/lock-manager.sh

set -euo pipefail

LOCK_DIR="${LOCK_DIR:-/root/tower-fleet/logs/locks}"
DEFAULT_TTL=900
HEARTBEAT_INTERVAL=30

acquire_lock() {
  local lock_name="$1"
  local request_id="$2"
  local intent="$3"
  local intent_version="$4"
  local force="${5:-false}"

  local lock_path="${LOCK_DIR}/${lock_name}.lock"

  # Check existing lock
  if [[ -f "$lock_path" ]]; then
    if is_lock_stale "$lock_path"; then
      if [[ "$force" == "true" ]]; then
        steal_lock "$lock_path" "$request_id"
      else
        echo "ERROR: Lock is stale. Use --force-lock to acquire." >&2
        cat "$lock_path" >&2
        return 1
      fi
    else
      echo "ERROR: Lock is held by active process." >&2
      cat "$lock_path" >&2
      return 1
    fi
  fi

  # Create lock atomically
  local lock_json
  lock_json=$(create_lock_json "$lock_name" "$request_id" "$intent" "$intent_version")

  local temp_path="${lock_path}.${request_id}.tmp"
  echo "$lock_json" > "$temp_path"

  if ! mv -n "$temp_path" "$lock_path" 2>/dev/null; then
    rm -f "$temp_path"
    echo "ERROR: Failed to acquire lock (race condition)" >&2
    return 1
  fi

  echo "Lock acquired: $lock_name"
  return 0
}

release_lock() {
  local lock_name="$1"
  local request_id="$2"

  local lock_path="${LOCK_DIR}/${lock_name}.lock"

  if [[ ! -f "$lock_path" ]]; then
    echo "WARN: Lock file not found: $lock_path" >&2
    return 0
  fi

  # Verify we own the lock
  local held_by
  held_by=$(jq -r '.request_id' "$lock_path")

  if [[ "$held_by" != "$request_id" ]]; then
    echo "ERROR: Lock held by different request: $held_by" >&2
    return 1
  fi

  rm -f "$lock_path"
  echo "Lock released: $lock_name"
  return 0
}

create_lock_json() {
  local lock_name="$1"
  local request_id="$2"
  local intent="$3"
  local intent_version="$4"

  local now
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)

  jq -n \
    --arg lock_version "v1" \
    --arg lock_name "$lock_name" \
    --arg request_id "$request_id" \
    --arg actor "${ACTOR:-unknown}" \
    --arg intent "$intent" \
    --arg intent_version "$intent_version" \
    --arg host_id "$(hostname)" \
    --argjson pid "$$" \
    --arg created_at "$now" \
    --arg last_heartbeat_at "$now" \
    --argjson ttl_seconds "$DEFAULT_TTL" \
    '{
      lock_version: $lock_version,
      lock_name: $lock_name,
      request_id: $request_id,
      actor: $actor,
      intent: $intent,
      intent_version: $intent_version,
      host_id: $host_id,
      pid: $pid,
      created_at: $created_at,
      last_heartbeat_at: $last_heartbeat_at,
      ttl_seconds: $ttl_seconds,
      metadata: {}
    }'
}

is_lock_stale() {
  local lock_path="$1"

  local last_heartbeat ttl last_epoch now_epoch age
  last_heartbeat=$(jq -r '.last_heartbeat_at' "$lock_path")
  ttl=$(jq -r '.ttl_seconds' "$lock_path")
  last_epoch=$(date -d "$last_heartbeat" +%s 2>/dev/null || echo 0)
  now_epoch=$(date +%s)
  age=$((now_epoch - last_epoch))

  [[ $age -gt $ttl ]]
}

# Export functions for use in executor
export -f acquire_lock release_lock is_lock_stale

steal_lock() {
  local lock_path="$1"
  local request_id="$2"
  cat "$lock_path" >&2
  rm -f "$lock_path"
}
