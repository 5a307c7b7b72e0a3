"""What compress writes is still a Hugging Face model: stock transformers 5 and sentence-transformers 6 classes load a
head-pruned directory in a fresh interpreter that never imports edgebert (no remote code) and compute what edgebert's
loader computes, while edgebert narrows the removed heads away again for the exports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from model_zoo import BUILDERS, build_bert

from edgebert.compress.compress import compress
from edgebert.modelio import load_model
from edgebert.parity import encode, torch_reference
from edgebert.parity_texts import wide_parity_texts

TEXTS = list(wide_parity_texts()[:16])
FAMILIES = [*BUILDERS, "xlnet"]
# Run by a fresh interpreter: the stock classes on each directory, their outputs to an .npz (argv: kind, a JSON
# {name: model dir}, texts json, out file). No edgebert import anywhere in it.
STOCK = """
import json, sys
import numpy as np, torch
kind, dirs, texts, out = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
values = {}
for name, path in dirs.items():
    if kind == "sentence-transformers":
        from sentence_transformers import SentenceTransformer
        model = SentenceTransformer(path, device="cpu", trust_remote_code=False)
        values[name] = model.encode(texts, batch_size=1, convert_to_numpy=True)
    else:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForSequenceClassification.from_pretrained(path, trust_remote_code=False).eval()
        with torch.no_grad():
            values[name] = np.stack([model(**tokenizer([t], return_tensors="pt")).logits[0].numpy() for t in texts])
assert "edgebert" not in sys.modules
np.savez(out, **values)
"""


def run_stock(kind: str, dirs: dict[str, Path], tmp_path: Path) -> dict[str, np.ndarray]:
    """What the stock classes compute on each directory, in one fresh interpreter."""
    out = tmp_path / f"{kind}.npz"
    listed = json.dumps({name: str(path) for name, path in dirs.items()})
    done = subprocess.run([sys.executable, "-c", STOCK, kind, listed, json.dumps(TEXTS), str(out)],
                          capture_output=True, text=True, timeout=900, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(np.load(out))


def edgebert_outputs(model_dir: Path, task: str, name: str) -> np.ndarray:
    """edgebert's model on each text alone, truncated where sentence-transformers truncates (the directory's
    max_seq_length: a student distilled at 24 tokens says 24) so that both see the same tokens."""
    loaded = load_model(model_dir, task=task)
    st_config = model_dir / "sentence_bert_config.json"
    length = min(128, json.loads(st_config.read_text()).get("max_seq_length") or 128) if st_config.exists() else 128
    rows = [torch_reference(loaded.embedder, encode(loaded.tokenizer, [t], length, pad_to_seq_len=False))[name][0] for t in TEXTS]
    return np.stack(rows)


@pytest.fixture(scope="module")
def pruned_embedders(tmp_path_factory: pytest.TempPathFactory, tiny_corpus: Path) -> dict[str, Path]:
    """Every family's tiny embedder (a sentence-transformers stack: mean pooling, normalised) with a quarter of its
    heads pruned."""
    from model_zoo import add_st_stack, build_xlnet

    base = tmp_path_factory.mktemp("stock")
    pruned = {}
    for family in FAMILIES:
        source = add_st_stack({**BUILDERS, "xlnet": build_xlnet}[family](base / family))
        pruned[family] = base / f"{family}-pruned"
        compress(source, pruned[family], prune_heads=0.25, calibration=tiny_corpus, calibration_samples=16, seq_len=24, quiet=True)
    return pruned


@pytest.fixture(scope="module")
def stock_embeddings(pruned_embedders: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    return run_stock("sentence-transformers", pruned_embedders, tmp_path_factory.mktemp("st"))


@pytest.mark.parametrize("family", FAMILIES)
def test_a_head_pruned_embedder_loads_in_sentence_transformers(family: str, pruned_embedders: dict[str, Path],
                                                               stock_embeddings: dict[str, np.ndarray]) -> None:  # fmt: skip
    """SentenceTransformer(dir) encodes what edgebert's loader computes; the config keeps the stock head count and
    names the removed heads, which edgebert's loader cuts away again (what the exporters see)."""
    from edgebert.families import family_for

    out = pruned_embedders[family]
    config = json.loads((out / "config.json").read_text())
    assert config["pruned_heads"]
    assert np.abs(stock_embeddings[family] - edgebert_outputs(out, "feature-extraction", "sentence_embedding")).max() <= 1e-5
    loaded = load_model(out)
    removed = {int(k): len(v) for k, v in config["pruned_heads"].items()}
    fam = family_for(loaded.config.model_type)
    heads = [fam.heads(fam.module(layer, "attention")) for layer in fam.layers(loaded.embedder.encoder)]
    total = int(loaded.config.num_attention_heads)
    assert heads == [total - removed.get(i, 0) for i in range(len(heads))]


def test_a_head_pruned_classifier_loads_in_its_auto_class(tiny_corpus: Path, tmp_path: Path) -> None:
    source = build_bert(tmp_path / "cls", head="sequence-classification", num_labels=3, id2label={0: "a", 1: "b", 2: "c"}, seed=2)
    out = tmp_path / "pruned"
    compress(source, out, prune_heads=0.25, prune_ffn=0.3, calibration=tiny_corpus, calibration_samples=16, seq_len=32, quiet=True)
    stock = run_stock("classifier", {"bert": out}, tmp_path)["bert"]
    ours = edgebert_outputs(out, "text-classification", "logits")
    assert np.abs(stock - ours).max() <= 1e-5
    assert (stock.argmax(-1) == ours.argmax(-1)).all()
    # and what edgebert's export predicts: the ONNX file, run in onnxruntime, labels each text as the stock class does
    from edgebert.export import export
    from edgebert.targets.onnx.runner import OnnxRunner

    exported = export("onnx", model=out, out=tmp_path / "onnx", quiet=True).out_dir
    loaded = load_model(out, task="text-classification")
    runner = OnnxRunner(exported / "model.onnx")
    logits = np.stack([runner.run(encode(loaded.tokenizer, [t], 128, pad_to_seq_len=False))["logits"][0] for t in TEXTS])
    assert (logits.argmax(-1) == stock.argmax(-1)).all() and np.abs(logits - stock).max() <= 1e-4


