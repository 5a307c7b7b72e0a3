"""The `edgebert` command: one subcommand per verb; heavy libraries load only inside `run`."""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Sequence

from edgebert.errors import TargetUnavailable, UserError, VerificationError
from edgebert.commands.bench import BenchCommand
from edgebert.commands.compress import CompressCommand
from edgebert.commands.distill import DistillCommand
from edgebert.commands.export import ExportCommand
from edgebert.commands.finetune import FinetuneCommand
from edgebert.commands.pipeline import PipelineCommand

OUT_OF_SPACE = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}  # a full disk, a file-size limit, a quota
COMMANDS = (DistillCommand, CompressCommand, FinetuneCommand, ExportCommand, BenchCommand, PipelineCommand)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2 (its default code, without the usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"edgebert: error: {message} (see `{self.prog} --help`)\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="edgebert", description="Distil, compress, fine-tune, export and benchmark BERT models for devices.")
    from edgebert import __version__

    parser.add_argument("--version", action="version", version=f"edgebert {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.help)
        command.add_arguments(p)
        p.set_defaults(handler=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        _no_library_progress_bars()
        return args.handler(args)
    except UserError as exc:
        sys.stderr.write(f"edgebert: error: {exc}\n")
        return exc.exit_code
    except (VerificationError, TargetUnavailable) as exc:
        sys.stderr.write(f"edgebert: failed: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt as exc:  # a verb that keeps something says what (errors.kept_on_interrupt)
        sys.stderr.write(f"edgebert: {str(exc) or 'interrupted; nothing was left half-written'}\n")
        return 130
    except OSError as exc:
        if exc.errno not in OUT_OF_SPACE:
            raise
        where = f" writing {exc.filename}" if exc.filename else ""
        sys.stderr.write(f"edgebert: failed: out of disk space{where} ({os.strerror(exc.errno)}); free space or write elsewhere\n")
        return 1


def _no_library_progress_bars() -> None:
    """transformers 5 draws a bar for every model load and save; edgebert's commands report their own steps."""
    from huggingface_hub.utils import disable_progress_bars
    from transformers.utils import logging

    disable_progress_bars()
    logging.disable_progress_bar()


if __name__ == "__main__":
    raise SystemExit(main())
