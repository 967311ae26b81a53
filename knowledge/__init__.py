"""Human knowledge as plugins (JFA sections 3.4-3.5, papers/001 section 4.3) and knowledge agents.

Everything is selected by name through ``knowledge.registry.REGISTRY``; see that module for the
spec-string syntax. Hot parts (pruning levels, capture scores, the expert's scores) are kernels in ``knowledge/pruning_kernels.py`` and ``knowledge/expert_kernels.py``; shape counts are rules kernels in ``core/shapes.py``.
"""
