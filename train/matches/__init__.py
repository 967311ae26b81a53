"""Agents against agents: ``arena`` (a colour-balanced, resumable match), ``tournament`` (round robin),
``stats`` (win rates, Wilson intervals, Elo, Bradley-Terry, SPRT), ``nash`` (maximum-entropy Nash,
gamescape, population performance) and ``plots`` (PNGs of matches and experiments)."""
