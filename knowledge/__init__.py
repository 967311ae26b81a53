"""Human knowledge as plugins (JFA sections 3.4-3.5, papers/001 section 4.3) and knowledge agents.

Everything is selected by name through ``knowledge.registry.REGISTRY``; see that module for the
spec-string syntax (``knowledge.plugins`` imports every module that registers a knowledge plugin or
agent). The expert's scores are one service, ``knowledge.expert.ExpertKnowledge``, that the expert
agent and the expert plugins share. Hot parts (pruning levels, capture scores, the expert's scores)
are kernels in ``knowledge/pruning_kernels.py``, ``knowledge/expert_kernels.py`` and
``knowledge/layout_kernels.py``; shape counts are rules kernels in ``core/shapes.py``.
"""
