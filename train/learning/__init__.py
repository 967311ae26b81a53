"""The training pipeline (``python cli.py selfplay``): ``config`` (``TrainConfig``), ``pipeline`` (the
iterations), ``selfplay`` (games and the agents evaluated), ``samples`` (shards, replay window, batches),
``learner`` (gradient steps, checkpoints), ``supervised`` (pretraining on records, ``gen-records``),
``drift`` (the drift value target), ``curve`` (the learning curve), ``modeldir`` (model directories,
export), ``diagnose`` (where strength is lost) and ``report`` (plots of a run)."""
