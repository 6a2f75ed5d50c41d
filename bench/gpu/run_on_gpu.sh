#!/usr/bin/env bash
# The device run of bench/gpu (README.md there): on the GPU machine, from the
# folder bundle.sh filled, in one go:
#   1. unpack the carried .debs (dpkg -x) into a folder for LD_LIBRARY_PATH
#      and stop within seconds if `ldd infermeter` finds anything missing;
#   2. probe.py: what NVML answers to each call observe/gpu.c makes, and the
#      device-to-device copy bandwidth (the roofline's ceiling here);
#   3. nvidia-smi sampling every 100 ms to a CSV, all through the run;
#   4. server.py on the GPU (the shrunk DeepSeek-V3 shape, bf16), step log on;
#   5. infermeter run: a rate sweep to saturation (rate=auto: a closed-loop
#      throughput stage at the server's slot count, then rates below it),
#      NVML sampling on, --model-config of the served shape, --hardware H200;
#   6. server.py --self-check on the device (decode vs prefill, MoE vs a loop);
#   7. everything into $OUT as one tar.gz (+ the log beside it).
#
#   run_on_gpu.sh [--toy]     --toy: CPU dry run here (toy model, short stages)
#
# Budget: about 3 minutes on the H200 after the machine has started.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
toy=0
[ "${1:-}" = --toy ] && toy=1
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
w=$(mktemp -d /tmp/gpurun.XXXXXX)
log=$w/run.log
t_start=$(date +%s)
say() { echo "[$(date -u +%T) +$(($(date +%s) - t_start))s] $*" | tee -a "$log"; }
pids=()
finish() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  # At most 8 files come back: one archive and the log.
  tar -C "$w" -czf "$out/gpu-run.tar.gz" --exclude=libs . 2>/dev/null
  cp "$log" "$out/run.log"
  say "done; $out: $(ls -l "$out" | tail -n +2 | awk '{print $5, $9}' | tr '\n' ' ')"
}
trap finish EXIT

py=${PYTHON:-python3}
if ! "$py" -c 'import torch, aiohttp' 2>/dev/null; then
  py=/usr/bin/python3
  "$py" -c 'import torch, aiohttp' || { say "FAIL: no python3 with torch and aiohttp"; exit 2; }
fi

