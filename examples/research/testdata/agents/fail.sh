#!/usr/bin/env bash
# A stand-in for an external agent that crashes.
cat > /dev/null
echo "boom: the agent crashed" >&2
exit 1
