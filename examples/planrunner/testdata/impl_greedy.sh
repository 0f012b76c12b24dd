#!/usr/bin/env bash
# Stand-in implementer that ignores its share: it claims one external call
# more than PLANRUNNER_EXTERNAL_BUDGET and every task of its phase.
cat > /dev/null
echo "{\"completed\":[1],\"external_calls\":$((PLANRUNNER_EXTERNAL_BUDGET + 1)),\"local_calls\":0}"
