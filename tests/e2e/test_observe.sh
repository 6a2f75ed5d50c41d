#!/usr/bin/env bash
# Observers during `infermeter run` against `infermeter serve`: the server's
# /metrics (KV usage, prefix-cache hit rate, queue), TCP states with and
# without keep-alive, GPU counters through a fake NVML, and endpoints that
# cannot be scraped (the run goes on, the reason is recorded).
. "$(dirname "$0")/lib.sh"
BUILD_DIR=$(dirname "$BIN")
RUN() { "$BIN" run --no-progress --quiet --url "$BASE" --warmup 0 --grace 5s --scrape-interval 200ms "$@"; }

start_server --time-scale 20 --max-num-seqs 4
# --- shared prefixes: the server's hit rate rises with the shared share
RUN --rate 20 --duration 3s --input-len 600 --output-len 100 --ignore-eos --out "$TMP/p0"
RUN --rate 20 --duration 3s --input-len 600 --output-len 100 --ignore-eos --prefix-groups 2 --prefix-len 512 \
  --prefix-share 0.9 --out "$TMP/p9"
h0=$(jq .metrics.server.prefix_cache_hit_rate "$TMP/p0/results.json")
h9=$(jq .metrics.server.prefix_cache_hit_rate "$TMP/p9/results.json")
check "no sharing: hit rate near 0 ($h0)" jq -n -e "$h0 < 0.05"
check "90 % shared prefixes: hit rate above 0.5 ($h9)" jq -n -e "$h9 > 0.5"
R="$TMP/p9/results.json"
check_eq "engine detected" "$(jq -r '.metrics.server.engines | join(",")' "$R")" "vllm-v1,infermeter"
check "scrapes happened (baseline + interval + final)" jq -e '.metrics.server.scrapes >= 10' "$R"
check "KV usage plausible" jq -e '.metrics.server.kv_cache_usage_max > 0 and .metrics.server.kv_cache_usage_max <= 1' "$R"
check "queue seen (4 seats, 20 req/s)" jq -e '.metrics.server.running_max >= 1' "$R"
check "server-side TTFT next to the client's" jq -e '.metrics.server.server_ttft_p50_ms > 0 and .metrics.server.client_ttft_p50_ms > 0' "$R"
check "generation tokens counted over the window" jq -e '.metrics.server.generation_tokens > 0' "$R"
check "time series aligned" jq -e '.series.server[0] | (.t_s|length) == (.kv_cache_usage|length) and (.t_s|length) == (.requests_waiting|length)' "$R"
check "the baseline comes before the run's start" jq -e '.series.server[0].t_s[0] < 0' "$R"
check "raw pages kept" grep -q '^# infermeter scrape url=' "$TMP/p9/scrapes.prom"
check "the responses' cached_tokens agree (client-side hit rate > 0.5)" jq -e '.metrics.cache_client.hit_rate > 0.5' "$R"
check "per-series values kept apart" jq -e '[.metrics.server.per_series[] | select(.concept == "kv_cache_usage")] | length >= 1' "$R"
check "the generator sampled itself" jq -e '.series.client[0] | (.t_s|length) >= 2 and (.cpu_share|length) == (.t_s|length)' "$R"

# --- TCP states: keep-alive off makes TIME_WAIT grow, on keeps it flat
RUN --rate 30 --duration 3s --input-len 16 --output-len 2 --keepalive off --out "$TMP/k0"
RUN --rate 30 --duration 3s --input-len 16 --output-len 2 --out "$TMP/k1"
check "keep-alive off: TIME_WAIT grows" jq -e '.metrics.tcp.time_wait_growing == true and .metrics.tcp.time_wait_max >= 20' "$TMP/k0/results.json"
check "keep-alive off: a warning" jq -e '.metrics.tcp.warning | test("TIME_WAIT")' "$TMP/k0/results.json"
check "keep-alive on: no growth" jq -e '.metrics.tcp.time_wait_growing == false' "$TMP/k1/results.json"
check "keep-alive on: requests per connection > 1" jq -e '.metrics.tcp.requests_per_connection > 1' "$TMP/k1/results.json"

# --- GPU counters through the fake NVML
INFERMETER_NVML_PATH="$BUILD_DIR/fake_nvml/libfake_nvml.so" \
  RUN --rate 10 --duration 2s --input-len 1000 --output-len 4 --kv-bytes-per-token 70272 --out "$TMP/g"
check "KV residency from the server's KV geometry, the declared bytes per token and NVML memory" \
  jq -e '.metrics.server.kv_residency != null and .metrics.server.kv_residency >= 0 and .metrics.server.kv_residency_max < 1 and .metrics.server.kv_cache_capacity_tokens > 0' "$TMP/g/results.json"
# The built-in server declares its model in /version: KV bytes per token
# come from the model description (docs/deepseek.md), with their source.
check "residency from the KV bytes of the model the server declares" \
  jq -e '.metrics.server.kv_residency != null and (.manifest.system.kv_bytes_per_token_per_gpu.source | test("/version"))' "$TMP/p9/results.json"
check "GPU figures from NVML" jq -e '.metrics.gpu.gpus == 2 and .metrics.gpu.memory_total_bytes > 0' "$TMP/g/results.json"
check "tokens per joule" jq -e '.metrics.gpu.tokens_per_joule > 0' "$TMP/g/results.json"
# Its numerator: the tokens that arrived in the window (the roofline's
# output tokens/s x the window), not the completed requests' (bench/gpu).
check "tokens per joule counts the window's tokens" jq -e '
  (.metrics.roofline.output_tok_per_s * .metrics.window.seconds) as $tok
  | (.metrics.gpu.tokens_per_joule * .metrics.gpu.energy_j - $tok | fabs) <= 1e-6 * $tok' "$TMP/g/results.json"
check "GPU series" jq -e '.series.gpu | (.t_s|length) >= 2 and (.power_w|length) == (.t_s|length)' "$TMP/g/results.json"
RUN --rate 10 --duration 1s --input-len 16 --output-len 4 --out "$TMP/ng" --no-gpu
check "GPU not requested: said so" jq -e '.metrics.gpu.not_available == "not requested"' "$TMP/ng/results.json"

# --- an endpoint that cannot be scraped: the run is unaffected
RUN --rate 10 --duration 1s --input-len 16 --output-len 4 --scrape "http://127.0.0.1:1/metrics" --out "$TMP/u"
rc=$?
check "run succeeds without metrics ($rc)" test $rc -eq 0 -o $rc -eq 3
check "reason recorded" jq -e '.metrics.server.not_collected | test("no scrape succeeded")' "$TMP/u/results.json"
stop_server

finish
