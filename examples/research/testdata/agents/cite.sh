#!/usr/bin/env bash
# A stand-in for an external CitationAgent: it reads the JSON task on stdin
# (saving it to $TASK_DUMP when set), and answers every finding it was asked
# about with one real citation and two that do not exist (a line past the
# end of the file, a missing file), which the research must drop.
task=$(cat)
if [ -n "$TASK_DUMP" ]; then printf '%s' "$task" > "$TASK_DUMP"; fi
ids=$(printf '%s' "$task" | grep -o '"target":"F[0-9]*"' | sed 's/.*"\(F[0-9]*\)"/\1/' | sort -u)
printf '{"findings":['
sep=""
for id in $ids; do
  printf '%s{"id":"%s","description":"%s is confirmed by the external agent","confidence":0.9,"citations":["watch/watcher.go:5","watch/watcher.go:9999","missing.go:1"]}' "$sep" "$id" "$id"
  sep=","
done
printf '],"usage":{"tokens":1200}}\n'
