"""The papers' tables as commands (``python cli.py experiment``): ``spec`` (declarative specs: loading,
validation, placeholders, the built-ins), ``run`` (running a spec, resumably, into a run directory),
``tables`` (``table.md`` and the PNGs of a result) and ``squares`` (the papers' squares-per-step measure)."""
