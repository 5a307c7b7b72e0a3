"""`edgebert compress`: structured pruning of attention heads and FFN neurons into a smaller model directory,
optionally healed by a short distillation from the unpruned model, optionally magnitude-sparsified."""

from __future__ import annotations

import argparse
from typing import Any

SPARSITY = "magnitude sparsity (optional; compressed size only)"  # the --help group of CompressConfig.magnitude_sparsity


class CompressCommand:
    """`edgebert compress`: remove the least important heads and FFN neurons, physically shrinking the weights."""

    name = "compress"
    help = "prune heads and FFN neurons (optionally heal), magnitude-sparsify, or trim the vocabulary into a smaller model dir"

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        from edgebert.config import CompressConfig
        from edgebert.options import add_options

        required = parser.add_argument_group("required")
        required.add_argument("--out", required=True, help="output model directory")
        what = parser.add_argument_group("what to prune")
        _add_healing_arguments(parser)
        sparsity = parser.add_argument_group(SPARSITY)
        _add_vocab_arguments(parser)
        optional = parser.add_argument_group("optional")
        optional.add_argument("--model", default=None, help="model dir, hub id, or 'default' (all-MiniLM-L6-v2)")
        add_options(parser, CompressConfig, {"what to prune": what, SPARSITY: sparsity, "optional": optional})

    @staticmethod
    def run(args: argparse.Namespace) -> int:
        import json

        from edgebert.config import CompressConfig, HealConfig
        from edgebert.options import from_args

        _preflight(args)
        if args.trim_vocab and not _prunes(args):
            print(json.dumps(_trim(args, args.model, args.out)))
            return 0

        from edgebert.compress.compress import compress

        heal = None
        if args.heal_steps is not None or args.heal_corpus:
            heal = HealConfig(
                steps=args.heal_steps or 0,
                corpus=list(args.heal_corpus or []),
                losses=args.heal_losses,
                lr=args.heal_lr,
                batch_size=args.heal_batch_size,
                seq_len=args.heal_seq_len,
                freeze_embeddings=not args.heal_train_embeddings,
                cache_dir=args.cache_dir,
            )
        options = {**from_args(CompressConfig, args), "heal": heal}
        trimmed = None
        if args.trim_vocab:
            from edgebert.compress.chain import compress_then_trim

            report, trimmed = compress_then_trim(args.model, args.out, _trim_request(args), _inputs(args), **options)
        else:
            report = compress(args.model, args.out, **options)
        m = report.manifest
        params = m["parameters"]
        summary = {
            "out": str(report.out_dir),
            "heads_per_layer": m["pruning"]["heads_per_layer"]["after"],
            "intermediate_size": m["pruning"]["intermediate_size"]["after"],
            "encoder_parameters": {"before": params["before"]["encoder"], "after": params["after"]["encoder"]},
            "cosine_to_source": m["metrics"]["cosine_to_source"],
        }
        if "healing" in m:
            cos = m["healing"]["cosine_to_source"]
            summary["healing"] = {"cosine_to_source_mean": {k: cos[k]["mean"] for k in ("before", "after")}, "kept": m["healing"]["kept"]}
        if "magnitude" in m:
            mag = m["magnitude"]
            summary["magnitude_sparsity"] = {
                "zeroed": mag["zeroed"],
                "of": mag["weights"],
                "gzip_bytes": {k: mag["gzip_bytes"][k] for k in ("before", "after")},
                "raw_bytes": mag["model_safetensors_bytes"],
                "note": mag["note"],
            }
        if trimmed is not None:
            summary["vocab_trim"] = _trim_summary(trimmed)
            summary["out"] = str(trimmed.out_dir)
        print(json.dumps(summary))
        return 0


def _add_healing_arguments(parser: argparse.ArgumentParser) -> None:
    """Healing: a short distillation from the unpruned model into the pruned one."""
    from edgebert.config import HealConfig
    from edgebert.options import default

    healing = parser.add_argument_group("healing (optional): distil the unpruned model back into the pruned one")
    healing.add_argument("--heal-steps", type=int, default=None, metavar="N", help="distillation steps after pruning (needs --heal-corpus)")
    healing.add_argument("--heal-corpus", nargs="+", default=None, metavar="FILE", help="text to heal on, one passage per line (.gz ok)")
    healing.add_argument(
        "--heal-losses",
        default=default(HealConfig, "losses"),
        metavar="SPEC",
        help="loss weights, TERM=W pairs of mlm, ce, cos (every layer), pooled; default %(default)s (embedding fidelity)",
    )
    healing.add_argument("--heal-lr", type=float, default=default(HealConfig, "lr"), help="peak learning rate of the healing run (default %(default)s)")
    healing.add_argument("--heal-batch-size", type=int, default=default(HealConfig, "batch_size"), metavar="N", help="(default %(default)s)")
    healing.add_argument("--heal-seq-len", type=int, default=None, metavar="N", help="tokens per healing sequence (default: --seq-len)")
    healing.add_argument(
        "--heal-train-embeddings", action="store_true", help="also train the embeddings (frozen by default: pruning leaves them intact)"
    )
    healing.add_argument("--cache-dir", default=None, help="where fitted teacher MLM heads are cached (mlm/ce heal losses only)")


