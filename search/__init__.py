"""WU-UCT parallel MCTS (JFA section 3.1-3.2) and the search agents. Sees nets only through the evaluator protocol of ``nets.evaluator``."""
