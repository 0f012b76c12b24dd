#!/usr/bin/env bash
# A stand-in for an external agent that leaves a child behind and hangs:
# it starts a background sleep, writes its pid to $ORPHAN_DIR/$RESEARCH_TASK.pid
# and sleeps until it is ended (for --task-timeout: the whole process group
# must go).
cat > /dev/null
sleep 300 &
pidfile=$ORPHAN_DIR/$RESEARCH_TASK.pid
echo "$!" > "$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"
sleep 300
