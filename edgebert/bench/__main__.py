"""`python -m edgebert.bench ...`: the same as `edgebert bench ...` (exit 2 on bad input)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from edgebert.cli import _Parser
    from edgebert.commands.bench import BenchCommand
    from edgebert.errors import TargetUnavailable, UserError, VerificationError

    parser = _Parser(prog="edgebert bench", description=BenchCommand.help)
    BenchCommand.add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return BenchCommand.run(args)
    except UserError as exc:
        sys.stderr.write(f"edgebert: error: {exc}\n")
        return exc.exit_code
    except (VerificationError, TargetUnavailable) as exc:
        sys.stderr.write(f"edgebert: failed: {exc}\n")
        return exc.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
