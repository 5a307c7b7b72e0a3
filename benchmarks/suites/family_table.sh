#!/usr/bin/env bash
# The family x task x target x quantization table: every export measured against its own model
# (`edgebert bench --reference parent`) in one bench run, with the export's own parity check beside it.
#
#   nice -n 19 benchmarks/suites/family_table.sh WORK_DIR OUT_DIR [DATA_DIR]
#
# DATA_DIR (default ../shared/data) holds stsb/dev.csv, sst2/train.tsv and corpus/sotu.txt.gz. WORK_DIR keeps the
# models and exports (reused when present: delete a subdirectory to rebuild it); OUT_DIR receives the bench report.
# ROWS (default: every row) limits the exports made, and so benched, to these TARGET:QUANTIZATION pairs, e.g.
# ROWS="onnx:int8 tflite:int8" for the rows with integer kernels (the ones checked on ARM64 too); then
# `family_summary.py OUT --previous OLD_TABLE` keeps the other rows of an earlier table, marked as such.
# Models (none are committed):
# - embedders with real weights: the packaged teacher (BERT) and its exact re-layouts into DistilBERT, RoBERTa and
#   ELECTRA (relayout_teacher.py): each computes the teacher's embeddings, so each must keep the teacher's STS-B;
# - a real classifier: the teacher fine-tuned on SST-2 train (make_sst2_classifier.py), scored on its held-back rows;
# - a real fill-mask model: the teacher with a fitted MLM head (make_fill_mask_model.py);
# - a layer-shared ALBERT (as published) for each head: tiny random models (make_tiny_models.py), whose rows measure
#   fidelity (agreement with their own model, parity), not task quality: no real ALBERT weights are available offline.
# Targets: every family's deployment recipe (ONNX int8, TFLite int8, TF.js uint8); the teacher also through every
# other quantization of each target, the fill-mask model through the 16-bit ones. An export edgebert refuses (parity
# below its threshold) is listed in OUT_DIR/refused.tsv with the refusal's line: a row of the table too. Latency is measured with few repeats and is not a claim of this table.
set -euo pipefail

WORK=${1:?usage: family_table.sh WORK_DIR OUT_DIR [DATA_DIR]}
OUT=${2:?usage: family_table.sh WORK_DIR OUT_DIR [DATA_DIR]}
DATA=${3:-../shared/data}
PY=${PYTHON:-.venv/bin/python}
EB=${EDGEBERT:-.venv/bin/edgebert}
M=$WORK/models
X=$WORK/exports
mkdir -p "$M" "$X"
for f in stsb/dev.csv sst2/train.tsv corpus/sotu.txt.gz; do
  [ -f "$DATA/$f" ] || { echo "error: $DATA/$f is missing; pass the data directory as the third argument" >&2; exit 2; }
done

log() { echo "[$(date -u +%H:%M:%S)] $*"; }

# --- models ---------------------------------------------------------------------------------------------------
[ -d "$M/bert" ] || "$PY" -c "import shutil, sys; from edgebert.sources import default_model_dir; shutil.copytree(default_model_dir(), sys.argv[1])" "$M/bert"
for fam in distilbert roberta electra; do
  [ -d "$M/$fam" ] || { log "re-laying the teacher"; "$PY" benchmarks/suites/relayout_teacher.py teacher "$M"; break; }
done
[ -d "$M/sst2-classifier" ] || { log "fine-tuning the SST-2 classifier"; "$PY" benchmarks/suites/make_sst2_classifier.py --data "$DATA/sst2/train.tsv" --out "$M/sst2-classifier"; }
[ -d "$M/fill-mask" ] || { log "fitting the MLM head"; "$PY" benchmarks/suites/make_fill_mask_model.py --corpus "$DATA/corpus/sotu.txt.gz" --out "$M/fill-mask"; }
"$PY" benchmarks/suites/make_tiny_models.py "$M" --family albert

