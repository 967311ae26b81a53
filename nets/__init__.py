"""The JFA nets (PyTorch) and the batched evaluator the search uses.

Modules: ``nets.config`` (``NetConfig``, presets, ``ENCODING_VERSION``), ``nets.model`` (trunk, ``SLMNet``,
``UpperNet``, ``LowerNet``, ``QNet``, ``build``, ``count_parameters``), ``nets.qnet`` (the ``dqn`` agent's
afterstates and Q values), ``nets.losses``, ``nets.io`` (``save``/``load``:
safetensors + metadata, atomic), ``nets.inference`` (``compile_for_inference``), ``nets.evaluator`` (``Evaluation``, ``Evaluator``, ``VictimScorer``,
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

Net-only throughput of the tiny nets (``nets.evaluator.net_throughput``, positions/s, 1 s runs, 1
intra-op thread, idle 2-core machine), eager and compiled for inference (``nets.inference``: frozen,
batch norm folded, fused; what the evaluators run):

=====  ===============  ===============  ===============
kind   batch 1          batch 8          batch 32
=====  ===============  ===============  ===============
slm      350 ->   746    1,055 -> 1,169   1,146 -> 1,276
upper    324 ->   566      798 ->   963     922 ->   972
lower    344 ->   729      973 -> 1,091   1,067 -> 1,191
=====  ===============  ===============  ===============

Compiled, the nets gain little from batching on one core (1.3-1.7x from batch 1 to 8): the pass is
compute-bound once the per-operator Python dispatch is gone. Two threads each running a compiled net
(``callers=2``, ``NetEvaluator(inference_threads=2)``) double it (upper at batch 4: 948 -> 1,984). Two
intra-op threads instead collapse on a loaded machine (2-270 positions/s measured; OpenMP threads
spin), hence ``NetEvaluator``'s default of half the cores for ``num_threads``.

Importing ``nets`` itself is cheap (no torch, no re-exports): import the submodule you need, so the
torch-free codecs ``nets.encoding``, ``nets.features`` and ``nets.symmetry`` serve the rules-level
commands without importing PyTorch.
"""
