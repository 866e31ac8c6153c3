#!/bin/sh
# Control "fix-now" (must pass): the golden fix with every wait removed, declared at once, while
# backlogs still drain. The runner hands in the bundle's solve.sh; waits are wait-until-healthy,
# sleep, kubectl rollout status and kubectl wait. A wait marked as coming before a fault that fires
# in the agent's window stays: without it the fix would repair that fault before its injection,
# which undoes the repair, and no agent could pass that way (arenac/render/oracle.py, ONSET_WAIT_MARK).
WAITS='^[[:space:]]*(wait-until-healthy|sleep)([[:space:]]|$)|^[[:space:]]*kubectl[[:space:]]+(rollout[[:space:]]+status|wait)([[:space:]]|$)'
ONSET_WAIT_MARK="# until a fault fires in the agent's window"
if [ ! -f solve.sh ]; then
  echo "[adversary] fix-now: no solve.sh was handed in"; declare_repair_complete; exit 0
fi
grep -E "$WAITS" solve.sh | grep -v -F "$ONSET_WAIT_MARK" | sed 's/^/[adversary] fix-now: removed wait: /'
grep -E "$WAITS" solve.sh | grep -F "$ONSET_WAIT_MARK" | sed 's/^/[adversary] fix-now: kept wait: /'
awk -v waits="$WAITS" -v mark="$ONSET_WAIT_MARK" '!($0 ~ waits) || index($0, mark) > 0' solve.sh > fix-now-solve.sh
echo "[adversary] fix-now: running the golden fix without its waits:"
grep -v -E '^[[:space:]]*(#|$)' fix-now-solve.sh | sed 's/^/[adversary]   /'
sh fix-now-solve.sh
code=$?
echo "[adversary] fix-now: the fix exited $code"
# solve.sh declares; declaring again is harmless and covers a fix that stopped early
declare_repair_complete
