"""Load a model directory safely (safetensors first, no remote code) into a `LoadedModel`; what the directory
holds (manifest, pooling, sentence-transformers files) is read through `edgebert.modeldir`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebert.errors import UserError
from edgebert.families import Family, family_for
from edgebert.modeldir import read_manifest, resolve_stack


TOKENIZER_MARKERS = ("tokenizer.json", "vocab.txt", "tokenizer.model", "spiece.model", "vocab.json")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


@dataclass
class LoadedModel:
    """A model directory loaded for inference: the embedder plus what exporters need to know."""

    path: Path
    name: str
    config: Any
    family: Family
    tokenizer: Any
    embedder: Any  # edgebert.pooling.SentenceEmbedder
    pooling: str  # the stack's pooling modes, "+"-joined
    manifest: dict[str, Any]
    stack: Any = None  # edgebert.heads.SentenceStack: pooling, Dense layers, Normalize
    task: str = "feature-extraction"  # what `embedder` computes: a SentenceEmbedder, or a TaskModel for a task head

    @property
    def output_names(self) -> tuple[str, ...]:
        """The named outputs of `embedder`, in the order it returns them."""
        return tuple(self.embedder.output_names)

    @property
    def embedding_dim(self) -> int:
        return self.stack.dim(int(self.config.hidden_size))

    @property
    def max_positions(self) -> int | None:
        return position_limit(self.config)


def inspect_model_dir(path: Path) -> tuple[dict[str, Any], Family]:
    """Check that `path` looks like a supported model directory; return its config dict and family."""
    path = Path(path)
    config_path = path / "config.json"
    if not config_path.exists():
        raise UserError(f"{path} is not a model directory (no config.json); pass a directory written by save_pretrained")
    try:
        config = json.loads(config_path.read_bytes().decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{config_path} is not valid JSON ({exc.msg}); re-save the model") from exc
    except UnicodeDecodeError as exc:
        raise UserError(f"{config_path} is not UTF-8 text; re-save the model") from exc
    except OSError as exc:
        raise UserError(f"cannot read {config_path} ({type(exc).__name__}: {exc})") from exc
    if not isinstance(config, dict):
        raise UserError(f"{config_path} must hold a JSON object, got a JSON {type(config).__name__}; re-save the model")
    family = family_for(str(config.get("model_type", "unknown")))
    if not any((path / w).exists() for w in WEIGHT_FILES) and not list(path.glob("model-*.safetensors")):
        raise UserError(f"{path} has no weights (model.safetensors or pytorch_model.bin); re-save the model")
    if not any((path / t).exists() for t in TOKENIZER_MARKERS):
        raise UserError(f"{path} has no tokenizer files (tokenizer.json or vocab.txt); save the tokenizer beside the model")
    refuse_custom_code(path, config)
    return config, family


def _json_or_empty(path: Path) -> Any:
    """A JSON file's content, or {} when absent or unreadable (the load that needs it reports that)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def refuse_custom_code(path: Path, config: dict[str, Any] | None = None) -> None:
    """UserError when the model or its tokenizer names custom code (`auto_map`): edgebert never runs it, and
    transformers 5 would silently load a stock class in its place, which may compute something else."""
    path = Path(path)
    config = _json_or_empty(path / "config.json") if config is None else config
    tokenizer_config = _json_or_empty(path / "tokenizer_config.json")
    for name, data in (("config.json", config), ("tokenizer_config.json", tokenizer_config)):
        if isinstance(data, dict) and data.get("auto_map"):
            raise UserError(
                f"{path / name} names custom code (auto_map), which edgebert never runs; "
                "use a model whose classes are transformers' own"
            )


def load_tokenizer(path: Path, **kwargs: Any) -> Any:
    """The fast tokenizer saved in `path`, never running code it names (refused first, then
    `trust_remote_code=False`): every edgebert tokenizer load goes through here."""
    from transformers import AutoTokenizer

    refuse_custom_code(Path(path))
    return AutoTokenizer.from_pretrained(str(path), use_fast=True, trust_remote_code=False, **kwargs)


