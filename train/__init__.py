"""Training, self-play, arena and tournaments (matches between agents by name)."""
