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
set -u
cat >/dev/null
n=${AGENTLOOP_ITERATION:-0}
eval "file=\${FAKECLI_OUTPUT_$n:-\${FAKECLI_OUTPUT:-plain.txt}}"
cat "$(dirname "$0")/cli/$file"
if [ -n "${FAKECLI_TOUCH:-}" ]; then
	echo "iteration $n" >>"$FAKECLI_TOUCH"
fi
if [ "${FAKECLI_DONE_FILE_ON:-}" = "$n" ]; then
	echo done >DONE
fi
exit 0