def load_config(path: Path) -> Any:
    """The transformers config saved in `path`, never running code it names."""
    from transformers import AutoConfig

    refuse_custom_code(Path(path))
    return AutoConfig.from_pretrained(str(path), trust_remote_code=False)


def has_mlm_head(model_dir: Path, family: Family) -> bool:
    """Whether the safetensors weights of `model_dir` hold the family's own masked-LM head."""
    path = Path(model_dir) / "model.safetensors"
    if not path.exists() or not family.mlm_head_fit_prefixes:
        return False
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as fh:
        return any(k.startswith(family.mlm_head_fit_prefixes[0]) for k in fh.keys())  # noqa: SIM118 - not a dict


def load_weights(cls: Any, model_dir: Path, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
    """`cls.from_pretrained` the safe way (safetensors first, no remote code, eager attention) with its loading
    info, head-pruned shapes included (`edgebert.pruned_heads`); unreadable weights become a UserError.

    transformers' own "weights not initialized / not used" warnings are silenced: every caller checks the loading
    info itself, tolerating only what it expects (a pooler that was never trained, an MLM head fitted next)."""
    import transformers

    from edgebert.pruned_heads import narrow_heads, pruned_plan, stored_full_size, with_pruned_heads

    model_dir = Path(model_dir)
    verbosity, bars = transformers.logging.get_verbosity(), transformers.logging.is_progress_bar_enabled()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()  # transformers 5 draws a bar per load; edgebert reports its own steps
    try:
        if "config" not in kwargs:
            kwargs["config"] = load_config(model_dir)
        plan = pruned_plan(kwargs["config"])
        full_size = bool(plan) and stored_full_size(model_dir, cls, kwargs["config"])
        if plan and not full_size:  # narrowed on disk: the narrowed shapes are built before the weights load
            cls = with_pruned_heads(cls, kwargs["config"])
        model, info = cls.from_pretrained(
            model_dir,
            trust_remote_code=False,
            use_safetensors=(model_dir / "model.safetensors").exists() or None,
            attn_implementation="eager",
            output_loading_info=True,
            **kwargs,
        )
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - truncated/corrupt files raise many different types
        raise UserError(
            f"cannot load the weights in {model_dir}: they look truncated or corrupt ({type(exc).__name__}); "
            "re-save the model"
        ) from exc
    finally:
        transformers.logging.set_verbosity(verbosity)
        if bars:  # as the caller had it (the CLI turns them off for the whole command)
            transformers.logging.enable_progress_bar()
    if full_size:  # stored as the stock class has it (removed heads zero): narrowed here, as the exporters want it
        stored = {k: v.detach().clone() for k, v in model.state_dict().items()}
        model.config.pruned_heads = {}
        narrow_heads(model.base_model, family_for(model.config.model_type), plan)
        _check_removed_heads_are_zero(model, stored, model_dir)
    refuse_undeclared_layers(model_dir, kwargs["config"], info.get("unexpected_keys", []))
    return model, info


def _check_removed_heads_are_zero(narrowed: Any, stored: dict[str, Any], model_dir: Path) -> None:
    """UserError unless the heads `config.pruned_heads` names were exact zeros in the stored weights: the narrowed model
    put back at full size (`widened_state_dict`) must be what was stored, or cutting those heads would change what the
    model computes (a stock model fine-tuned after pruning)."""
    import torch

    from edgebert.pruned_heads import widened_state_dict

    widened = widened_state_dict(narrowed)
    changed = next((k for k, v in stored.items() if k in widened and not torch.equal(widened[k], v)), None)
    if changed is not None:
        raise UserError(
            f"{model_dir}: the heads config.json's pruned_heads names carry non-zero weights ({changed}): the model was "
            "changed after pruning, and cutting them would change what it computes; remove pruned_heads from config.json "
            "to keep every head, or prune again with edgebert compress"
        )


def load_sentence_transformer(model_dir: Path, device: str = "cpu") -> Any:
    """sentence-transformers' model of `model_dir` (its modules.json stack; a bare encoder gets mean pooling), never
    running code from the directory. A head-pruned transformer is loaded by `load_weights` (sentence-transformers
    calls transformers' `from_pretrained`, which no longer builds `config.pruned_heads`: edgebert/pruned_heads.py)."""
    from unittest import mock

    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules.transformer import Transformer

    from edgebert.pruned_heads import pruned_plan

    original = Transformer._load_model

    def load(self: Any, name: str, task: str, config: Any, backend: str, is_peft_model: bool, **kwargs: Any) -> Any:
        if backend != "torch" or is_peft_model or task != "feature-extraction" or not pruned_plan(config):
            return original(self, name, task, config, backend, is_peft_model, **kwargs)
        from transformers import AutoModel

        return load_weights(AutoModel, Path(name), config=config)[0]

    with mock.patch.object(Transformer, "_load_model", load):
        return SentenceTransformer(str(model_dir), device=device, trust_remote_code=False)


def refuse_undeclared_layers(model_dir: Path, config: Any, unexpected: list[str]) -> None:
    """UserError when the weights hold encoder layers config.json does not declare (say `num_hidden_layers: 0` beside
    two layers): loading would silently drop them and every export would compute a different model."""
    family = family_for(str(getattr(config, "model_type", "unknown")))
    dropped = sorted(k for k in unexpected if f"{family.layers_path}." in k)
    if dropped:
        raise UserError(
            f"the weights in {model_dir} hold encoder layers its config.json does not declare (e.g. {dropped[0]}; "
            f"num_hidden_layers is {getattr(config, 'num_hidden_layers', '?')}); re-save the model so they agree"
        )


def check_tokenizer_fits(tokenizer: Any, config: Any, model_dir: Path) -> None:
    """UserError (one line) when the tokenizer can produce ids beyond the model's embedding table."""
    rows = config.get("vocab_size") if isinstance(config, dict) else getattr(config, "vocab_size", None)
    if rows is not None and len(tokenizer) > int(rows):
        raise UserError(
            f"the tokenizer in {model_dir} has {len(tokenizer)} tokens but the model's embedding table only {int(rows)} rows; "
            "save the tokenizer that belongs to the model"
        )


def position_limit(config: Any) -> int | None:
    """The position rows of `config` (a transformers config or its config.json dict): `max_position_embeddings`, 512
    when absent; None when it is negative (XLNet's -1: relative positions only, no limit)."""
    limit = int(config.get("max_position_embeddings", 512) if isinstance(config, dict) else getattr(config, "max_position_embeddings", 512))
    return None if limit < 0 else limit


def check_within_positions(flag: str, value: int, config: Any, whose: str = "the model's") -> None:
    """UserError (one line) when a token length `value` given by `flag` exceeds the position limit of `config`
    (a transformers config or its config.json dict)."""
    limit = position_limit(config)
    if limit is not None and value > limit:
        raise UserError(f"{flag} {value} is beyond {whose} position limit of {limit}; pass {flag} {limit} or less")


CLASSIFIER_TASKS = ("text-classification", "token-classification")  # heads compress and trim keep as they are


def rewrite_task(model_dir: Path, config: dict[str, Any] | None = None) -> str:
    """The task of the head `model_dir`'s weights carry (`heads.detect_task`; `config`: its config.json when read
    already): what a rewrite must keep."""
    from edgebert.heads import detect_task, read_sentence_stack

    config = inspect_model_dir(model_dir)[0] if config is None else config
    return detect_task(config, read_sentence_stack(model_dir) is not None)


def load_for_rewrite(model_dir: Path, family: Family) -> tuple[Any, bool]:
    """(model in eval mode, whether it has its MLM head) for the verbs that rewrite weights (compress, trim): the
    model's own classifier class when it has one (its head is kept, never dropped), else the family's masked-LM class
    when the weights hold an MLM head, else AutoModel. Its encoder is `model.base_model`. Weights that do not match
    the config (anything missing but an encoder-only model's pooler) are a UserError."""
    import transformers

    config, _ = inspect_model_dir(model_dir)
    task = rewrite_task(model_dir, config)
    if task in CLASSIFIER_TASKS:
        return _load_task_head(model_dir, task, config), False
    with_head = family.mlm_class is not None and has_mlm_head(model_dir, family)
    cls = getattr(transformers, family.mlm_class) if with_head else transformers.AutoModel
    model, info = load_weights(cls, model_dir)
    missing = family.required_missing(info.get("missing_keys", []))
    if missing:
        raise UserError(f"the weights in {model_dir} do not match its config (e.g. {missing[0]} missing); re-save the model")
    return model.eval(), with_head


def _load_task_head(path: Path, task: str, arch_config: Any, **kwargs: Any) -> Any:
    """The model's own transformers class for `task` (`edgebert.task_heads`, named by `arch_config`'s architectures)
    loaded safely, in eval mode. Every head tensor must come from the checkpoint: a head transformers would
    initialise at random is refused."""
    import transformers

    from edgebert.heads import TASKS
    from edgebert.task_heads import architecture_class

    cls = getattr(transformers, architecture_class(arch_config, task), None) or getattr(transformers, TASKS[task][0])
    model, info = load_weights(cls, path, **kwargs)
    missing = list(info.get("missing_keys", []))  # a task head runs every tensor it has (BERT's pooler too)
    if missing:
        raise UserError(
            f"the weights in {path} lack part of its {task} head or encoder (e.g. {missing[0]}); re-save the model"
        )
    return model.eval()


def _load_task_model(path: Path, config: Any, family: Family, task: str, top_k: int) -> Any:
    """The model's own task head (`_load_task_head`) wrapped as a `TaskModel`."""
    from edgebert.pooling import TaskModel

    return TaskModel(_load_task_head(path, task, config, config=config), task, top_k, family.uses_token_type_ids).eval()


def load_model(path: Path, task: str | None = None, top_k: int = 5) -> LoadedModel:
    """Load config, tokenizer and weights of `path` into an eval-mode `SentenceEmbedder` with the directory's pooling,
    or, for a `task` other than feature-extraction, the model's own transformers task head (`edgebert.task_heads`;
    `top_k`: fill-mask's in-graph top-k)."""
    from transformers import AutoModel

    from edgebert.pooling import SentenceEmbedder

    path = Path(path)
    _, family = inspect_model_dir(path)
    manifest = read_manifest(path)
    stack = resolve_stack(path, family.default_pooling, manifest)
    config = load_config(path)
    try:
        tokenizer = load_tokenizer(path)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"cannot load the tokenizer in {path} ({type(exc).__name__}: {exc}); re-save it") from exc
    check_tokenizer_fits(tokenizer, config, path)
    name = manifest.get("name") or (path.parent.name if path.name == "model" else path.name)
    task = task or "feature-extraction"
    if task != "feature-extraction":
        embedder = _load_task_model(path, config, family, task, top_k)
        return LoadedModel(path, name, config, family, tokenizer, embedder, "+".join(stack.pooling), manifest, stack, task)
    encoder, info = load_weights(AutoModel, path, config=config)
    missing = family.required_missing(info.get("missing_keys", []))
    if missing:
        raise UserError(
            f"the weights in {path} do not match its config ({len(missing)} tensors missing, e.g. {missing[0]}); "
            "re-save the model"
        )
    _check_dense_fits(stack, int(config.hidden_size), path)
    embedder = SentenceEmbedder(encoder, pooling=stack, uses_token_type_ids=family.uses_token_type_ids).eval()
    return LoadedModel(path, name, config, family, tokenizer, embedder, embedder.pooling, manifest, stack)


def _check_dense_fits(stack: Any, hidden: int, path: Path) -> None:
    """UserError (one line) when the sentence-transformers Dense layers do not chain from the pooled width."""
    width = hidden * len(stack.pooling)
    for index, dense in enumerate(stack.dense):
        if dense.weight.shape[1] != width:
            raise UserError(
                f"{path}: Dense module {index + 1} takes {dense.weight.shape[1]} inputs but receives {width}; re-save the model"
            )
        width = dense.out_features
