"""`edgebert distill`: a BERT teacher into a smaller student with MLM, soft-target and cosine losses."""

from __future__ import annotations

import argparse


class DistillCommand:
    """`edgebert distill`: teacher dir + corpus → student model dir (HF + sentence-transformers + manifest)."""

    name = "distill"
    help = "distil a BERT teacher into a smaller DistilBERT- or TinyBERT-shaped student"

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        required = parser.add_argument_group("required")
        required.add_argument("--corpus", required=True, nargs="+", help="text files (.gz ok), directories, or HF dataset names")
        required.add_argument("--out", required=True, help="student model directory to write")
        student = parser.add_argument_group("student")
        student.add_argument("--teacher", default="default", help="teacher dir, hub id, or 'default' (all-MiniLM-L6-v2)")
        student.add_argument("--student-layers", type=int, default=None, help="layers (default: half the teacher's)")
        student.add_argument("--student-hidden", type=int, default=None, help="width (default: the teacher's; smaller = TinyBERT shape)")
        student.add_argument("--student-heads", type=int, default=None, help="attention heads (default: keeps the teacher's head size)")
        student.add_argument("--student-ffn", type=int, default=None, help="feed-forward size (default: scaled with the width)")
        student.add_argument(
            "--embedding-dim", type=int, default=None,
            help="ALBERT-style factorised embeddings: vocab×E then E×hidden, from a truncated SVD of the teacher's tables",
        )  # fmt: skip
        student.add_argument("--layer-map", default=None, help="teacher layer per student layer, e.g. 0,2,5 (default: evenly spaced)")
        student.add_argument(
            "--student-init", default=None, metavar="DIR",
            help="start from this model dir (e.g. a pruned copy of the teacher) instead of building a student; "
            "same tokenizer and hidden size as the teacher, its own shape (pruned heads, FFN width) is kept",
        )  # fmt: skip
        student.add_argument(
            "--freeze-embeddings", action="store_true", help="do not train the embedding block (nor the MLM decoder tied to it)"
        )
        losses = parser.add_argument_group("losses")
        losses.add_argument("--alpha-mlm", type=float, default=2.0, help="masked-LM cross-entropy weight")
        losses.add_argument("--alpha-ce", type=float, default=5.0, help="soft-target KL weight (× T²)")
        losses.add_argument("--alpha-cos", type=float, default=1.0, help="hidden-state cosine weight")
        losses.add_argument("--alpha-pooled", type=float, default=0.0, help="pooled sentence-embedding cosine weight")
        losses.add_argument("--temperature", type=float, default=2.0, help="softmax temperature of the soft targets")
        losses.add_argument("--ce-positions", default="masked", choices=("masked", "all"), help="where soft targets are scored")
        losses.add_argument("--cos-layers", default="last", choices=("last", "mapped"), help="last layer, or every mapped layer")
        losses.add_argument(
            "--mlm-probability", type=float, default=0.15,
            help="share of tokens masked in the training text; 0 = unmasked (only with --alpha-mlm 0 --alpha-ce 0)",
        )  # fmt: skip
        training = parser.add_argument_group("training")
        training.add_argument("--steps", type=int, default=1000, help="optimizer steps")
        training.add_argument("--batch-size", type=int, default=32, help="sequences per device per step")
        training.add_argument("--grad-accum", type=int, default=1, help="gradient accumulation steps")
        training.add_argument("--seq-len", type=int, default=128, help="tokens per sequence")
        training.add_argument("--packing", default="truncate", choices=("truncate", "pack"), help="one passage per sequence, or packed")
        training.add_argument(
            "--group-by-length", action="store_true",
            help="batch passages of similar length (less padding, faster steps on corpora of mixed lengths)",
        )  # fmt: skip
        training.add_argument("--lr", type=float, default=1e-4, help="peak learning rate (linear warmup, linear decay)")
        training.add_argument("--warmup-ratio", type=float, default=0.05, help="fraction of steps spent warming up")
        training.add_argument("--save-steps", type=int, default=None, help="checkpoint interval (default: ~10 %% of steps)")
        training.add_argument("--eval-sts", default=None, help="STS csv (sentence1,sentence2,score): periodic Spearman, keeps the best")
        training.add_argument("--eval-steps", type=int, default=None, help="evaluation interval (default: --save-steps)")
        training.add_argument("--logging-steps", type=int, default=None, help="log interval")
        training.add_argument("--head-steps", type=int, default=200, help="steps to fit a head-less teacher's MLM head (cached)")
        training.add_argument(
            "--student-head-steps", type=int, default=None,
            help="steps to fit a factorised student's MLM head before distilling (default: --head-steps; 0: off)",
        )  # fmt: skip
        training.add_argument("--max-passages", type=int, default=None, help="use only the first N passages of the corpus")
        training.add_argument("--seed", type=int, default=42)
        training.add_argument("--precision", default="auto", help="auto, fp32, fp16, bf16 (half precision needs a GPU)")
        training.add_argument("--threads", type=int, default=None, help="CPU threads for torch")
        output = parser.add_argument_group("output")
        output.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --out")
        output.add_argument("--force", action="store_true", help="replace a non-empty --out")
        output.add_argument("--keep-checkpoints", action="store_true", help="keep --out/checkpoints after success")
        output.add_argument("--cache-dir", default=None, help="where fitted teacher heads are cached (default ~/.cache/edgebert)")

    @staticmethod
    def run(args: argparse.Namespace) -> int:
        from edgebert.distill import distill

        report = distill(
            teacher=args.teacher,
            corpus=args.corpus,
            out=args.out,
            student_layers=args.student_layers,
            student_hidden=args.student_hidden,
            student_heads=args.student_heads,
            student_ffn=args.student_ffn,
            layer_map=args.layer_map,
            embedding_dim=args.embedding_dim,
            student_head_steps=args.student_head_steps,
            student_init=args.student_init,
            freeze_embeddings=args.freeze_embeddings,
            steps=args.steps,
            batch_size=args.batch_size,
            grad_accum=args.grad_accum,
            seq_len=args.seq_len,
            packing=args.packing,
            group_by_length=args.group_by_length,
            lr=args.lr,
            warmup_ratio=args.warmup_ratio,
            alpha_mlm=args.alpha_mlm,
            alpha_ce=args.alpha_ce,
            alpha_cos=args.alpha_cos,
            alpha_pooled=args.alpha_pooled,
            temperature=args.temperature,
            ce_positions=args.ce_positions,
            cos_layers=args.cos_layers,
            mlm_probability=args.mlm_probability,
            eval_sts=args.eval_sts,
            eval_steps=args.eval_steps,
            save_steps=args.save_steps,
            logging_steps=args.logging_steps,
            resume=args.resume,
            force=args.force,
            keep_checkpoints=args.keep_checkpoints,
            head_steps=args.head_steps,
            cache_dir=args.cache_dir,
            max_passages=args.max_passages,
            seed=args.seed,
            precision=args.precision,
            threads=args.threads,
        )
        m = report.metrics
        print(f"student: {report.out_dir}")
        sts = m.get("sts_spearman") or {}
        if sts:
            print(
                f"STS Spearman: teacher {sts['teacher']:.4f} | student init {sts['student_init']:.4f} "
                f"| distilled {sts['student_final']:.4f} (kept: {sts.get('kept')})"
            )
        print(f"steps/s {m['steps_per_second']} | train {m['train_runtime_s']} s | wall {m['wall_time_s']} s")
        return 0