# ---- 1. libraries
say "unpacking $(ls "$here"/debs/*.deb | wc -l) packages"
mkdir -p "$w/libs"
for d in "$here"/debs/*.deb; do
  if command -v dpkg >/dev/null; then
    dpkg -x "$d" "$w/libs" || { say "FAIL: dpkg -x $d"; exit 3; }
  else
    say "FAIL: no dpkg on this machine"
    exit 3
  fi
done
libpath=$w/libs/usr/lib/x86_64-linux-gnu:$w/libs/lib/x86_64-linux-gnu
im_env=(env "LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
missing=$("${im_env[@]}" ldd "$here/infermeter" 2>&1 | grep -E 'not found|version .* not found')
if [ -n "$missing" ]; then
  say "FAIL: infermeter cannot start here:"
  echo "$missing" | tee -a "$log"
  exit 3
fi
"${im_env[@]}" "$here/infermeter" --version 2>&1 | head -n 2 | tee -a "$log"
# The NVML infermeter will load: the one nvidia-smi uses.
nvml=$(ldconfig -p 2>/dev/null | awk '/libnvidia-ml\.so\.1 / {print $NF; exit}')
for c in /usr/local/nvidia/lib64/libnvidia-ml.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1; do
  [ -z "$nvml" ] && [ -e "$c" ] && nvml=$c
done
[ "$toy" = 1 ] && nvml=${INFERMETER_NVML_PATH:-}
say "NVML: ${nvml:-not found}"
[ -n "$nvml" ] && im_env+=("INFERMETER_NVML_PATH=$nvml")

# ---- 2. NVML probe and copy bandwidth (before the server takes the GPU)
if [ "$toy" = 1 ]; then
  "$py" "$here/probe.py" "$w/probe.json" --no-copy ${nvml:+--nvml "$nvml"} 2>&1 | tee -a "$log"
else
  command -v nvidia-smi >/dev/null && nvidia-smi 2>&1 | tee "$w/nvidia-smi.txt" | head -n 12 &&
    nvidia-smi -q >"$w/nvidia-smi-q.txt" 2>&1
  timeout 60 "$py" "$here/probe.py" "$w/probe.json" --nvml "${nvml:-libnvidia-ml.so.1}" 2>&1 | tee -a "$log"
fi

# ---- 3. nvidia-smi every 100 ms (the fields this driver knows; UTC stamps)
fields=timestamp,power.draw,power.draw.average,power.draw.instant,memory.used,memory.total,memory.reserved,utilization.gpu,utilization.memory,clocks.sm,temperature.gpu
if command -v nvidia-smi >/dev/null; then
  if ! nvidia-smi --query-gpu=$fields --format=csv >/dev/null 2>&1; then
    fields=timestamp,power.draw,memory.used,memory.total,utilization.gpu,utilization.memory,clocks.sm
  fi
  TZ=UTC nvidia-smi --query-gpu=$fields --format=csv -lms 100 >"$w/smi.csv" 2>>"$log" &
  pids+=($!)
  say "nvidia-smi sampling: $fields"
fi

# ---- 4. the server
port=18000
if [ "$toy" = 1 ]; then
  srv=(--device cpu --toy --slots 16 --max-ctx 1024)
  conc=8 dur=6s warm=2s in_len=64 out_len=24 grace=5s
else
  srv=(--device cuda --slots 128 --max-ctx 2048)
  conc=128 dur=15s warm=3s in_len=256 out_len=128 grace=8s
fi
"$py" "$here/server.py" "${srv[@]}" --write-model-config "$w/model.json"
"$py" -c 'import time, json; print(json.dumps({"mono": time.monotonic(), "wall": time.time()}))' >"$w/clock.json"
PYTHONUNBUFFERED=1 "$py" "$here/server.py" "${srv[@]}" --port $port --step-log "$w/steps.jsonl" \
  >"$w/server.log" 2>&1 &
pids+=($!)
srv_pid=$!
ready=0
for _ in $(seq 1 180); do
  if "$py" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=1)" 2>/dev/null; then
    ready=1
    break
  fi
  kill -0 $srv_pid 2>/dev/null || break
  sleep 0.5
done
cat "$w/server.log" | tee -a "$log"
[ $ready = 1 ] || { say "FAIL: server did not come up"; exit 4; }
say "server ready"

# ---- 5. the sweep
say "infermeter run: rate=auto (closed loop $conc, then 4 rates below), $dur per stage"
"${im_env[@]}" timeout 200 "$here/infermeter" run --url http://127.0.0.1:$port \
  --backend openai-completions --model-config "$w/model.json" --hardware H200 \
  --sweep rate=auto --sweep-steps 4 --concurrency $conc --sweep-all \
  --duration $dur --warmup $warm --grace $grace --input-len $in_len --output-len $out_len \
  --ignore-eos --no-scrape --scrape-interval 250ms --seed 34 --no-progress \
  --tag server=bench/gpu/server.py --out "$w/run" 2>&1 | tee -a "$log"
say "infermeter exit ${PIPESTATUS[0]}"
kill $srv_pid 2>/dev/null
wait $srv_pid 2>/dev/null

# ---- 6. the served model against itself on this device: cached decode vs a
# full prefill, the batched MoE vs expert by expert; in float32 (tolerance
# 1e-4), then in the served bf16 (3e-2)
for dt in float32 bfloat16; do
  echo "self-check $dt:" | tee -a "$log"
  timeout 60 "$py" "$here/server.py" "${srv[@]}" --dtype $dt --self-check 2>&1 | tee -a "$log"
done
# Drop the HTML report from the archive (large, and rebuilt by `infermeter report`).
rm -f "$w/run/report.html"
