"""Offline builders of tiny random models of each family and head, and sentence-transformers stacks on top of them.

Every builder writes a complete model directory (config.json, model.safetensors, tokenizer files) with a fixed seed:
hidden 32, 2 layers, 4 heads, FFN 64, 128 positions. `head` picks the transformers class that is saved:
None (the base model, as AutoModel loads it), "sequence-classification", "token-classification" or "fill-mask".
They are plain functions, so fixtures and scripts can both call them (scripts: put tests/ on sys.path).

- BERT, DistilBERT, ELECTRA: the WordPiece vocabulary of conftest.py. ELECTRA has embedding_size 16 (so it has
  `embeddings_project`, 16 -> 32).
- RoBERTa: a byte-level BPE trained with `tokenizers` on a few lines, saved as RobertaTokenizerFast files
  (tokenizer.json, vocab.json, merges.txt); pad id 1, positions from 2 (130 position rows for 128 tokens).
- ALBERT: layer-shared as published (num_hidden_groups 1, embedding_size 16) with a SentencePiece-style Unigram
  tokenizer.json (Metaspace, lowercase, [CLS] ... [SEP]) trained with `tokenizers`: an AlbertTokenizerFast without
  spiece.model, which a user's published ALBERT has beside it (the tokenizer.json is what the fast class reads).
- ModernBERT: byte-level BPE with [CLS] ... [SEP]; one global and one sliding-window (16-token) attention layer.
- DeBERTa-v2: the v3 layout (disentangled attention over 32 relative-position buckets, no absolute positions or
  token types) with the ALBERT builder's Unigram tokenizer as a DebertaV2TokenizerFast.
- MPNet: MPNet's WordPiece tokenizer (<s> ... </s>, pad 1, positions from 2) and its relative-position buckets.
- XLNet: the ALBERT builder's Unigram tokenizer as an XLNetTokenizerFast (`<sep> <cls>` at the end, <cls> in
  segment 2, padding on the left) and relative-position attention.
- `add_st_stack` adds Pooling / Dense / Normalize, written by sentence-transformers' own classes.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from conftest import WORDS, _vocab

HIDDEN, LAYERS, HEADS, FFN, POSITIONS = 32, 2, 4, 64, 128
HEADS_BY_TASK = {
    None: "AutoModel",
    "sequence-classification": "AutoModelForSequenceClassification",
    "token-classification": "AutoModelForTokenClassification",
    "fill-mask": "AutoModelForMaskedLM",
}
POOLING_MODES = {"mean": "mean", "cls": "cls", "max": "max", "mean_sqrt_len": "mean_sqrt_len_tokens",
                 "mean_sqrt_len_tokens": "mean_sqrt_len_tokens", "weightedmean": "weightedmean",
                 "lasttoken": "lasttoken"}


def training_lines(count: int = 60, seed: int = 1) -> list[str]:
    """Seeded lines of conftest's WORDS plus a few with capitals, digits and punctuation: tokenizer training text."""
    rng = random.Random(seed)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) for _ in range(count)]
    return lines + ["Hello World! Prices rose 3.5% in May.", "Why is EVERYONE shouting?", "A man plays the guitar."]


def _save(directory: Path, config: Any, tokenizer: Any, head: str | None, seed: int) -> Path:
    """Instantiate the head's Auto class from `config` with `seed`, save it and the tokenizer into `directory`."""
    import torch
    import transformers

    if head not in HEADS_BY_TASK:
        raise ValueError(f"head {head!r} is not one of {sorted(HEADS_BY_TASK, key=str)}")
    directory.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = getattr(transformers, HEADS_BY_TASK[head]).from_config(config)
    model.config.architectures = [type(model).__name__]
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


def _labels(head: str | None, num_labels: int, id2label: dict[int, str] | None) -> dict[str, Any]:
    """Config keyword arguments for the labels of a classification head (none for other heads)."""
    if head not in ("sequence-classification", "token-classification"):
        return {}
    id2label = id2label or {i: f"LABEL_{i}" for i in range(num_labels)}
    return {"id2label": dict(id2label), "label2id": {v: k for k, v in id2label.items()}}


