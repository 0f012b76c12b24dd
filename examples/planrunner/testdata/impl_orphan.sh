#!/usr/bin/env bash
# Stand-in implementer that leaves a child behind and hangs: it starts a
# background sleep, writes its pid to $ORPHAN_PID, then sleeps until it is
# ended (for the --phase-timeout test: the whole process group must go).
cat > /dev/null
sleep 300 &
echo "$!" > "$ORPHAN_PID.tmp" && mv "$ORPHAN_PID.tmp" "$ORPHAN_PID"
sleep 300
