#!/bin/sh
# Control "fix-now" (must pass): the golden fix with every wait removed, declared at once, while
# backlogs still drain. The runner hands in the bundle's solve.sh; waits are wait-until-healthy,
# sleep, kubectl rollout status and kubectl wait.
WAITS='^[[:space:]]*(wait-until-healthy|sleep)([[:space:]]|$)|^[[:space:]]*kubectl[[:space:]]+(rollout[[:space:]]+status|wait)([[:space:]]|$)'
if [ ! -f solve.sh ]; then
  echo "[adversary] fix-now: no solve.sh was handed in"; declare_repair_complete; exit 0
fi
grep -E "$WAITS" solve.sh | sed 's/^/[adversary] fix-now: removed wait: /'
grep -v -E "$WAITS" solve.sh > fix-now-solve.sh
echo "[adversary] fix-now: running the golden fix without its waits:"
grep -v -E '^[[:space:]]*(#|$)' fix-now-solve.sh | sed 's/^/[adversary]   /'
sh fix-now-solve.sh
code=$?
echo "[adversary] fix-now: the fix exited $code"
# solve.sh declares; declaring again is harmless and covers a fix that stopped early
declare_repair_complete
