#!/usr/bin/env bash
# Stand-in implementer with a lot of output. By default it writes 5 MB of
# progress lines to stdout before its report (which completes every open
# task). With LOUD_STDERR set it writes 50 MB to stderr on one line instead
# and fails.
set -eu
req=$(cat)
if [ -n "${LOUD_STDERR:-}" ]; then
  head -c 50000000 /dev/zero | tr '\0' 'e' >&2
  exit 1
fi
yes 'progress: still proving the lemma, nothing to report yet' | head -c 5000000; echo
open=$(printf '%s' "$req" | grep -o '"n":[0-9]*,"text":"[^"]*","done":false' | grep -o '"n":[0-9]*' | cut -d: -f2 || true)
list=$(echo $open | tr ' ' ',')
echo "{\"completed\":[$list],\"local_calls\":1,\"mark_complete\":true}"