def _wordpiece(directory: Path, tokenizer_class: str) -> Any:
    """conftest's WordPiece vocabulary written to `directory`/vocab.txt, as the given fast tokenizer class."""
    import transformers

    directory.mkdir(parents=True, exist_ok=True)
    vocab_file = directory / "vocab.txt"
    vocab_file.write_text("\n".join(_vocab()) + "\n")
    return getattr(transformers, tokenizer_class)(vocab=str(vocab_file), do_lower_case=True,
                                                   model_max_length=POSITIONS)


def build_bert(directory: Path, head: str | None = None, num_labels: int = 3,
               id2label: dict[int, str] | None = None, seed: int = 0) -> Path:
    """A tiny random BERT (type_vocab_size 2) with a WordPiece tokenizer."""
    from transformers import BertConfig

    tokenizer = _wordpiece(directory, "BertTokenizerFast")
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                        num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=POSITIONS,
                        type_vocab_size=2, pad_token_id=tokenizer.pad_token_id, **_labels(head, num_labels, id2label))
    return _save(directory, config, tokenizer, head, seed)


def build_distilbert(directory: Path, head: str | None = None, num_labels: int = 3,
                     id2label: dict[int, str] | None = None, seed: int = 0) -> Path:
    """A tiny random DistilBERT (no token types) with a WordPiece tokenizer."""
    from transformers import DistilBertConfig

    tokenizer = _wordpiece(directory, "DistilBertTokenizerFast")
    config = DistilBertConfig(vocab_size=len(tokenizer), dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS, hidden_dim=FFN,
                              max_position_embeddings=POSITIONS, pad_token_id=tokenizer.pad_token_id,
                              **_labels(head, num_labels, id2label))
    return _save(directory, config, tokenizer, head, seed)


def build_electra(directory: Path, head: str | None = None, num_labels: int = 3,
                  id2label: dict[int, str] | None = None, embedding_size: int = 16, seed: int = 0) -> Path:
    """A tiny random ELECTRA; embedding_size != 32 gives it `embeddings_project`."""
    from transformers import ElectraConfig

    tokenizer = _wordpiece(directory, "ElectraTokenizerFast")
    config = ElectraConfig(vocab_size=len(tokenizer), embedding_size=embedding_size, hidden_size=HIDDEN,
                           num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=FFN,
                           max_position_embeddings=POSITIONS, type_vocab_size=2, pad_token_id=tokenizer.pad_token_id,
                           **_labels(head, num_labels, id2label))
    return _save(directory, config, tokenizer, head, seed)


def roberta_tokenizer(directory: Path, vocab_size: int = 400) -> Any:
    """A byte-level BPE trained on `training_lines()`, as a RobertaTokenizerFast (vocab.json, merges.txt written)."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(training_lines(), vocab_size=vocab_size, min_frequency=1, show_progress=False,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(directory))
    return RobertaTokenizerFast(vocab=str(directory / "vocab.json"), merges=str(directory / "merges.txt"),
                                model_max_length=POSITIONS)


def build_roberta(directory: Path, head: str | None = None, num_labels: int = 3,
                  id2label: dict[int, str] | None = None, seed: int = 0) -> Path:
    """A tiny random RoBERTa with a byte-level BPE tokenizer (pad 1, positions from pad + 1, one token type)."""
    from transformers import RobertaConfig

    tokenizer = roberta_tokenizer(directory)
    pad = tokenizer.pad_token_id
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                           num_attention_heads=HEADS, intermediate_size=FFN,
                           max_position_embeddings=POSITIONS + pad + 1, type_vocab_size=1, pad_token_id=pad, bos_token_id=tokenizer.bos_token_id,
                           eos_token_id=tokenizer.eos_token_id, **_labels(head, num_labels, id2label))
    return _save(directory, config, tokenizer, head, seed)


def albert_tokenizer(directory: Path, vocab_size: int = 300, tokenizer_class: str = "AlbertTokenizerFast") -> Any:
    """A SentencePiece-style Unigram tokenizer.json trained on `training_lines()`, as an AlbertTokenizerFast (or
    another SentencePiece family's fast class: DebertaV2TokenizerFast)."""
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram
    from tokenizers.trainers import UnigramTrainer
    import transformers

    specials = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    unigram = Tokenizer(Unigram())
    unigram.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.StripAccents(), normalizers.Lowercase()])
    unigram.pre_tokenizer = pre_tokenizers.Metaspace()
    unigram.decoder = decoders.Metaspace()
    unigram.train_from_iterator(training_lines(), UnigramTrainer(vocab_size=vocab_size, special_tokens=specials,
                                                                 unk_token="<unk>", show_progress=False))
    cls, sep = unigram.token_to_id("[CLS]"), unigram.token_to_id("[SEP]")
    unigram.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    directory.mkdir(parents=True, exist_ok=True)
    unigram.save(str(directory / "tokenizer.json"))
    cls_name = getattr(transformers, tokenizer_class)
    extra = {"pad_token": "<pad>", "unk_token": "<unk>", "cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]"}
    return cls_name(tokenizer_file=str(directory / "tokenizer.json"), model_max_length=POSITIONS,
                    **(extra if tokenizer_class != "AlbertTokenizerFast" else {}))


