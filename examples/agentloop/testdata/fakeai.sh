#!/usr/bin/env bash
# fakeai.sh stands in for an AI coding CLI in agentloop's tests. It reads the
# prompt on stdin and appends a line to $FAKEAI_LOG; then, by the iteration
# agentloop gives it in AGENTLOOP_ITERATION:
#   FAKEAI_FAIL_ON="4 5 6"  exit 1 on these iterations
#   FAKEAI_HANG_ON="6"      start a child process (its pid in $FAKEAI_CHILD),
#                           create $FAKEAI_MARKER and wait for the child,
#                           which sleeps for five minutes
#   FAKEAI_TRAP_TERM        with FAKEAI_HANG_ON: ignore SIGTERM (the child
#                           too), creating this file when it arrives
#   FAKEAI_PROMPT           file that receives the latest prompt
#   FAKEAI_ECHO=1           say something on stdout
set -u
prompt=$(cat)
n=${AGENTLOOP_ITERATION:-?}
printf 'iteration %s of %s (%s): %d bytes\n' "$n" "${AGENTLOOP_ITERATION_LIMIT:-?}" \
	"${AGENTLOOP_PROCEDURE:-?}" "${#prompt}" >>"${FAKEAI_LOG:-fakeai.log}"
if [ -n "${FAKEAI_PROMPT:-}" ]; then
	printf '%s\n' "$prompt" >"$FAKEAI_PROMPT"
fi
if [ "${FAKEAI_ECHO:-}" = 1 ]; then
	echo "fakeai: working on iteration $n"
fi
for i in ${FAKEAI_HANG_ON:-}; do
	if [ "$i" = "$n" ]; then
		if [ -n "${FAKEAI_TRAP_TERM:-}" ]; then
			trap ': >"$FAKEAI_TRAP_TERM"' TERM
			(trap '' TERM; exec sleep 300) &
		else
			sleep 300 &
		fi
		echo $! >"$FAKEAI_CHILD"
		: >"$FAKEAI_MARKER"
		# A trapped signal ends wait early: wait again, for the child.
		until wait; do :; done
		exit 0
	fi
done
for i in ${FAKEAI_FAIL_ON:-}; do
	if [ "$i" = "$n" ]; then
		echo "fakeai: failing iteration $n" >&2
		exit 1
	fi
done
exit 0
