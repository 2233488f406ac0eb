"""Code challenges (trigger, fix, predict) and the playground: files in cards/, graded in the sandbox."""