def build_albert(directory: Path, head: str | None = None, num_labels: int = 3,
                 id2label: dict[int, str] | None = None, num_hidden_groups: int = 1, seed: int = 0) -> Path:
    """A tiny random ALBERT, layer-shared by default (num_hidden_groups 1), embedding_size 16, Unigram tokenizer."""
    from transformers import AlbertConfig

    tokenizer = albert_tokenizer(directory)
    config = AlbertConfig(vocab_size=len(tokenizer), embedding_size=16, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                          num_hidden_groups=num_hidden_groups, inner_group_num=1, num_attention_heads=HEADS,
                          intermediate_size=FFN, max_position_embeddings=POSITIONS, type_vocab_size=2,
                          hidden_act="gelu_new", pad_token_id=tokenizer.pad_token_id,
                          bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                          **_labels(head, num_labels, id2label))
    return _save(directory, config, tokenizer, head, seed)




def add_st_stack(model_dir: Path, pooling: str = "mean", dense_out: int | None = None,
                 dense_activation: str = "torch.nn.modules.activation.Tanh", normalize: bool = True,
                 seed: int = 0) -> Path:
    """Add sentence-transformers files to `model_dir`: Transformer -> Pooling [-> Dense] [-> Normalize].

    The stack is saved by SentenceTransformer.save into a scratch directory and its own files (modules.json,
    sentence_bert_config.json, config_sentence_transformers.json, the module folders) are copied over, so the
    model's weights, head and tokenizer stay exactly as built. `pooling` also accepts "mean_sqrt_len".
    """
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import (
        Dense,
        Normalize,
        Pooling,
        Transformer,
    )
    from sentence_transformers.util import import_from_string

    if pooling not in POOLING_MODES:
        raise ValueError(f"pooling {pooling!r} is not one of {sorted(POOLING_MODES)}")
    transformer = Transformer(str(model_dir), max_seq_length=POSITIONS)
    width = transformer.get_embedding_dimension()
    modules: list[torch.nn.Module] = [transformer, Pooling(width, pooling_mode=POOLING_MODES[pooling])]
    if dense_out is not None:
        torch.manual_seed(seed)
        activation = import_from_string(dense_activation)()
        modules.append(Dense(in_features=width, out_features=dense_out, activation_function=activation))
    if normalize:
        modules.append(Normalize())
    with tempfile.TemporaryDirectory() as scratch:
        SentenceTransformer(modules=modules, device="cpu").save(scratch)
        _copy_st_files(Path(scratch), Path(model_dir))
    return Path(model_dir)


def _copy_st_files(saved: Path, model_dir: Path) -> None:
    """Copy the sentence-transformers files of a saved stack (not the transformer's own files) into model_dir."""
    import json

    names = ["modules.json", "sentence_bert_config.json", "config_sentence_transformers.json"]
    names += [m["path"] for m in json.loads((saved / "modules.json").read_text()) if m["path"]]
    for name in names:
        source, target = saved / name, model_dir / name
        if source.is_dir():
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target)
        elif source.is_file():
            shutil.copy2(source, target)


