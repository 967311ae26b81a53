"""The ways people meet the engine: the CLI, the terminal game, the engine protocol, the browser board."""

DEFAULT_AGENT = "hbm"
"""The agent ``play``, ``serve`` and ``engine`` use when none is named: the strongest agent measured
(docs/results.md, "The default agent": ``hbm``, the expert laying out and HBM's search in the battle, beats
``jfa``, whose SLM layouts lose games). ``jfa`` stays JFA's two-stage agent."""

ANALYZE_AGENT = "jfa"
"""The agent ``analyze`` evaluates with when none is named: ``jfa``, which searches in both phases (analysis
needs a search's values; ``hbm``'s layout is the expert's, which has none) and searches the battle as
``hbm`` does."""
