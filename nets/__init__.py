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

The nets run compiled for inference (``nets.inference``) in ``nets.evaluator``'s inference threads, one
torch intra-op thread each; their throughput and why those choices: docs/performance.md, "The nets:
compiled, threads and batches".

Importing ``nets`` itself is cheap (no torch, no re-exports): import the submodule you need, so the
torch-free codecs ``nets.encoding``, ``nets.features`` and ``nets.symmetry`` serve the rules-level
commands without importing PyTorch.
"""
