#!/usr/bin/env bash
# deploy/prometheus: the alert rules are valid (promtool check rules), their
# unit tests pass (promtool test rules: a firing and a non-firing case per
# alert), every one of the seven blind spots has an alert, and each alert
# has the labels and annotations an on-call reader needs.
# promtool comes with Debian's prometheus package (scripts/deps.sh).
set -euo pipefail
cd "$(dirname "$0")/../../deploy/prometheus"
command -v promtool >/dev/null || { echo "FAIL: promtool not installed (Debian package prometheus; scripts/deps.sh)"; exit 1; }
promtool check rules alerts.yml alerts_sglang.yml
promtool test rules alerts_test.yml
fail=0
for a in InfermeterKVCacheNearFull InfermeterGPUMemoryNearFull InfermeterTokenLatencyP99High \
         InfermeterPreemptionsRising InfermeterTimeWaitGrowing InfermeterEffectiveRateLow \
         InfermeterClientSaturated InfermeterPrefixHitRateCollapse; do
  grep -q "alert: $a\$" alerts.yml || { echo "FAIL: alerts.yml lacks $a"; fail=1; }
  grep -q "alertname: $a\$" alerts_test.yml || { echo "FAIL: alerts_test.yml never tests $a"; fail=1; }
done
# Each rule: severity and source labels, summary and description.
for f in alerts.yml alerts_sglang.yml; do
  n=$(grep -c '^      - alert:' "$f")
  for k in 'severity:' 'source:' 'summary:' 'description:'; do
    m=$(grep -c "^          $k" "$f")
    [ "$m" = "$n" ] || { echo "FAIL: $f: $n alerts but $m with $k"; fail=1; }
  done
done
exit $fail
