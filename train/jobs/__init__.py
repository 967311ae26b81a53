"""Plumbing of long jobs: ``workers`` (the one worker pool: processes, in-process, Ray), ``rundir`` (run
directories: paths, state, atomic JSON files, metrics, the directory lock), ``dashboard`` (the live panel,
progress lines, TensorBoard) and ``signals`` (SIGTERM as Ctrl-C)."""
