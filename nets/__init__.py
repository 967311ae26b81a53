"""The JFA nets (PyTorch) and the batched evaluator the search uses.

Modules: ``nets.config`` (``NetConfig``, presets, ``ENCODING_VERSION``), ``nets.model`` (trunk, ``SLMNet``,
``UpperNet``, ``LowerNet``, ``build``, ``count_parameters``), ``nets.losses``, ``nets.io`` (``save``/``load``:
safetensors + metadata, atomic), ``nets.evaluator`` (``Evaluation``, ``Evaluator``, ``VictimScorer``,
``UniformEvaluator``, ``KnowledgeEvaluator``, ``NetEvaluator``, ``NetVictimScorer``).

Parameter counts of the presets (``count_parameters(build(preset(kind, name)))``):

=====  ==========  ===========  ====================  ====================
kind   tiny        paper        tiny architecture     paper architecture
=====  ==========  ===========  ====================  ====================
slm       485,830   17,976,070  6 blocks x 64         15 blocks x 256
upper     504,030   23,951,390  6 blocks x 64         20 blocks x 256
lower   1,308,613   27,674,373  6 x 64, embedding 16  20 x 256, embedding 64
=====  ==========  ===========  ====================  ====================

The lower nets' embeddings of the 48,804 upper actions are 781k (tiny) and 3.1M (paper) of those.

Net-only throughput of the tiny nets (``nets.evaluator.net_throughput``, positions/s, best of three 1 s
runs, 1 intra-op thread, on the 2-core CPU machine while other processes used about 1-2 cores):

=====  =======  =======  ========
kind   batch 1  batch 8  batch 32
=====  =======  =======  ========
slm        361      958       895
upper      357      884       802
lower      296      881       923
=====  =======  =======  ========

With 2 intra-op threads on that loaded machine throughput collapsed to 2-270 positions/s (spinning
OpenMP threads), hence ``NetEvaluator``'s default of half the cores. Through the ``NetEvaluator``
queue with 8-32 search threads each calling ``evaluate([state])``: about 500-600 evaluations/s
(mean batch 8-31).
"""

from nets.config import ENCODING_VERSION, NetConfig, preset, preset_name
from nets.evaluator import (
    Evaluation,
    Evaluator,
    KnowledgeEvaluator,
    NetEvaluator,
    NetVictimScorer,
    UniformEvaluator,
    VictimScorer,
)
from nets.model import LowerNet, SLMNet, UpperNet, build, count_parameters

__all__ = [
    "ENCODING_VERSION",
    "Evaluation",
    "Evaluator",
    "KnowledgeEvaluator",
    "LowerNet",
    "NetConfig",
    "NetEvaluator",
    "NetVictimScorer",
    "SLMNet",
    "UniformEvaluator",
    "UpperNet",
    "VictimScorer",
    "build",
    "count_parameters",
    "preset",
    "preset_name",
]
