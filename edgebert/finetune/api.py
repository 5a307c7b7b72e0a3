"""`finetune(model, data, out, **options)`: a sentence embedder trained on the user's labelled pairs with
sentence-transformers' trainer, once per seed, keeping the epoch or checkpoint soup that scores best on held-out rows
of the same data; written as a model directory of the input's layout.

Phases: check the options, the output, the model and the data (nothing written before they pass); load the model and
score its start on the held-out rows; train once per seed, saving every epoch's weights; score every candidate
(`edgebert.finetune.soup`) and keep the best; save it, check that the saved directory computes what was chosen, and
write the manifest.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebert import validate
from edgebert.config import FINETUNE_LOSSES, HELD_OUT_SHARE, FinetuneConfig, FinetuneRecipe
from edgebert.errors import UserError, VerificationError
from edgebert.finetune.data import Columns, Rows, check_held_out, read_rows, split, without_pairs
from edgebert.options import checked, keyword_options

SNAPSHOTS, TRAINER = ".snapshots", ".trainer"  # scratch inside the output's temporary directory
RELOAD_TEXTS, RELOAD_TOLERANCE = 32, 1e-5
TRAINING_PACKAGES = ("sentence_transformers", "datasets", "accelerate")  # the `finetune` extra


@dataclass
class FinetuneReport:
    """Where the fine-tuned model went and its manifest (every candidate's held-out score under `finetune`)."""

    out_dir: Path
    manifest: dict[str, Any]

    @property
    def metrics(self) -> dict[str, Any]:
        return self.manifest["metrics"]


@dataclass
class TrainingData:
    """The rows to train on, the held-out rows to choose on (None: keep the last epoch), the loss that fits them."""

    train: Rows
    held: Rows | None
    loss: str
    every: Rows  # every row read from --data: what --refit trains on
    dropped: int = 0  # --data pairs also in --held-out-file, not trained on
    share: float = 0.0  # of --data held out (0 with --held-out-file or --held-out 0)

    @property
    def read(self) -> int:
        """Rows read from --data."""
        return len(self.every)


@keyword_options(FinetuneConfig)
def finetune(model: str | Path, data: str | Path, out: str | Path, **options: Any) -> FinetuneReport:
    """`edgebert finetune --model DIR --data FILE --out DIR ...`: train the sentence embedder `model` on the labelled
    pairs of `data` (csv, tsv or jsonl) and write the candidate that does best on held-out rows to `out`.

    Same options and defaults as the command. Bad input (options, data file, a model without a sentence-transformers
    stack) raises UserError before anything is written."""
    from edgebert.artifact import atomic_output_dir, check_output_dir
    from edgebert.sources import resolve_model

    started = time.perf_counter()
    o = FinetuneConfig(**checked(FinetuneConfig, options, "finetune"))
    check_options(o)
    check_installed()
    validate.path_like("--model", model, optional=False)
    validate.path_like("--data", data, optional=False)
    out = validate.path_like("--out", out, optional=False)
    inputs: dict[str, Any] = {"--model": model, "--data": data, "--held-out-file": o.held_out_file}
    check_output_dir(out, o.force, inputs)
    model_dir = resolve_model(model)
    inputs["--model"] = model_dir
    check_embedder(model_dir)
    rows = training_data(data, o)
    with atomic_output_dir(out, force=o.force, inputs=inputs) as tmp:
        manifest = _run(model_dir, rows, o, tmp, Path(out), started)
    return FinetuneReport(Path(out), manifest)


# ------------------------------------------------------------------------------------------------ checks


def check_options(o: FinetuneRecipe) -> None:
    """Types and ranges of finetune's options (a recipe's [finetune] too), before anything is read."""
    validate.choice("--loss", o.loss, FINETUNE_LOSSES)
    for flag in ("sentence1_column", "sentence2_column", "score_column", "negative_column"):
        value = getattr(o, flag)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise UserError(f"--{flag.replace('_', '-')} must be a column name, got {value!r}")
    header_names(o.header)
    validate.integer("--epochs", o.epochs, 1)
    validate.integer("--batch-size", o.batch_size, 2, hint="pairs are compared within a batch")
    validate.number("--lr", o.lr, 0.0, low_open=True)
    validate.number("--warmup-ratio", o.warmup_ratio, 0.0, 1.0, high_open=True)
    validate.number("--weight-decay", o.weight_decay, 0.0)
    validate.optional_integer("--seq-len", o.seq_len, 8, hint="tokens per sentence")
    if not isinstance(o.seeds, list) or not o.seeds:
        raise UserError(f"--seeds must be a list of seeds, e.g. 0,1; got {o.seeds!r}")
    for seed in o.seeds:
        validate.seed("--seeds", seed)
    if len(set(o.seeds)) != len(o.seeds):
        raise UserError(f"--seeds {','.join(map(str, o.seeds))} names a seed twice; a seed soup averages different runs")
    validate.optional_number("--held-out", o.held_out, 0.0, 1.0, high_open=True)
    _check_held_out_choice(o)
    if o.refit and o.held_out == 0:
        raise UserError("--refit trains again on every row once held-out rows have chosen the epochs; --held-out 0 holds none out: drop one of them")


def _check_held_out_choice(o: FinetuneRecipe) -> None:
    """--held-out or --held-out-file, and --soup-from only without either."""
    if o.held_out is not None and o.held_out_file is not None:
        raise UserError("pass one of --held-out (a share of --data) and --held-out-file (rows of their own)")
    validate.path_like("--held-out-file", o.held_out_file)
    if o.soup_from is not None:
        validate.integer("--soup-from", o.soup_from, 1, o.epochs - 1, hint="a soup averages epochs K..--epochs")
        if o.held_out != 0:
            raise UserError("--soup-from keeps a soup without held-out rows (--held-out 0); with them every soup is a candidate: drop it, or pass --held-out 0")


def check_installed() -> None:
    """UserError naming the extra when sentence-transformers' trainer cannot run here."""
    import importlib.util

    missing = [name for name in TRAINING_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise UserError(f"finetune needs {', '.join(missing)} (not installed here): pip install 'edgebert[finetune]'")


def header_names(header: Any) -> tuple[str, ...] | None:
    """--header's comma-separated column names (None: the file's first row names them)."""
    if header is None:
        return None
    names = tuple(n.strip() for n in header.split(",")) if isinstance(header, str) else ()
    if not names or not all(names) or len(set(names)) != len(names):
        raise UserError(f"--header must name every column once, comma-separated (e.g. sentence1,sentence2,score), got {header!r}")
    return names


def check_embedder(model_dir: Path) -> None:
    """UserError (one line) unless `model_dir` is a sentence embedder finetune can train and save: a
    sentence-transformers stack of pooling and Normalize (Dense layers would be trained and then not saved)."""
    from edgebert.heads import FEATURE_EXTRACTION, detect_task, read_sentence_stack
    from edgebert.modelio import inspect_model_dir

    config, _ = inspect_model_dir(model_dir)
    stack = read_sentence_stack(model_dir)
    task = detect_task(config, stack is not None)
    if task != FEATURE_EXTRACTION:
        raise UserError(f"--model {model_dir} is a {task} model; finetune trains sentence embedders (a sentence-transformers stack)")
    if stack is None:
        raise UserError(
            f"--model {model_dir} has no sentence-transformers stack (modules.json with a Pooling module); finetune trains "
            "sentence embedders: give it one (e.g. the output of edgebert distill) or another model"
        )
    if stack.dense:
        raise UserError(f"--model {model_dir}: its sentence-transformers stack has Dense layers, which finetune does not train yet; use a stack of pooling and Normalize")


def training_data(data: str | Path, o: FinetuneRecipe, flag: str = "--data") -> TrainingData:
    """The rows of `data` (and of --held-out-file) split into training and held-out rows, with the loss that fits
    (`flag`: the option that named `data`, for messages)."""
    from edgebert.finetune import losses

    named = Columns(o.sentence1_column, o.sentence2_column, negative=o.negative_column, header=header_names(o.header))
    columns = losses.score_columns(o.loss, o.score_column, named)
    rows = read_rows(flag, data, columns)
    loss = losses.chosen_loss(o.loss, rows)
    if o.held_out_file is not None:
        same = dataclasses.replace(columns, score=rows.score_column, score_required=rows.score_column is not None)
        held = read_rows("--held-out-file", o.held_out_file, same)
        check_held_out(held)
        train, dropped = without_pairs(rows, held)
        return TrainingData(train, held, loss, rows, dropped)
    share = HELD_OUT_SHARE if o.held_out is None else o.held_out
    train, held = split(rows, share)
    if held is not None:
        check_held_out(held)
    return TrainingData(train, held, loss, rows, share=share)


# ------------------------------------------------------------------------------------------------ the run


def _run(model_dir: Path, d: TrainingData, o: FinetuneConfig, tmp: Path, out: Path, started: float) -> dict[str, Any]:
    """Train, choose, save into `tmp` (the output's temporary directory); the manifest written."""
    from edgebert.finetune import metrics
    from edgebert.finetune.soup import Snapshots
    from edgebert.finetune.train import choose, last_epochs
    from edgebert.modeldir import save_model_dir, weights_bytes, write_manifest
    from edgebert.modelio import load_sentence_transformer
    from edgebert.progress import Stages

    refit = o.refit and d.held is not None
    stages = Stages(total=len(o.seeds) * (2 if refit else 1) + 3, quiet=o.quiet)
    log = None if o.quiet else (lambda line: stages.console.print(line, markup=False, soft_wrap=True))
    with stages.stage("loading the model"):
        model = load_sentence_transformer(model_dir)
        snapshots = Snapshots(tmp / SNAPSHOTS)
        snapshots.save(0, 0, model.state_dict())
        start = metrics.score(model.eval(), d.held) if d.held is not None else None
    runs = _train_seeds(model, d.train, d.loss, o, snapshots, tmp, stages, log)
    with stages.stage("choosing on the held-out rows" if d.held is not None else "taking the last epochs"):
        if d.held is not None:
            kept, state, scores = choose(model.eval(), d.held, snapshots, len(o.seeds), o.epochs, start)
        else:
            (kept, state), scores = last_epochs(snapshots, len(o.seeds), o.epochs, o.soup_from), {}
        model.load_state_dict(state)
    refit_runs = None
    if kept.last == 0:
        stages.note("no epoch nor soup beat the start on the held-out rows: the start's weights are kept" + (", nothing to refit" if refit else ""))
    elif refit:
        refit_runs = _refit(model, d, o, kept, snapshots, tmp, stages, log)
    with stages.stage("writing the model"):
        shutil.rmtree(tmp / SNAPSHOTS)
        shutil.rmtree(tmp / TRAINER, ignore_errors=True)
        save_model_dir(tmp, model[0].auto_model, model.tokenizer, model_dir)
        reload = check_saved(model.eval(), tmp, (d.held or d.train).sentence1[:RELOAD_TEXTS])
        manifest = _manifest(out, model_dir, model, d, o, kept, scores, runs, reload, refit_runs)
        manifest["metrics"].update(model_bytes=weights_bytes(tmp), wall_time_s=round(time.perf_counter() - started, 2))
        write_manifest(tmp, manifest)
    return manifest


def _train_seeds(
    model: Any, rows: Rows, loss: str, o: FinetuneConfig, snapshots: Any, tmp: Path, stages: Any, log: Any, what: str = "training",
) -> list[dict[str, Any]]:  # fmt: skip
    """One training run per seed of `o.seeds`, each from the start's weights, every epoch saved in `snapshots`."""
    from edgebert.finetune.train import train_run, training_length

    runs = []
    with training_length(model, o.seq_len):
        for run, seed in enumerate(o.seeds):
            with stages.stage(f"{what} with seed {seed}: {o.epochs} epochs of {len(rows):,} rows, {loss}"):
                model.load_state_dict(snapshots.load(0, 0))
                runs.append(train_run(model, rows, loss, o, seed, run, snapshots, tmp / TRAINER, log))
    return runs


def _refit(model: Any, d: TrainingData, o: FinetuneConfig, kept: Any, snapshots: Any, tmp: Path, stages: Any, log: Any) -> list[dict[str, Any]]:
    """--refit: every row of --data trained on from the start, once per seed, for the epochs `kept` ends at (the
    schedule the held-out rows chose), and `kept`'s epoch or soup of those runs loaded into `model`."""
    from edgebert.finetune.soup import soup_of

    again = dataclasses.replace(o, epochs=kept.last)
    runs = _train_seeds(model, d.every, d.loss, again, snapshots, tmp, stages, log, f"refitting ({kept.name})")
    model.load_state_dict(soup_of(snapshots, len(o.seeds), kept.last, kept.first)[1])
    return runs


def check_saved(model: Any, directory: Path, texts: list[str]) -> dict[str, Any]:
    """The saved directory, loaded as every verb loads it, embeds `texts` as the chosen weights do (a head-pruned model
    is stored at the stock shapes and narrowed again on load); VerificationError otherwise."""
    from edgebert.modelio import load_sentence_transformer

    expected = model.encode(texts, convert_to_numpy=True, show_progress_bar=False)
    got = load_sentence_transformer(directory).encode(texts, convert_to_numpy=True, show_progress_bar=False)
    diff = float(abs(got - expected).max())
    if not diff <= RELOAD_TOLERANCE:
        raise VerificationError(f"the saved model does not embed as the weights chosen (max abs diff {diff:.2e}); nothing was written")
    return {"texts": len(texts), "max_abs_diff": diff}


def _manifest(
    out: Path, model_dir: Path, model: Any, d: TrainingData, o: FinetuneConfig, kept: Any, scores: dict[Any, float | None],
    runs: list[dict[str, Any]], reload: dict[str, Any], refit_runs: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """edgebert.json: step "finetune", parent the input model; the held-out scores under metrics and `finetune` (with
    --refit: the scores of the run that chose, and `finetune.refit` for the runs on every row that made the weights)."""
    from edgebert.distill.across import model_record
    from edgebert.finetune.metrics import metric_name
    from edgebert.finetune.soup import START
    from edgebert.modeldir import embedding_outputs, new_manifest, read_manifest

    held = None
    if d.held is not None:
        held = {"metric": metric_name(d.held), "rows": len(d.held), "student_init": scores[START],
                "student_final": scores[kept], "kept": kept.name}  # fmt: skip
        if refit_runs is not None:
            held["scored"] = "the run that chose; the weights written were refitted on every row, these included"
    final_runs = refit_runs if refit_runs is not None else runs
    manifest = new_manifest(
        "model", "finetune", out.name, model_dir.absolute(), read_manifest(model_dir), recipe=_recipe(o, d),
        model=model_record(model), outputs=embedding_outputs(model.get_embedding_dimension()),
        metrics={"held_out": held, "train_loss": final_runs[-1]["train_loss"],
                 "train_runtime_s": round(sum(r["train_runtime_s"] for r in runs + (refit_runs or [])), 2)},
    )  # fmt: skip
    manifest["finetune"] = {
        "data": {"path": d.train.source, "rows": d.read, "training_rows": len(d.train), "columns": list(d.train.columns)},
        "held_out": None if d.held is None else {
            "from": "--held-out-file" if o.held_out_file else "--held-out", "path": d.held.source, "share": d.share or None,
            "rows": len(d.held), "metric": metric_name(d.held), "pairs_not_trained_on": d.dropped,
        },
        "loss": d.loss, "runs": runs,
        "candidates": [{**c.record(), "score": s} for c, s in sorted(scores.items(), key=lambda item: _order(item[0]))],
        "kept": kept.record(), "reload_check": reload,
        "refit": None if refit_runs is None else {"rows": d.read, "epochs": kept.last, "kept": kept.record(), "runs": refit_runs},
    }  # fmt: skip
    return manifest


def _order(candidate: Any) -> tuple[int, int]:
    """The start, then the epochs, then the soups (by first epoch)."""
    return (0 if candidate.last == 0 else 1 if candidate.first == candidate.last else 2, candidate.first)


def _recipe(o: FinetuneConfig, d: TrainingData) -> dict[str, Any]:
    """The options that shaped the model, as used: the loss and score column chosen, the held-out share applied."""
    recipe = {"data": str(Path(d.train.source).absolute()), **{f.name: getattr(o, f.name) for f in dataclasses.fields(FinetuneRecipe)}}
    recipe.update(loss=d.loss, score_column=d.train.score_column, held_out=d.share)
    if o.held_out_file:
        recipe["held_out_file"] = str(Path(o.held_out_file).expanduser().absolute())
    return recipe
