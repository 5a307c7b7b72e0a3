"""Error types that the CLI maps to exit codes: bad input is 2, a failed verification is 1."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


class UserError(Exception):
    """Bad input from the user: the CLI prints the message as one line and exits with code 2."""

    exit_code = 2


class VerificationError(Exception):
    """An artifact was produced but does not match its PyTorch reference: exit code 1, nothing kept."""

    exit_code = 1


class TargetUnavailable(Exception):
    """A target's toolchain is missing or failed to produce the artifact: exit code 1."""

    exit_code = 1


@contextlib.contextmanager
def kept_on_interrupt(message: str, replace: bool = False) -> Iterator[None]:
    """On Ctrl-C, re-raise KeyboardInterrupt carrying `message`: what the verb kept (the CLI prints it).

    A message set further in (an inner verb that already said what it kept) wins unless `replace` is set
    (a verb that runs others, such as pipeline, speaks for them).
    """
    try:
        yield
    except KeyboardInterrupt as exc:
        if str(exc) and not replace:
            raise
        raise KeyboardInterrupt(message) from None
