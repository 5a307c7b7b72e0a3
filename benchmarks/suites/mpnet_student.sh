#!/usr/bin/env bash
# all-mpnet-base-v2 distilled into a ≤ 8 MB BERT-shaped student of its own tokenizer (distill across tokenizers,
# docs/distill.md#across-tokenizers), given a supervised stage on STS-B *train*, exported to ONNX int8 and benched
# against the packaged all-MiniLM-L6-v2 and all-mpnet-base-v2 on STS-B dev.
#
#   EDGEBERT_MPNET=DIR [SEEDS=0,1] nice -n 5 benchmarks/suites/mpnet_student.sh SMALL_DISTILLED WORK_DIR OUT_DIR [DATA_DIR] [STEPS]
#
# EDGEBERT_MPNET: all-mpnet-base-v2 (benchmarks/suites/fetch_mpnet.py DIR). SMALL_DISTILLED: the `small` preset's distilled
# student before pruning (`edgebert pipeline --preset small` writes it to WORK/distill/student: 3 of the packaged
# teacher's 6 layers, E = 128 factorised embeddings, 9.3 M parameters, 4.0 M of them the word table). DATA_DIR:
# ../shared/data.
# 1. the training text and the checkpoint pairs (mpnet_student_data.py: STS-B *train* sentences, SST-2 and State of
#    the Union samples; 1,000 STS-B train pairs held out), never STS-B dev;
# 2. 10 % of each layer's FFN pruned (1,536 -> 1,382, ranked on the training text) and the vocabulary trimmed to the
#    20,900 tokens DATA_DIR's English text uses most, every single character among them (30,522 -> 20,900: ≤ 8 MB at
#    int8; on held-out text no [UNK], 0.18 % of the words split into other pieces). The size budget is taken mostly
#    from rare tokens, a little from the FFN, none from the heads;
# 3. the trimmed student learns all-mpnet-base-v2's sentence embeddings and in-batch similarities (STEPS steps of 64
#    texts, the checkpoint of every 500 steps judged on the held-out train pairs);
# 4. a supervised stage on STS-B train's labelled pairs (`edgebert finetune`: CoSENT, batch 16, 10 % warmup, weight
#    decay 0.01, 8 epochs at 1e-4, once per seed of SEEDS; the epoch or the average of the last epochs over the seeds
#    kept by the held-out train pairs, which are not trained on);
# 5. the same stage again on all 5,749 train pairs, keeping what step 4 kept (nothing held out: the choice is step 4's);
# 6. ONNX int8 exports, and one bench run beside the packaged teacher and all-mpnet-base-v2 on STS-B dev.
set -euo pipefail
INIT=${1:?usage: mpnet_student.sh SMALL_DISTILLED WORK_DIR OUT_DIR [DATA_DIR] [STEPS]}
WORK=${2:?usage: mpnet_student.sh SMALL_DISTILLED WORK_DIR OUT_DIR [DATA_DIR] [STEPS]}
OUT=${3:?usage: mpnet_student.sh SMALL_DISTILLED WORK_DIR OUT_DIR [DATA_DIR] [STEPS]}
DATA=${4:-../shared/data}
STEPS=${5:-2000}
SEEDS=${SEEDS:-0,1}
MPNET=${EDGEBERT_MPNET:?set EDGEBERT_MPNET to the all-mpnet-base-v2 directory (benchmarks/suites/fetch_mpnet.py DIR)}
PY=${PYTHON:-.venv/bin/python}
EB=${EDGEBERT:-.venv/bin/edgebert}
log() { echo "[$(date -u +%H:%M:%S)] $*"; }
mkdir -p "$WORK"

[ -f "$WORK/data/sentences.txt" ] || "$PY" benchmarks/suites/mpnet_student_data.py "$DATA" "$WORK/data"
[ -f "$WORK/trimmed/edgebert.json" ] || { log "pruning 10 % of the FFN, trimming the vocabulary"; "$EB" compress \
  --model "$INIT" --prune-ffn 0.1 --calibration "$WORK/data/sentences.txt" --trim-vocab "$DATA/corpus/sotu.txt.gz" \
  "$DATA/stsb/train.csv" "$DATA/sst2/train.tsv" --vocab-max-size 20900 --out "$WORK/trimmed"; }
[ -f "$WORK/student/edgebert.json" ] || { log "distilling all-mpnet-base-v2 into it"; "$EB" distill --teacher "$MPNET" \
  --student-init "$WORK/trimmed" --across-tokenizers --corpus "$WORK/data/sentences.txt" --out "$WORK/student" --resume \
  --alpha-pooled 0.05 --alpha-sim 1 --steps "$STEPS" --batch-size 64 --lr 2e-4 --seq-len 128 \
  --eval-sts "$WORK/data/eval-sts.csv" --eval-steps 500 --save-steps 500; }
# STS-B's csv files have no header row; the held-out pairs (eval-sts.csv) are rows of train.csv
SUPERVISED=(--model "$WORK/student" --data "$DATA/stsb/train.csv" --header sentence1,sentence2,score --loss cosent
  --batch-size 16 --warmup-ratio 0.1 --weight-decay 0.01 --lr 1e-4 --seeds "$SEEDS")
[ -f "$WORK/supervised/edgebert.json" ] || { log "supervised stage on STS-B train"; "$EB" finetune "${SUPERVISED[@]}" \
  --held-out-file "$WORK/data/eval-sts.csv" --epochs 8 --out "$WORK/supervised"; }
# what step 4 kept, as EPOCHS [SOUP_FROM]: epoch 6 -> 6, the soup of epochs 5-8 -> 8 5 (the start kept: nothing to repeat)
KEPT=$("$PY" -c 'import json, sys; first, last = json.load(open(sys.argv[1]))["finetune"]["kept"]["epochs"]
sys.exit("step 4 kept the start: no epoch to repeat") if last == 0 else print(last, first if first < last else "")' \
  "$WORK/supervised/edgebert.json")
read -r EPOCHS SOUP_FROM <<< "$KEPT"
[ -f "$WORK/supervised-all/edgebert.json" ] || { log "supervised stage on every STS-B train pair, $EPOCHS epochs"\
"${SOUP_FROM:+, the average of epochs $SOUP_FROM-$EPOCHS}"; "$EB" finetune "${SUPERVISED[@]}" --held-out 0 \
  --epochs "$EPOCHS" ${SOUP_FROM:+--soup-from "$SOUP_FROM"} --out "$WORK/supervised-all"; }
for m in supervised supervised-all; do
  [ -f "$WORK/$m-onnx-int8/edgebert.json" ] || { log "export $m"; "$EB" export --model "$WORK/$m" --target onnx \
    --quantize int8 --out "$WORK/$m-onnx-int8"; }
done
log "bench"
"$EB" bench minilm=default mpnet="$MPNET" student="$WORK/student" supervised="$WORK/supervised" \
  supervised-onnx-int8="$WORK/supervised-onnx-int8" supervised-all="$WORK/supervised-all" \
  supervised-all-onnx-int8="$WORK/supervised-all-onnx-int8" --reference minilm --sts "$DATA/stsb/dev.csv" \
  --seq-len 128 --batch 1 --threads 1 --warmup 2 --repeats 10 --out "$OUT" --force
log "done: $OUT/report.md"
