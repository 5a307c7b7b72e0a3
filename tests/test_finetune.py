"""edgebert finetune: reading labelled rows, the bad-file errors, the losses on a learnable toy task, checkpoint and
seed soups, the output directory, and the pipeline's finetune stage (with resume).

The toy task is learnable and not solved at the start: each of 40 words has a partner, and a pair scores 5 when its
second sentence is its first with every word replaced by its partner (no token in common), 0 when it is another
sentence's replacement. A random model ranks such pairs at chance; training teaches it the partners.
"""

from __future__ import annotations

import csv
import gzip
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import WORDS, tiny_recipe_head
from model_zoo import add_st_stack, build_bert

from edgebert.errors import UserError
from edgebert.finetune.data import Columns, read_rows, split

VOCAB = WORDS[:40]
PARTNER = {w: VOCAB[(i + 20) % 40] for i, w in enumerate(VOCAB)}
FAST = ["--lr", "1e-3", "--batch-size", "16"]  # a tiny random model learns at a large learning rate


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> Iterator[None]:
    """One torch thread for this module's fixtures and tests: the tiny models train in seconds, and slower with more
    on a shared machine. The count is given back at the end."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def toy_rows(count: int, seed: int = 0) -> list[tuple[str, str, float]]:
    rng = random.Random(seed)
    sentence = lambda: " ".join(rng.choice(VOCAB[:20]) for _ in range(rng.randint(3, 6)))  # noqa: E731
    rows = []
    for i in range(count):
        first = sentence()
        second = first if i % 2 else sentence()
        rows.append((first, " ".join(PARTNER[w] for w in second.split()), 5.0 * (i % 2)))
    return rows


def write_csv(path: Path, rows: list[tuple[object, ...]], header: tuple[str, ...] | None = ("sentence1", "sentence2", "score"), delimiter: str = ",") -> Path:
    with (gzip.open(path, "wt", newline="") if path.suffix == ".gz" else open(path, "w", newline="")) as fh:
        writer = csv.writer(fh, delimiter=delimiter)
        if header:
            writer.writerow(header)
        writer.writerows(rows)
    return path


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT with a sentence-transformers stack (mean pooling, Normalize); read-only."""
    return add_st_stack(build_bert(tmp_path_factory.mktemp("embedder") / "bert"))


@pytest.fixture(scope="module")
def toy_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_csv(tmp_path_factory.mktemp("toy") / "pairs.csv", toy_rows(300))