@pytest.mark.parametrize("layout", ["full size", "narrowed"])
def test_both_layouts_load_narrowed_in_edgebert(tiny_bert: Path, tiny_corpus: Path, tmp_path: Path, layout: str) -> None:
    """Directories written before the full-size layout (narrowed matrices) still load, to the same model."""
    from safetensors.torch import save_file

    out = tmp_path / "pruned"
    compress(tiny_bert, out, prune_heads=0.5, calibration=tiny_corpus, calibration_samples=16, seq_len=32, quiet=True)
    wide = edgebert_outputs(out, "feature-extraction", "sentence_embedding")
    if layout == "narrowed":
        base = load_model(out).embedder.encoder
        save_file({k: v.contiguous() for k, v in base.state_dict().items()}, str(out / "model.safetensors"), metadata={"format": "pt"})
    assert np.abs(edgebert_outputs(out, "feature-extraction", "sentence_embedding") - wide).max() <= 1e-6


def test_removed_heads_that_are_no_longer_zero_are_refused(tiny_bert: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    """A stock model fine-tuned after pruning may have moved the zeros: cutting those heads would change its function,
    so edgebert refuses it in one line instead of exporting something else."""
    from safetensors.torch import load_file, save_file

    from edgebert.errors import UserError

    out = tmp_path / "pruned"
    compress(tiny_bert, out, heads_to_prune={"0": [1]}, quiet=True)
    weights = load_file(str(out / "model.safetensors"))
    key = next(k for k in weights if k.endswith("layer.0.attention.self.value.weight"))
    weights[key][8:16] += 0.01  # head 1's rows (head size 8)
    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(UserError, match="pruned_heads names carry non-zero weights"):
        load_model(out)


def test_every_model_directory_has_a_model_card(pruned_embedders: dict[str, Path]) -> None:
    """README.md in the Hub's model-card format: front matter (library, pipeline tag, the edgebert tag), what was
    done and what was measured, from the manifest; no path of this machine."""
    text = (pruned_embedders["bert"] / "README.md").read_text()
    front = text.split("---")[1]
    assert text.startswith("---\n") and "library_name: sentence-transformers" in front and "pipeline_tag: sentence-similarity" in front
    assert "- edgebert\n" in front and "- edgebert-compress\n" in front
    manifest = json.loads((pruned_embedders["bert"] / "edgebert.json").read_text())
    assert "Attention heads pruned" in text and f"{manifest['metrics']['model_bytes']:,} bytes" in text
    assert str(pruned_embedders["bert"].parent) not in text


VERBS = ["distill", "distill --embedding-dim", "compress --prune-ffn", "compress --prune-heads --heal", "compress --trim-vocab"]


@pytest.fixture(scope="module")
def verb_outputs(tmp_path_factory: pytest.TempPathFactory, tiny_corpus: Path) -> dict[str, Path]:
    """The output of each verb on a tiny BERT embedder (a sentence-transformers stack)."""
    from model_zoo import add_st_stack

    from edgebert.compress.vocab import trim_vocab
    from edgebert.config import HealConfig
    from edgebert.distill.api import distill

    base = tmp_path_factory.mktemp("verbs")
    source = add_st_stack(build_bert(base / "bert"))
    steps = dict(steps=3, batch_size=4, seq_len=24, quiet=True)
    calibration = dict(calibration=tiny_corpus, calibration_samples=16, seq_len=24, quiet=True)
    out = {verb: base / verb.replace(" ", "_").replace("-", "") for verb in VERBS}
    distill(source, tiny_corpus, out["distill"], student_layers=1, **steps)
    distill(source, tiny_corpus, out["distill --embedding-dim"], student_layers=1, embedding_dim=16, **steps)
    compress(source, out["compress --prune-ffn"], prune_ffn=0.5, **calibration)
    heal = HealConfig(steps=2, corpus=[str(tiny_corpus)], batch_size=4, seq_len=24, cache_dir=str(base / "cache"))
    compress(source, out["compress --prune-heads --heal"], prune_heads=0.25, heal=heal, **calibration)
    trim_vocab(source, out["compress --trim-vocab"], [str(tiny_corpus)], min_count=1, quiet=True)
    return out


@pytest.mark.parametrize("verb", VERBS)
def test_every_verbs_output_loads_in_sentence_transformers(verb: str, verb_outputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> None:
    """distill (also with factorised embeddings: a stock AlbertModel), FFN pruning, head pruning with healing and
    vocabulary trimming: SentenceTransformer(dir) in a fresh interpreter encodes what edgebert's loader computes."""
    stock = run_stock("sentence-transformers", {"model": verb_outputs[verb]}, tmp_path_factory.mktemp("verb"))["model"]
    assert np.abs(stock - edgebert_outputs(verb_outputs[verb], "feature-extraction", "sentence_embedding")).max() <= 1e-5