def as_transformers4_layout(model_dir: Path, out: Path) -> Path:
    """A copy of a WordPiece model directory laid out as transformers 4 saved it before fast tokenizers: `vocab.txt`,
    `special_tokens_map.json` and a `tokenizer_config.json` naming `BertTokenizer`, no `tokenizer.json`, and a config
    that records transformers 4.57.6. transformers 5 writes `tokenizer.json` only, with `"backend": "tokenizers"`."""
    import json

    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    shutil.copytree(model_dir, out)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        (out / name).unlink(missing_ok=True)
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    (out / "vocab.txt").write_text("".join(f"{token}\n" for token, _ in vocab), encoding="utf-8")
    special = {k: getattr(tokenizer, k) for k in ("unk_token", "sep_token", "pad_token", "cls_token", "mask_token")}
    (out / "special_tokens_map.json").write_text(json.dumps(special))
    settings = {"do_lower_case": True, "tokenize_chinese_chars": True, "strip_accents": None, "model_max_length": POSITIONS}
    (out / "tokenizer_config.json").write_text(json.dumps({**special, **settings, "tokenizer_class": "BertTokenizer"}))
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "transformers_version": "4.57.6"}, indent=2))
    return out


def build_mpnet(directory: Path, head: str | None = None, num_labels: int = 3,
                id2label: dict[int, str] | None = None, seed: int = 0) -> Path:
    """A tiny random MPNet (relative-position buckets, positions from pad + 1) with MPNet's WordPiece tokenizer
    (<s> ... </s>, pad 1)."""
    from transformers import MPNetConfig, MPNetTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    vocab_file = directory / "vocab.txt"
    vocab_file.write_text("\n".join(["<s>", "<pad>", "</s>", "<unk>"] + [t for t in _vocab() if t != "[PAD]"] + ["<mask>"]) + "\n")
    tokenizer = MPNetTokenizerFast(vocab=str(vocab_file), do_lower_case=True, model_max_length=POSITIONS)
    pad = tokenizer.pad_token_id
    config = MPNetConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                         num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=POSITIONS + pad + 1,
                         pad_token_id=pad, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         relative_attention_num_buckets=32, **_labels(head, num_labels, id2label))
    return _save(directory, config, tokenizer, head, seed)


def modernbert_tokenizer(directory: Path, vocab_size: int = 400) -> Any:
    """A byte-level BPE trained on `training_lines()` with ModernBERT's special tokens and post-processor
    ([CLS] ... [SEP]), as a PreTrainedTokenizerFast (tokenizer.json)."""
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import PreTrainedTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(training_lines(), vocab_size=vocab_size, min_frequency=1, show_progress=False, special_tokens=specials)
    bpe.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
                                   unk_token="[UNK]", mask_token="[MASK]", model_max_length=POSITIONS)


def build_modernbert(directory: Path, head: str | None = None, num_labels: int = 3,
                     id2label: dict[int, str] | None = None, seed: int = 0) -> Path:
    """A tiny random ModernBERT: a global-attention layer and a sliding-window one (16-token window), rotary
    positions, GeGLU, byte-level BPE with [CLS] ... [SEP]."""
    from transformers import ModernBertConfig

    tokenizer = modernbert_tokenizer(directory)
    ids = {name: tokenizer.convert_tokens_to_ids(name) for name in ("[PAD]", "[CLS]", "[SEP]")}
    config = ModernBertConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                              intermediate_size=FFN, max_position_embeddings=POSITIONS, global_attn_every_n_layers=2,
                              local_attention=16, pad_token_id=ids["[PAD]"], bos_token_id=ids["[CLS]"],
                              eos_token_id=ids["[SEP]"], cls_token_id=ids["[CLS]"], sep_token_id=ids["[SEP]"],
                              **_labels(head, num_labels, id2label))  # fmt: skip
    return _save(directory, config, tokenizer, head, seed)


