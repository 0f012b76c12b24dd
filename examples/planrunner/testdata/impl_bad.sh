#!/usr/bin/env bash
# Stand-in implementer that reports a task its phase does not have.
cat > /dev/null
echo '{"completed":[1,99],"external_calls":0,"local_calls":0}'