@pytest.fixture(scope="module")
def tuned(embedder: Path, toy_csv: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedder fine-tuned with cosent on the toy task, a fifth of the rows held out."""
    from edgebert.finetune import finetune

    out = tmp_path_factory.mktemp("tuned") / "out"
    finetune(embedder, toy_csv, out, held_out=0.2, lr=1e-3, quiet=True)
    return out


def manifest(directory: Path) -> dict:
    return json.loads((directory / "edgebert.json").read_text())


# ------------------------------------------------------------------------------------------------ reading


@pytest.mark.parametrize("name", ["pairs.csv", "pairs.tsv", "pairs.csv.gz", "pairs.jsonl", "spreadsheet.csv"])
def test_reads_every_format_by_its_named_columns(tmp_path: Path, name: str) -> None:
    rows = [("a man plays", "the man playing", 4.5), ("a dog", "a cat", 1)]
    header = ("query", "doc", "label")
    path = tmp_path / name
    if name.endswith(".jsonl"):
        write_jsonl(path, [{"query": a, "doc": b, "label": s, "extra": 1} for a, b, s in rows])
    else:
        write_csv(path, rows, header, "\t" if ".tsv" in name else ",")
    if name == "spreadsheet.csv":  # saved with a UTF-8 byte-order mark before the header
        path.write_text("\ufeff" + path.read_text(), encoding="utf-8")
    read = read_rows("--data", path, Columns("query", "doc", "label", True))
    assert (read.sentence1, read.sentence2, read.scores) == (["a man plays", "a dog"], ["the man playing", "a cat"], [4.5, 1.0])
    assert read_rows("--data", path, Columns("query", "doc")).scores is None  # no score column named, none called `score`


def test_a_headerless_csv_takes_its_column_names_from_header(tmp_path: Path) -> None:
    """STS-B's csv has no header row: `--header sentence1,sentence2,score` names its columns."""
    path = write_csv(tmp_path / "stsb.csv", [("A plane is taking off.", "An air plane is taking off.", 5.0)] * 3, header=None)
    read = read_rows("--data", path, Columns("sentence1", "sentence2", "score", header=("sentence1", "sentence2", "score")))
    assert len(read) == 3 and read.scores == [5.0] * 3


def test_the_held_out_rows_depend_on_their_text_not_their_order(tmp_path: Path) -> None:
    rows = toy_rows(200)
    forward = read_rows("--data", write_csv(tmp_path / "a.csv", rows), Columns("sentence1", "sentence2", "score"))
    backward = read_rows("--data", write_csv(tmp_path / "b.csv", rows[::-1]), Columns("sentence1", "sentence2", "score"))
    (train_a, held_a), (train_b, held_b) = split(forward, 0.2), split(backward, 0.2)
    assert set(held_a.pair_keys()) == set(held_b.pair_keys()) and 20 <= len(held_a) <= 60
    assert not set(held_a.pair_keys()) & set(train_a.pair_keys()) and len(train_a) + len(held_a) == 200


# ------------------------------------------------------------------------------------------------ bad input

BAD_FILES = [
    ("pairs.csv", "a,b,score\nx,y,1\n", [], ["pairs.csv", "no column 'sentence1' (--sentence1-column)", "its columns: a, b, score"]),
    ("pairs.csv", "sentence1,sentence2,score\nx,y,1\nx,z,high\n", [], ["pairs.csv:3", "column 'score'", "'high' is not a number"]),
    ("pairs.tsv", "sentence1\tsentence2\tscore\nx\t \t1\n", [], ["pairs.tsv:2", "column 'sentence2'", "empty sentence"]),
    ("pairs.jsonl", '{"sentence1": "x", "sentence2": "y"}\n{"sentence1": "x"\n', [], ["pairs.jsonl:2", "not valid JSON"]),
    ("pairs.jsonl", '{"sentence1": "x", "sentence2": "y"}\n{"sentence1": "z"}\n', [], ["pairs.jsonl:2", "column 'sentence2'", "missing"]),
    ("pairs.csv", "sentence1,sentence2,score\na,b,1\nc,d,2\ne,f,3\n", ["--held-out", "0.1"], ["pairs.csv", "of its 3 rows", "at least 2", "--held-out 0"]),
    ("pairs.csv", "sentence1,sentence2\na,b\nc,d\n", ["--loss", "cosent"], ["pairs.csv", "no column 'score'", "--loss cosent learns from scores"]),
    ("pairs.csv", "sentence1,sentence2,score\na,b,1\n", ["--loss", "mnrl", "--score-column", "score"], ["--loss mnrl", "reads no scores"]),
    ("pairs.csv", "sentence1,sentence2,score,neg\na,b,1,c\n", ["--negative-column", "neg"], ["--negative-column is for --loss mnrl", "pairs.csv"]),
    ("pairs.txt", "a b\n", [], ["pairs.txt", "unknown format"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "flags", "needles"), BAD_FILES, ids=lambda v: v if isinstance(v, str) and "\n" not in v else None)
def test_a_bad_file_is_one_line_exit_2_and_nothing_written(
    run_cli: Callable[..., tuple[int, str, str]], embedder: Path, tmp_path: Path, name: str, text: str, flags: list[str], needles: list[str]
) -> None:
    (tmp_path / name).write_text(text)
    out = tmp_path / "out"
    code, stdout, stderr = run_cli("finetune", "--model", str(embedder), "--data", str(tmp_path / name), "--out", str(out), *flags)
    assert code == 2 and stdout == "" and len(stderr.splitlines()) == 1, stderr
    assert all(needle in stderr for needle in needles), stderr
    assert not out.exists() and not list(tmp_path.glob(".out.*"))


def test_a_model_that_is_no_sentence_embedder_is_refused(run_cli: Callable[..., tuple[int, str, str]], toy_csv: Path, tmp_path: Path) -> None:
    bare, classifier = build_bert(tmp_path / "bare"), build_bert(tmp_path / "cls", head="sequence-classification")
    for model, needle in ((bare, "has no sentence-transformers stack"), (classifier, "is a text-classification model")):
        code, _, stderr = run_cli("finetune", "--model", str(model), "--data", str(toy_csv), "--out", str(tmp_path / "out"))
        assert code == 2 and len(stderr.splitlines()) == 1 and needle in stderr, stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("options", "needle"),
    [({"soup_from": 2}, "--soup-from keeps a soup without held-out rows"), ({"held_out": 0.2, "held_out_file": "x.csv"}, "pass one of --held-out"),
     ({"seeds": [1, 1]}, "names a seed twice"), ({"header": "a,,b"}, "--header must name every column once")],
)  # fmt: skip
def test_bad_options_are_refused_before_reading(embedder: Path, tmp_path: Path, options: dict, needle: str) -> None:
    from edgebert.finetune import finetune

    with pytest.raises(UserError, match=needle):
        finetune(embedder, tmp_path / "missing.csv", tmp_path / "out", **options)


def test_a_missing_training_package_names_the_extra(embedder: Path, toy_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from edgebert.finetune import finetune

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "datasets" else found(name, *a))
    with pytest.raises(UserError, match=r"needs datasets \(not installed here\): pip install 'edgebert\[finetune\]'"):
        finetune(embedder, toy_csv, tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------ training


def test_cosent_improves_the_held_out_spearman_and_keeps_the_best_candidate(tuned: Path, toy_csv: Path) -> None:
    from sentence_transformers import SentenceTransformer

    from edgebert.finetune import metrics

    m = manifest(tuned)
    held, block = m["metrics"]["held_out"], m["finetune"]
    assert (m["kind"], m["step"], block["loss"], held["metric"]) == ("model", "finetune", "cosent", "spearman")
    assert held["student_final"] > held["student_init"] + 0.2, held
    names = [c["name"] for c in block["candidates"]]
    assert names == ["start", "epoch 1", "epoch 2", "epoch 3", "epoch 4", "soup of epochs 1-4", "soup of epochs 2-4", "soup of epochs 3-4"]
    best = max(block["candidates"], key=lambda c: c["score"])
    assert block["kept"]["name"] == held["kept"] and best["score"] == held["student_final"]
    # what was saved is what was chosen: the saved directory scores the kept candidate's figure on the held-out rows
    _, held_rows = split(read_rows("--data", toy_csv, Columns("sentence1", "sentence2", "score")), 0.2)
    assert len(held_rows) == held["rows"]
    saved = SentenceTransformer(str(tuned), device="cpu", trust_remote_code=False)
    assert metrics.score(saved, held_rows) == pytest.approx(held["student_final"], abs=1e-4)


def test_the_output_is_the_inputs_layout_and_loads_in_both_loaders(tuned: Path, embedder: Path) -> None:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from edgebert.evaluate import embed
    from edgebert.modelio import load_model

    texts = ["a man plays the guitar", "the quick brown fox"]
    stock = SentenceTransformer(str(tuned), device="cpu", trust_remote_code=False).encode(texts, normalize_embeddings=True)
    loaded = load_model(tuned)
    ours = embed(loaded.embedder.encoder, loaded.tokenizer, texts, loaded.pooling)
    assert np.abs(stock - ours).max() < 1e-5
    stack = {"modules.json", "1_Pooling", "2_Normalize", "sentence_bert_config.json", "config_sentence_transformers.json"}
    assert stack <= {p.name for p in embedder.iterdir()}
    assert stack | {"config.json", "model.safetensors", "tokenizer.json", "edgebert.json", "README.md"} <= {p.name for p in tuned.iterdir()}
    m = manifest(tuned)
    assert m["parent"] == str(embedder.absolute()) and m["recipe"]["data"].endswith("pairs.csv") and m["finetune"]["reload_check"]["max_abs_diff"] <= 1e-5
    assert "edgebert-finetune" in (tuned / "README.md").read_text() and "held-out spearman" in (tuned / "README.md").read_text()


def test_mnrl_trains_on_unscored_triplets_and_chooses_by_reciprocal_rank(run_cli: Callable[..., tuple[int, str, str]], embedder: Path, tmp_path: Path) -> None:
    rows = [(a, b) for a, b, score in toy_rows(240, seed=3) if score]
    others = [b for _, b in rows[1:] + rows[:1]]
    data = write_jsonl(tmp_path / "triplets.jsonl", [{"q": a, "pos": b, "neg": n} for (a, b), n in zip(rows, others)])
    code, stdout, stderr = run_cli("finetune", "--model", str(embedder), "--data", str(data), "--out", str(tmp_path / "out"),
                                   "--sentence1-column", "q", "--sentence2-column", "pos", "--negative-column", "neg",
                                   "--epochs", "2", "--held-out", "0.25", *FAST)  # fmt: skip
    assert code == 0, stderr
    m = manifest(tmp_path / "out")
    assert m["finetune"]["loss"] == "mnrl" and m["metrics"]["held_out"]["metric"] == "mrr"
    assert all(0 < c["score"] <= 1 for c in m["finetune"]["candidates"])
    assert "held-out mrr" in stdout and f"kept: {m['finetune']['kept']['name']}" in stdout
    code, _, stderr = run_cli("finetune", "--model", str(embedder), "--data", str(data), "--out", str(tmp_path / "out"))
    assert code == 2 and "exists and is not empty; pass --force" in stderr  # the output is never replaced unasked


# ------------------------------------------------------------------------------------------------ soups


def test_the_soup_of_two_snapshots_is_their_average(tmp_path: Path) -> None:
    import torch

    from edgebert.finetune.soup import Candidate, Snapshots, average, candidates

    torch.manual_seed(0)
    store = Snapshots(tmp_path)
    runs = {(run, epoch): {"w": torch.randn(4, 3), "ids": torch.arange(3)} for run in range(2) for epoch in (1, 2)}
    for (run, epoch), state in runs.items():
        store.save(run, epoch, state)
    built = dict(candidates(store, runs=1, epochs=2))
    assert torch.allclose(built[Candidate(1, 2)]["w"], (runs[0, 1]["w"] + runs[0, 2]["w"]) / 2)
    assert torch.equal(built[Candidate(2, 2)]["w"], runs[0, 2]["w"]) and torch.equal(built[Candidate(1, 2)]["ids"], torch.arange(3))
    seeds = dict(candidates(store, runs=2, epochs=2))  # a seed soup: each epoch averaged over the runs
    assert torch.allclose(seeds[Candidate(2, 2)]["w"], (runs[0, 2]["w"] + runs[1, 2]["w"]) / 2)
    assert torch.allclose(seeds[Candidate(1, 2)]["w"], average(list(runs.values()))["w"])


def test_without_held_out_rows_the_seed_soup_of_the_last_epochs_is_kept(embedder: Path, tmp_path: Path) -> None:
    """Also: --seq-len truncates the training sentences only; the saved model keeps its own length."""
    from edgebert.finetune import finetune

    data = write_csv(tmp_path / "pairs.csv", [(f"{a} {a}", f"{b} {b}", s) for a, b, s in toy_rows(64, seed=5)])
    report = finetune(embedder, data, tmp_path / "out", held_out=0, soup_from=1, epochs=2, seeds=[0, 1], lr=1e-3, seq_len=8, quiet=True)
    block = report.manifest["finetune"]
    assert block["kept"] == {"name": "soup of epochs 1-2", "epochs": [1, 2]} and [r["seed"] for r in block["runs"]] == [0, 1]
    assert report.metrics["held_out"] is None and block["held_out"] is None and block["data"]["training_rows"] == 64
    length = lambda d: json.loads((d / "tokenizer_config.json").read_text())["model_max_length"]  # noqa: E731 - what ST reads
    assert length(tmp_path / "out") == length(embedder) == 128


def test_refit_trains_every_row_for_the_epochs_the_held_out_rows_chose(embedder: Path, toy_csv: Path, tmp_path: Path) -> None:
    """--refit keeps the held-out choice (scores of the run that chose) and writes the weights of the same epoch or
    soup trained on every row: the same weights as training on every row for that many epochs and taking it."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from edgebert.finetune import finetune

    refit = finetune(embedder, toy_csv, tmp_path / "refit", held_out=0.2, refit=True, epochs=3, lr=1e-3, quiet=True).manifest
    block, held = refit["finetune"], refit["metrics"]["held_out"]
    first, last = block["kept"]["epochs"]
    assert last >= 1 and block["refit"]["epochs"] == last and block["refit"]["kept"] == block["kept"]
    assert block["refit"]["rows"] == 300 > block["data"]["training_rows"] and "refitted on every row" in held["scored"]
    assert [r["seed"] for r in block["refit"]["runs"]] == [0]
    again = tmp_path / "again"
    finetune(embedder, toy_csv, again, held_out=0, epochs=last, soup_from=first if first < last else None, lr=1e-3, quiet=True)
    texts = [row[0] for row in toy_rows(8, seed=9)]
    encode = lambda d: SentenceTransformer(str(d), device="cpu", trust_remote_code=False).encode(texts)  # noqa: E731
    assert np.abs(encode(tmp_path / "refit") - encode(again)).max() < 1e-5
    with pytest.raises(UserError, match="--refit trains again on every row"):
        finetune(embedder, toy_csv, tmp_path / "no", held_out=0, refit=True)


def test_a_head_pruned_student_keeps_its_pruned_shape(embedder: Path, toy_csv: Path, tmp_path: Path) -> None:
    """Trained narrowed, saved at the stock shapes with the removed heads still exact zeros (edgebert's loader
    refuses them otherwise) and `config.pruned_heads` naming them."""
    from edgebert.compress.compress import compress
    from edgebert.finetune import finetune
    from edgebert.modelio import load_model

    pruned = tmp_path / "pruned"
    compress(embedder, pruned, heads_to_prune={"0": [1, 2], "1": [0]}, quiet=True)
    finetune(pruned, toy_csv, tmp_path / "out", epochs=1, lr=1e-3, quiet=True)
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["pruned_heads"] == json.loads((pruned / "config.json").read_text())["pruned_heads"]
    assert load_model(tmp_path / "out").config.pruned_heads  # narrowed again on load: the removed heads are zeros


# ------------------------------------------------------------------------------------------------ pipeline


def test_the_pipeline_stage_trains_the_student_the_exports_ship_and_resumes(
    tiny_bert: Path, tiny_corpus: Path, toy_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgebert.pipeline import format_plan, parse_recipe, plan_pipeline, run_pipeline
    from edgebert.pipeline import run as pipeline_run

    recipe = parse_recipe(tiny_recipe_head(tiny_bert, tiny_corpus) + f"""[finetune]
data = "{toy_csv}"
epochs = 1
lr = 1e-3
[export]
targets = {{ onnx = ["int8"] }}
teacher_targets = []
""")
    shipped: list[Path] = []
    monkeypatch.setattr(pipeline_run, "run_export", lambda target, quant, model, out, *a, **k: shipped.append(Path(model)))
    monkeypatch.setattr(pipeline_run, "run_bench_stage", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("stop here")))
    options = {"work": tmp_path / "work", "quiet": True}
    plan = "\n".join(format_plan(plan_pipeline(recipe, tmp_path / "out", **options)))
    assert f"--finetune-data: {toy_csv}" in plan and "finetune → " in plan
    with pytest.raises(RuntimeError, match="stop here"):
        run_pipeline(recipe, tmp_path / "out", **options)
    tuned = tmp_path / "work" / "finetune" / "student"
    assert shipped == [tuned] and manifest(tuned)["parent"] == str(tmp_path / "work" / "distill" / "student")
    assert pipeline_run._stage_scores(str(tuned))["metric"] == "spearman"

    calls: list[str] = []
    monkeypatch.setattr(pipeline_run, "run_finetune", lambda *a, **k: calls.append("finetune"))
    monkeypatch.setattr(pipeline_run, "run_distill", lambda *a, **k: calls.append("distill"))
    with pytest.raises(RuntimeError, match="stop here"):
        run_pipeline(recipe, tmp_path / "out", resume=True, **options)
    state = json.loads((tmp_path / "work" / "pipeline-state.json").read_text())["stages"]["finetune"]
    assert calls == [] and state["status"] == "done" and state["skipped_in_last_run"] is True


def test_the_pipeline_refuses_bad_finetune_data_before_any_stage(tiny_bert: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    from edgebert.pipeline import parse_recipe, run_pipeline

    (tmp_path / "pairs.csv").write_text("sentence1,sentence2,score\na,b,1\nc,,2\n")
    recipe = parse_recipe(f'teacher = "{tiny_bert}"\ncorpus = ["{tiny_corpus}"]\n')
    with pytest.raises(UserError, match=r"pairs\.csv:3: column 'sentence2' is an empty sentence"):
        run_pipeline(recipe, tmp_path / "out", work=tmp_path / "work", finetune_data=str(tmp_path / "pairs.csv"), quiet=True)
    assert not (tmp_path / "work").exists() and not (tmp_path / "out").exists()


def test_a_dataset_spec_is_read_as_its_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--finetune-data hf:NAME:SPLIT`: the dataset's rows as JSON Lines, every column under its own name."""
    from datasets import Dataset

    from edgebert import data as edgebert_data
    from edgebert.finetune.api import training_data
    from edgebert.pipeline.inputs import resolve_input
    from edgebert.pipeline.recipe import FinetuneSection

    rows = toy_rows(40)
    table = {"sentence1": [a for a, _, _ in rows], "sentence2": [b for _, b, _ in rows], "score": [s for *_, s in rows]}
    monkeypatch.setattr(edgebert_data, "load_hf_dataset", lambda *a: Dataset.from_dict(table))
    spec = resolve_input("--finetune-data", "hf:someone/pairs:train", tmp_path, "rows")
    read = training_data(spec.materialize(tmp_path), FinetuneSection(held_out=0.25), flag="--finetune-data")
    assert read.loss == "cosent" and len(read.train) + len(read.held) == 40 and read.train.flag == "--finetune-data"
    assert spec.materialize(tmp_path).name == "someone-pairs-train.jsonl"


def test_a_finetune_section_without_data_is_a_skipped_step() -> None:
    from edgebert.pipeline import parse_recipe
    from edgebert.pipeline.run import skipped_steps

    def finetune_steps(text: str) -> list[dict[str, str]]:
        return [s for s in skipped_steps(parse_recipe(text)) if s["step"] == "finetune"]

    assert finetune_steps("[finetune]\nepochs = 8\n")[0]["input"] == "--finetune-data"
    assert finetune_steps("") == [] and finetune_steps('[finetune]\ndata = "pairs.csv"\n') == []
