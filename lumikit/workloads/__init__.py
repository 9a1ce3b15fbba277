"""The course's training workloads, run as modules: ``python -m lumikit.workloads.lm`` (a tiny GPT fine-tuned on
shipped movie reviews), ``python -m lumikit.workloads.resnet`` (a ResNet on CIFAR-100 or its stand-in) and
``python -m lumikit.workloads.ddp_check`` (a few DDP steps that prove a multi-rank launch works).

Each writes ``metrics.rank{R}.jsonl`` and ``result.rank{R}.json`` into ``--out`` (default ``$LUMIKIT_RUN_DIR``) and
ends with ``FINAL loss=<value>`` on every rank. The ResNet and the language model take the speed knobs of
:mod:`.knobs` (``--precision``, ``--channels-last``, ``--compile``, ``--fused-optimizer``, ``--tunableop``); the
language model also measures inference (``--generate``, :mod:`.generate`). Only :mod:`lumikit.profiler` (and the error types) are imported
from the rest of lumikit.
"""