def _add_vocab_arguments(parser: argparse.ArgumentParser) -> None:
    """Vocabulary trimming to a corpus."""
    from edgebert.config import VocabConfig
    from edgebert.options import default

    vocab = parser.add_argument_group("vocabulary trimming (optional; applied last)")
    vocab.add_argument(
        "--trim-vocab",
        nargs="+",
        default=None,
        metavar="CORPUS",
        help="keep only the tokens this text uses (+ specials and single characters); files (.gz ok), dirs, STS/SST tables",
    )
    vocab.add_argument(
        "--vocab-min-count", type=int, default=default(VocabConfig, "min_count"), metavar="N",
        help="keep corpus tokens used at least N times (default %(default)s)",
    )  # fmt: skip
    vocab.add_argument("--vocab-max-size", type=int, default=default(VocabConfig, "max_size"), metavar="N", help="cap the vocabulary at N tokens (most frequent first)")
    vocab.add_argument(
        "--vocab-heldout", default=None, metavar="FILE", help="text to measure [UNK] rate and fidelity on (default: a held-out corpus slice)"
    )


def _preflight(args: argparse.Namespace) -> None:
    """Check the numbers and text files of every step (pruning, healing, trimming) before any of them writes."""
    from edgebert.compress.compress import check_numbers
    from edgebert.compress.prune import check_fraction
    from edgebert.compress.vocab import _check_args as check_vocab_args
    from edgebert.data import check_corpus_sources
    from edgebert.validate import number, optional_integer, text_file

    check_numbers(calibration_samples=args.calibration_samples, seq_len=args.seq_len, batch_size=args.batch_size, seed=args.seed)
    for flag, value in (("--prune-heads", args.prune_heads), ("--prune-ffn", args.prune_ffn), ("--magnitude-sparsity", args.magnitude_sparsity)):
        check_fraction(flag, value)
    optional_integer("--heal-steps", args.heal_steps, 0)  # 0 with --heal-corpus: check_heal says what is missing
    optional_integer("--heal-batch-size", args.heal_batch_size, 1)
    optional_integer("--heal-seq-len", args.heal_seq_len, 8)
    number("--heal-lr", args.heal_lr, 0.0, low_open=True)
    if args.calibration is not None:
        text_file("--calibration", args.calibration)
    check_corpus_sources(list(args.heal_corpus or []))
    if args.trim_vocab:
        check_vocab_args(args.vocab_min_count, args.vocab_max_size)
        check_corpus_sources(list(args.trim_vocab) + ([args.vocab_heldout] if args.vocab_heldout else []))


def _prunes(args: argparse.Namespace) -> bool:
    """Whether anything besides vocabulary trimming was asked for."""
    return bool(args.prune_heads or args.prune_ffn or args.heads_to_prune or args.magnitude_sparsity or args.heal_steps)


def _inputs(args: argparse.Namespace) -> dict[str, object]:
    """The command's input paths by flag (an output must not overwrite one)."""
    return {
        "--model": args.model,
        "--calibration": args.calibration,
        "--heal-corpus": args.heal_corpus,
        "--trim-vocab": args.trim_vocab,
        "--vocab-heldout": args.vocab_heldout,
    }


def _trim_request(args: argparse.Namespace) -> object:
    from edgebert.compress.chain import TrimRequest

    return TrimRequest(list(args.trim_vocab), args.vocab_min_count, args.vocab_max_size, args.vocab_heldout)


def _trim(args: argparse.Namespace, model: str | None, out: str) -> dict[str, object]:
    """Trim the vocabulary of `model` into `out`; the summary fields printed by the command."""
    from edgebert.compress.vocab import trim_vocab

    report = trim_vocab(
        model,
        out,
        args.trim_vocab,
        min_count=args.vocab_min_count,
        max_size=args.vocab_max_size,
        heldout=args.vocab_heldout,
        force=args.force,
        quiet=args.quiet,
    )
    return _trim_summary(report)


def _trim_summary(report: Any) -> dict[str, object]:
    """The summary fields of a vocabulary trim, as the command prints them."""
    return {
        "out": str(report.out_dir),
        "vocab": {"before": report.vocab_before, "after": report.vocab_after},
        "heldout_unk_rate": report.unk_rate,
        "heldout_changed_word_share": report.changed_word_share,
        "cosine_to_source": {"mean": report.cosine_mean, "min": report.cosine_min},
    }
