#!/usr/bin/env bash
# A classifier of a newer family distilled into a smaller classifier of its family, in a short run:
# tiny random ModernBERT, DeBERTa-v2 and XLNet sequence classifiers (tests/model_zoo.py: hidden 32, 2 layers, tokenizers
# trained on a few dozen lines, no real weights offline) fine-tuned 600 steps on SST-2 train, distilled into one-layer
# students on other SST-2 train sentences (checkpoint chosen on 500 train rows), the student exported to ONNX int8,
# and one bench per family on the 1,000 held-back rows.
#
#   nice -n 19 benchmarks/suites/family_classifiers.sh WORK_DIR OUT_DIR [DATA_DIR]
#
# FAMILIES (default "modernbert deberta-v2 xlnet") runs some of them; the held-back split is the same for all (seed 0).
set -euo pipefail
WORK=${1:?usage: family_classifiers.sh WORK_DIR OUT_DIR [DATA_DIR]}
OUT=${2:?usage: family_classifiers.sh WORK_DIR OUT_DIR [DATA_DIR]}
DATA=${3:-../shared/data}
PY=${PYTHON:-.venv/bin/python}
EB=${EDGEBERT:-.venv/bin/edgebert}
[ -f "$DATA/sst2/train.tsv" ] || { echo "error: $DATA/sst2/train.tsv is missing; pass the data directory as the third argument" >&2; exit 2; }
mkdir -p "$WORK" "$OUT"
read -r -a FAMS <<< "${FAMILIES:-modernbert deberta-v2 xlnet}"
for fam in "${FAMS[@]}"; do
  [ -d "$WORK/teachers/$fam" ] && continue
  "$PY" benchmarks/suites/make_tiny_models.py "$WORK/models" --family "$fam" --heads sequence-classification
  "$PY" benchmarks/suites/make_sst2_classifier.py --data "$DATA/sst2/train.tsv" --teacher "$WORK/models/$fam-sequence-classification" \
    --out "$WORK/teachers/$fam" --steps 600 --lr 1e-3 --heldout 1000
done
# Distillation text: SST-2 train without the held-back rows (the same split for both: seed 0, 1,000 rows); the next
# 500 labelled rows choose the student's checkpoint.
"$PY" - "$DATA/sst2/train.tsv" "$WORK" "${FAMS[0]}" <<'PYEOF'
import json, sys
from pathlib import Path
data, work = Path(sys.argv[1]), Path(sys.argv[2])
held = set(json.loads((work / "teachers" / sys.argv[3] / "heldout_indices.json").read_text())["indices"])
rows = data.read_text().splitlines()[1:]
rest = [r for i, r in enumerate(rows) if i not in held]
held_texts = {rows[i].split("\t")[0] for i in held}
texts = [r.split("\t")[0] for r in rest if r.split("\t")[0] not in held_texts]
(work / "corpus.txt").write_text("\n".join(texts[:20000]) + "\n")
(work / "eval-labels.tsv").write_text("text\tlabel\n" + "\n".join(rest[20000:20500]) + "\n")
PYEOF
for fam in "${FAMS[@]}"; do
  "$EB" distill --teacher "$WORK/teachers/$fam" --corpus "$WORK/corpus.txt" --out "$WORK/students/$fam" --student-layers 1 \
    --steps 600 --batch-size 32 --seq-len 64 --eval-labels "$WORK/eval-labels.tsv" --force
  "$EB" export --model "$WORK/students/$fam" --target onnx --quantize int8 --seq-len 64 --out "$WORK/exports/$fam-student-onnx-int8" --force
  "$EB" bench teacher="$WORK/teachers/$fam" student="$WORK/students/$fam" student-onnx-int8="$WORK/exports/$fam-student-onnx-int8" \
    --reference teacher --sst2 "$WORK/teachers/$fam/heldout.tsv" --seq-len 64 --warmup 2 --repeats 10 --texts-limit 0 \
    --out "$OUT/$fam" --force
done
