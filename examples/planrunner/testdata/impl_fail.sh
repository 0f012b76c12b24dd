#!/usr/bin/env bash
# Stand-in implementer that always fails.
cat > /dev/null
echo "lean server crashed on phase $PLANRUNNER_PHASE" >&2
exit 3
