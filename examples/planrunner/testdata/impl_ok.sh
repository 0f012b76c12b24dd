#!/usr/bin/env bash
# Stand-in implementer (planrunner/v1): completes every open task of its
# phase, making external calls up to its share (PLANRUNNER_EXTERNAL_BUDGET)
# and local fallback calls for the rest. It logs "start"/"end" lines to
# $PLANRUNNER_TEST_LOG. With HANG_PHASE set to its phase number it signals
# $HANG_FIFO and hangs instead (for the interrupt test). With IMPL_TOKENS
# set, it reports that many tokens used.
set -euo pipefail
req=$(cat)
log=${PLANRUNNER_TEST_LOG:-/dev/null}
echo "start iteration=$PLANRUNNER_ITERATION wave=$PLANRUNNER_WAVE phase=$PLANRUNNER_PHASE" >> "$log"
if [ "${HANG_PHASE:-}" = "$PLANRUNNER_PHASE" ]; then
  echo "hanging" > "$HANG_FIFO"
  sleep 60
fi
open=$(printf '%s' "$req" | grep -o '"n":[0-9]*,"text":"[^"]*","done":false' | grep -o '"n":[0-9]*' | cut -d: -f2 || true)
budget=$PLANRUNNER_EXTERNAL_BUDGET
ext=0; loc=0; list=""
for n in $open; do
  if [ "$ext" -lt "$budget" ]; then ext=$((ext+1)); else loc=$((loc+1)); fi
  list="$list${list:+,}$n"
done
echo "end iteration=$PLANRUNNER_ITERATION wave=$PLANRUNNER_WAVE phase=$PLANRUNNER_PHASE external=$ext budget=$budget" >> "$log"
echo "working on phase $PLANRUNNER_PHASE"
echo "{\"completed\":[$list],\"external_calls\":$ext,\"local_calls\":$loc,\"mark_complete\":true${IMPL_TOKENS:+,\"tokens\":$IMPL_TOKENS}}"
