"""Training, self-play, arena and tournaments (matches between agents by name), in four subpackages
(each imports only the ones listed before it):

- ``train.jobs``: long jobs' plumbing: worker pools (processes, Ray), run directories (lock, atomic JSON,
  state), the live dashboard, SIGTERM handling.
- ``train.matches``: agents against agents: the arena, round-robin tournaments, their statistics (Wilson,
  Elo, Bradley-Terry, SPRT), Nash evaluation and plots.
- ``train.learning``: the training pipeline: configuration, self-play, samples, the learner, supervised
  pretraining, the learning curve, model directories, diagnostics and reports.
- ``train.experiments``: the papers' tables as commands: specs, running, tables, the squares measure.
"""
