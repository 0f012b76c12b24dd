#!/bin/sh
# fakecli.sh stands in for a real AI CLI in agentloop's tests and README: it
# reads the prompt on stdin and prints one of the sample outputs of
# testdata/cli, as the CLI named there would (Claude Code's JSON, Codex's
# JSONL events, Gemini CLI's JSON), chosen by the iteration agentloop gives
# it in AGENTLOOP_ITERATION:
#   FAKECLI_OUTPUT=claude.json     the sample to print
#   FAKECLI_OUTPUT_2=gemini.json   the sample to print on iteration 2
#   FAKECLI_TOUCH=work.txt         append a line to this file (a change to
#                                  the workspace)
#   FAKECLI_DONE_FILE_ON=2         write the file DONE on this iteration
#   FAKECLI_STDERR=gemini-error.stderr  the sample to print on stderr
#   FAKECLI_EXIT=1                 exit with this status
#   FAKECLI_HANG=1                 hang after printing, until killed (an
#                                  AI CLI waiting for the network)
set -u
cat >/dev/null
n=${AGENTLOOP_ITERATION:-0}
eval "file=\${FAKECLI_OUTPUT_$n:-\${FAKECLI_OUTPUT:-plain.txt}}"
[ "$file" = - ] || cat "$(dirname "$0")/cli/$file"
if [ -n "${FAKECLI_STDERR:-}" ]; then
	cat "$(dirname "$0")/cli/$FAKECLI_STDERR" >&2
fi
if [ -n "${FAKECLI_HANG:-}" ]; then
	sleep 300
fi
if [ -n "${FAKECLI_TOUCH:-}" ]; then
	echo "iteration $n" >>"$FAKECLI_TOUCH"
fi
if [ "${FAKECLI_DONE_FILE_ON:-}" = "$n" ]; then
	echo done >DONE
fi
exit "${FAKECLI_EXIT:-0}"
