#!/usr/bin/env bash
# What a GPU user runs, timed: documents per second and the share of the time spent scoring.
#
#   scripts/gpu_check.sh [--model HF_ID_OR_DIR] [--limit N] [--task TASK] [--tp N] [--dp N] [--skip-vllm]
#
# 1. --model hf on cuda:0 in bf16 with --batch_size auto (scorers: setting scorer_device, default auto)
# 2. --model hf with parallelize=True (the model sharded over every GPU: the scorers go to the CPU)
# 3. --model vllm with tensor_parallel_size and data_parallel_size (scorers on a GPU vLLM leaves free, else CPU)
# 4. accelerate launch over every GPU (data parallel; each rank scores on its own GPU)
# Each run is made twice, with --predict_only (generation alone) and with scoring; the scoring share
# is 1 - generation-only time / full time. Model: --model or $DOMSUM_GPU_MODEL (default
# HuggingFaceTB/SmolLM2-135M-Instruct); data: $DOMSUM_DATA_DIR, default the bundled sample mirror
# (lm_eval_tasks/sample_data, three documents a split: raise --limit with a real mirror).
# Scorers' device: $DOMSUM_SCORER_DEVICE (auto, cpu, cuda:N) applies to every run.
# Exits 2 with one line when there is no CUDA GPU or no vllm (--skip-vllm runs the rest).
set -euo pipefail

MODEL="${DOMSUM_GPU_MODEL:-HuggingFaceTB/SmolLM2-135M-Instruct}"
LIMIT=20
TASK=domainsum_cnndm
TP=""
DP=""
SKIP_VLLM=0
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --limit) LIMIT="$2"; shift 2 ;;
    --task) TASK="$2"; shift 2 ;;
    --tp) TP="$2"; shift 2 ;;
    --dp) DP="$2"; shift 2 ;;
    --skip-vllm) SKIP_VLLM=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

GPUS=$(python -c "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)" 2>/dev/null || echo 0)
if [ "$GPUS" -lt 1 ]; then
  echo "gpu_check: no CUDA GPU visible to PyTorch; run this on a GPU machine" >&2; exit 2
fi
if [ "$SKIP_VLLM" -eq 0 ] && ! python -c "import vllm" 2>/dev/null; then
  echo "gpu_check: vllm is not installed (pip install vllm), or pass --skip-vllm" >&2; exit 2
fi
INCLUDE="$(python -m lm_eval_tasks)"
export DOMSUM_DATA_DIR="${DOMSUM_DATA_DIR:-$INCLUDE/sample_data}"
# each configuration generates twice (alone, then scored): neither may answer from the other's
# generation journal or reference-embedding cache, or the scoring share would be understated
export DOMSUM_GENERATION_JOURNAL=off DOMSUM_SCORE_CACHE=off
TP="${TP:-1}"
DP="${DP:-$(( GPUS / TP > 0 ? GPUS / TP : 1 ))}"
OUT="$(mktemp -d -t domsum-gpu-check.XXXXXX)"
echo "gpu_check: $GPUS GPU(s), model $MODEL, task $TASK, --limit $LIMIT, data $DOMSUM_DATA_DIR, outputs $OUT"

# timed NAME -- COMMAND...: run COMMAND once generation-only and once scored; print the figures
timed() {
  local name="$1"; shift 2
  local t0 t1 t2
  t0=$(date +%s.%N)
  "$@" --predict_only --log_samples --output_path "$OUT/$name.gen" > "$OUT/$name.gen.log" 2>&1 \
    || { echo "$name: generation-only run failed, see $OUT/$name.gen.log"; return 0; }
  t1=$(date +%s.%N)
  "$@" --log_samples --output_path "$OUT/$name" > "$OUT/$name.log" 2>&1 \
    || { echo "$name: run failed, see $OUT/$name.log"; return 0; }
  t2=$(date +%s.%N)
  python - "$name" "$OUT/$name" "$t0" "$t1" "$t2" <<'PY'
import json, sys
from pathlib import Path
name, folder, t0, t1, t2 = sys.argv[1], Path(sys.argv[2]), *map(float, sys.argv[3:])
res = json.loads(max(folder.rglob("results_*.json"), key=lambda p: p.stat().st_mtime).read_text())
docs = sum(v["effective"] for v in res["n-samples"].values())
used = {t: c["metadata"].get("settings_used", {}).get("scorer_device", {}).get("value")
        for t, c in res["configs"].items()}
gen, full = t1 - t0, t2 - t1
print(f"{name}: {docs} documents, {docs / full:.2f} documents/s scored ({docs / gen:.2f} generation only), "
      f"scoring share {max(0.0, 1 - gen / full):.0%}, scorers on {sorted(set(map(str, used.values())))}")
PY
}

COMMON=(--include_path "$INCLUDE" --tasks "$TASK" --limit "$LIMIT" --gen_kwargs max_gen_toks=128)
timed hf_bf16 -- lm_eval --model hf --model_args "pretrained=$MODEL,dtype=bfloat16" --device cuda:0 \
  --batch_size auto "${COMMON[@]}"
timed hf_parallelize -- lm_eval --model hf --model_args "pretrained=$MODEL,dtype=bfloat16,parallelize=True" \
  --batch_size auto "${COMMON[@]}"
if [ "$SKIP_VLLM" -eq 0 ]; then
  timed "vllm_tp${TP}_dp${DP}" -- lm_eval --model vllm \
    --model_args "pretrained=$MODEL,dtype=bfloat16,tensor_parallel_size=$TP,data_parallel_size=$DP,gpu_memory_utilization=0.8" \
    --batch_size auto "${COMMON[@]}"
fi
timed "accelerate_${GPUS}gpu" -- accelerate launch --num_processes "$GPUS" $([ "$GPUS" -gt 1 ] && echo --multi_gpu) \
  -m lm_eval --model hf --model_args "pretrained=$MODEL,dtype=bfloat16" --batch_size auto "${COMMON[@]}"