def build_deberta_v2(directory: Path, head: str | None = None, num_labels: int = 3,
                     id2label: dict[int, str] | None = None, seed: int = 0, share_att_key: bool = True) -> Path:
    """A tiny random DeBERTa-v3 layout (disentangled attention, p2c + c2p, 32 log position buckets, no absolute
    positions, no token types) with a SentencePiece-style Unigram tokenizer; `share_att_key` False gives each layer
    its own position projections (pos_query_proj, pos_key_proj), as DeBERTa-v2 checkpoints have."""
    from transformers import DebertaV2Config

    tokenizer = albert_tokenizer(directory, tokenizer_class="DebertaV2TokenizerFast")
    config = DebertaV2Config(vocab_size=len(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                             num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=POSITIONS,
                             relative_attention=True, position_buckets=32, pos_att_type=["p2c", "c2p"],
                             position_biased_input=False, norm_rel_ebd="layer_norm", share_att_key=share_att_key,
                             max_relative_positions=-1, type_vocab_size=0, pad_token_id=tokenizer.pad_token_id,
                             **_labels(head, num_labels, id2label))  # fmt: skip
    return _save(directory, config, tokenizer, head, seed)


def xlnet_tokenizer(directory: Path) -> Any:
    """The ALBERT builder's Unigram tokenizer as an XLNetTokenizerFast: `[SEP] [CLS]` after the text ([CLS] in segment
    2), padding on the left (saved before any call, so no file says so: only the class does)."""
    from transformers import XLNetTokenizerFast

    albert_tokenizer(directory / "unigram")
    tokenizer = XLNetTokenizerFast(tokenizer_file=str(directory / "unigram" / "tokenizer.json"), pad_token="<pad>",
                                   unk_token="<unk>", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")  # fmt: skip
    shutil.rmtree(directory / "unigram")
    return tokenizer


def build_xlnet(directory: Path, head: str | None = None, num_labels: int = 3,
                id2label: dict[int, str] | None = None, seed: int = 0) -> Path:
    """A tiny random XLNet (relative-position attention, relative segment encodings, a last-token classifier) with
    an XLNet-style tokenizer (`xlnet_tokenizer`)."""
    from transformers import XLNetConfig

    tokenizer = xlnet_tokenizer(directory)
    config = XLNetConfig(vocab_size=len(tokenizer), d_model=HIDDEN, n_layer=LAYERS, n_head=HEADS, d_inner=FFN,
                         pad_token_id=tokenizer.pad_token_id, **_labels(head, num_labels, id2label))  # fmt: skip
    return _save(directory, config, tokenizer, head, seed)


MULTILINGUAL = [
    "der schnelle braune fuchs springt über den faulen hund", "ein mann spielt gitarre auf der bühne",
    "le renard brun rapide saute par-dessus le chien paresseux", "un homme joue de la guitare sur scène",
    "el zorro marrón salta sobre el perro perezoso", "un hombre toca la guitarra en el escenario",
]


def xlmr_tokenizer(directory: Path, vocab_size: int = 500) -> Any:
    """A SentencePiece-style Unigram tokenizer.json trained on English, German, French and Spanish lines, with
    XLM-R's specials (<s> 0, <pad> 1, </s> 2, <unk> 3) and its <s> ... </s> template, as an XLMRobertaTokenizerFast."""
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram
    from tokenizers.trainers import UnigramTrainer
    from transformers import XLMRobertaTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    unigram = Tokenizer(Unigram())
    unigram.normalizer = normalizers.NFKC()
    unigram.pre_tokenizer = pre_tokenizers.Metaspace()
    unigram.decoder = decoders.Metaspace()
    lines = training_lines() + MULTILINGUAL * 3
    unigram.train_from_iterator(lines, UnigramTrainer(vocab_size=vocab_size, special_tokens=specials, unk_token="<unk>", show_progress=False))
    unigram.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    directory.mkdir(parents=True, exist_ok=True)
    unigram.save(str(directory / "tokenizer.json"))
    return XLMRobertaTokenizerFast(tokenizer_file=str(directory / "tokenizer.json"), model_max_length=POSITIONS)


def build_xlm_roberta(directory: Path, head: str | None = None, num_labels: int = 3,
                      id2label: dict[int, str] | None = None, seed: int = 0) -> Path:
    """A tiny random XLM-RoBERTa (RoBERTa's body, positions from pad + 1) with a multilingual Unigram tokenizer."""
    from transformers import XLMRobertaConfig

    tokenizer = xlmr_tokenizer(directory)
    pad = tokenizer.pad_token_id
    config = XLMRobertaConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                              num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=POSITIONS + pad + 1,
                              type_vocab_size=1, pad_token_id=pad, bos_token_id=0, eos_token_id=2,
                              **_labels(head, num_labels, id2label))  # fmt: skip
    return _save(directory, config, tokenizer, head, seed)


BUILDERS = {"bert": build_bert, "distilbert": build_distilbert, "roberta": build_roberta,
            "electra": build_electra, "albert": build_albert, "mpnet": build_mpnet, "modernbert": build_modernbert,
            "deberta-v2": build_deberta_v2, "xlm-roberta": build_xlm_roberta}