# --- exports --------------------------------------------------------------------------------------------------
REFUSED=$WORK/refused.tsv  # exports edgebert refused (parity below the threshold): rows of the table too
# A refusal of an earlier run in WORK_DIR stands (its export is not tried again) unless RETRY_REFUSED=1: re-run after
# a recipe change, delete the exports it concerns and set RETRY_REFUSED=1 when the change may rescue a refused row.
PREVIOUS=$WORK/refused.previous.tsv
if [ -f "$REFUSED" ] && [ "${RETRY_REFUSED:-0}" != 1 ]; then mv "$REFUSED" "$PREVIOUS"; else : > "$PREVIOUS"; fi
: > "$REFUSED"
export_one() {  # NAME MODEL TARGET QUANT [TASK]
  local name=$1 model=$2 target=$3 quant=$4 task=${5:-}
  if [ -n "${ROWS:-}" ] && [[ " $ROWS " != *" $target:$quant "* ]]; then return 0; fi
  [ -f "$X/$name/edgebert.json" ] && return 0
  if grep -q "^$name	" "$PREVIOUS"; then grep "^$name	" "$PREVIOUS" >> "$REFUSED"; log "refused in an earlier run: $name"; return 0; fi
  log "export $name"
  local output status=0
  output=$("$EB" export --model "$model" --target "$target" --quantize "$quant" ${task:+--task "$task"} --out "$X/$name" --force 2>&1) || status=$?
  if [ "$status" -ne 0 ]; then
    local reason
    reason=$(grep '^edgebert: ' <<<"$output" | tail -n 1)
    [ -n "$reason" ] || { echo "$output" | tail -n 20 >&2; exit "$status"; }  # a crash, not a refusal
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$model" "$target" "$quant" "$reason" >> "$REFUSED"
    log "  refused: $reason"
  fi
}
deploy=(onnx:int8 tflite:int8 tfjs:uint8)
for fam in bert distilbert roberta electra; do
  for tq in "${deploy[@]}"; do export_one "$fam-emb-${tq%%:*}-${tq##*:}" "$M/$fam" "${tq%%:*}" "${tq##*:}"; done
done
for tq in onnx:none onnx:fp16 tflite:none tflite:fp16 tfjs:none tfjs:float16; do
  export_one "bert-emb-${tq%%:*}-${tq##*:}" "$M/bert" "${tq%%:*}" "${tq##*:}"
done
for tq in onnx:fp16 tflite:fp16 tfjs:float16; do  # the fill-mask model's 16-bit rows (its int8 ones may be refused)
  export_one "bert-mask-${tq%%:*}-${tq##*:}" "$M/fill-mask" "${tq%%:*}" "${tq##*:}" fill-mask
done
for tq in "${deploy[@]}"; do
  export_one "bert-cls-${tq%%:*}-${tq##*:}" "$M/sst2-classifier" "${tq%%:*}" "${tq##*:}"
  export_one "bert-mask-${tq%%:*}-${tq##*:}" "$M/fill-mask" "${tq%%:*}" "${tq##*:}" fill-mask
  export_one "albert-mask-${tq%%:*}-${tq##*:}" "$M/albert-fill-mask" "${tq%%:*}" "${tq##*:}" fill-mask
  export_one "albert-cls-${tq%%:*}-${tq##*:}" "$M/albert-sequence-classification" "${tq%%:*}" "${tq##*:}"
  export_one "albert-tok-${tq%%:*}-${tq##*:}" "$M/albert-token-classification" "${tq%%:*}" "${tq##*:}"
done

# --- one bench run --------------------------------------------------------------------------------------------
log "bench"
"$EB" bench "$X"/*/ --reference parent --sts "$DATA/stsb/dev.csv" --sts-limit 500 --sts-limit-for tfjs=200 \
  --sst2 "$M/sst2-classifier/heldout.tsv" --sst2-limit 500 --seq-len 128 --warmup 1 --repeats 5 --texts-limit 0 \
  --timeout 3600 --out "$OUT" --force
cp "$REFUSED" "$OUT/refused.tsv"
log "done: $OUT/report.md ($(wc -l < "$REFUSED") exports refused: $OUT/refused.tsv)"
