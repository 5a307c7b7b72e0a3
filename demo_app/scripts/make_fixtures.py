"""Write the Node tests' reference fixture: Python token ids and PyTorch embeddings for an edgebert TF.js export.

    .venv/bin/python demo_app/scripts/make_fixtures.py [--export demo_app/assets/model] [--model SOURCE]
        [--out demo_app/assets/reference.json]

- Token ids: `edgebert.parity.encode` (transformers' fast tokenizer loaded from the export's own tokenizer files,
  truncation to the export's seq_len, padding to seq_len, token type ids) on tricky strings: accents, combining
  marks, CJK, emoji (ZWJ sequences, flags, skin tones), other scripts, odd whitespace, control characters, very long
  input.
- Embeddings: `edgebert.modelio.load_model` on the export's source model (its edgebert.json `source.path`, or
  --model) and `edgebert.parity.torch_reference` on the same padded inputs: what the Node test compares the TF.js
  export against (cos >= 0.999).

The fixture names the model it was made for; the Node embedding test skips (saying so) for another model.
scripts/prepare.sh runs it after every export: the fixture belongs to the export beside it, it is not committed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


APP_DIR = Path(__file__).resolve().parents[1]

LONG_TEXT = " ".join(
    [
        "Edge devices such as phones, watches and small single-board computers increasingly run language models",
        "locally, which keeps personal notes private, works without a network connection and answers quickly;",
        "however, memory, battery and thermal limits mean the model has to be small, and every conversion step",
        "from PyTorch to a mobile runtime can silently change the numbers, so each export is checked against",
        "the original on real sentences before it ships, including ones that are far longer than the fixed",
        "sequence length of the exported graph, like this one, which keeps going well past one hundred and",
        "twenty-eight word pieces so that truncation has to keep the final separator token in place exactly",
        "as the Python tokenizer does, otherwise the embeddings would drift apart for long notes in the app.",
    ]
)

TOKEN_CASES: list[str] = [
    "Hello world.",
    "",
    "   ",
    "WHY IS EVERYONE SHOUTING IN ALL CAPS?",
    "Crème brûlée, jalapeño, naïve façade and Zürich's Ångström café.",
    "Cafe\u0301 with a combining acute, Ｆｕｌｌｗｉｄｔｈ letters and ﬁ ligature",
    "Straße, İstanbul, ΣΊΣΥΦΟΣ, Ελληνικά, Москва",
    "東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다.",
    "中文没有空格分词测试，标点符号！？",
    "I love this app 😍🔥👍 — it's great!!! #blessed @friend",
    "Family 👨‍👩‍👧‍👦, flags 🇫🇷🇯🇵, skin tones 👋🏽 and keycaps 1️⃣",
    "العربية من اليمين إلى اليسار و हिन्दी भाषा และภาษาไทย",
    "  Multiple   spaces,\ttabs and\nnewlines   between words.  ",
    "Zero\u200bwidth\u00a0non-breaking\u2003em-space and soft\u00adhyphen",
    "control\u0007chars\u0000and\ufeffBOM",
    "Prices rose 3.5% to $1,234.56 on 2024-01-15 (see https://example.com/a?b=c&d=e#frag).",
    "snake_case camelCaseIdentifier kebab-case C++ f(x)=x^2 [brackets] {braces} <tags/>",
    "unaffable antidisestablishmentarianism supercalifragilisticexpialidocious",
    "a" * 150,
    LONG_TEXT,
    "日本語の長い文章。" * 40,
    "🙂" * 200,
]

EMBEDDING_CASES: list[str] = [
    "Hello world.",
    "How do I keep my sourdough starter alive?",
    "Crème brûlée, jalapeño, naïve façade and Zürich's Ångström café.",
    "東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다.",
    "I love this app 😍🔥👍 — it's great!!! #blessed @friend",
    LONG_TEXT,
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--export", type=Path, default=APP_DIR / "assets" / "model", help="the TF.js export directory")
    parser.add_argument("--model", help="the PyTorch model of the export (default: its edgebert.json source.path)")
    parser.add_argument("--out", type=Path, default=APP_DIR / "assets" / "reference.json")
    args = parser.parse_args(argv)

    from transformers import AutoTokenizer

    from edgebert.modeldir import MANIFEST, read_manifest
    from edgebert.modelio import load_model
    from edgebert.parity import encode, torch_reference
    from edgebert.sources import resolve_model

    if not (args.export / MANIFEST).exists():
        print(f"make_fixtures: no export at {args.export}; run demo_app/scripts/prepare.sh first", file=sys.stderr)
        return 2
    manifest = read_manifest(args.export)
    seq_len = int(manifest["seq_len"])

    # The tokenizer exactly as shipped in the export (what the app loads), through transformers.
    tokenizer = AutoTokenizer.from_pretrained(str(args.export), use_fast=True)
    tokens = encode(tokenizer, TOKEN_CASES, seq_len)

    source = args.model or manifest.get("parent") or "default"
    model = load_model(resolve_model(source))
    emb_inputs = encode(model.tokenizer, EMBEDDING_CASES, seq_len)
    if not (emb_inputs["input_ids"] == encode(tokenizer, EMBEDDING_CASES, seq_len)["input_ids"]).all():
        print("make_fixtures: the model's tokenizer and the export's disagree", file=sys.stderr)
        return 1
    embeddings = torch_reference(model.embedder, emb_inputs)["sentence_embedding"]

    fixture = {
        "generated_by": "demo_app/scripts/make_fixtures.py",
        "model": {
            "name": manifest["name"],
            "seq_len": seq_len,
            "hidden_size": manifest["model"]["hidden_size"],
            "layers": manifest["model"]["layers"],
            "do_lower_case": manifest["model"].get("do_lower_case"),
        },
        "tokens": [
            {
                "text": text,
                "input_ids": tokens["input_ids"][i].tolist(),
                "attention_mask": tokens["attention_mask"][i].tolist(),
                "token_type_ids": tokens["token_type_ids"][i].tolist(),
            }
            for i, text in enumerate(TOKEN_CASES)
        ],
        "embeddings": [
            {"text": text, "embedding": [round(float(x), 7) for x in embeddings[i]]}
            for i, text in enumerate(EMBEDDING_CASES)
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(fixture, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"make_fixtures: wrote {args.out} ({len(TOKEN_CASES)} token cases, {len(EMBEDDING_CASES)} embeddings)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
