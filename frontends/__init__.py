"""The ways people meet the engine: the CLI, the terminal game, the engine protocol, the browser board."""

DEFAULT_AGENT = "jfa"
"""The agent ``play``, ``serve``, ``engine`` and ``analyze`` use when none is named: the strongest agent
measured (docs/results.md, "The default agent": ``jfa`` against ``hbm``, the expert laying out and the same
battle search; change it here, with a match, when another agent beats it)."""
