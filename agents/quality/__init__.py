"""Image quality, below the loops and the rule brain: the statistics read on a photo (``metrics``), the no-reference
scores (``iqa``), the reward that weighs them (``reward``), a rule critic's checks (``measure``) and the defects, each
declared in one module of ``defects``."""
