#!/usr/bin/env bash
# A stand-in for an external agent that fails after writing 50 MB to
# stderr on one line.
cat > /dev/null
head -c 50000000 /dev/zero | tr '\0' 'e' >&2
exit 1
