#!/usr/bin/env bash
# Stand-in implementer that leaves a child behind and hangs: it starts a
# background sleep, writes its pid to $ORPHAN_DIR/<phase>.pid, then sleeps until it is
# ended (for the --phase-timeout test: the whole process group must go).
cat > /dev/null
sleep 300 &
pidfile=$ORPHAN_DIR/$PLANRUNNER_PHASE.pid
echo "$!" > "$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"
sleep 300
