"""h3doctor: a preflight doctor for SGLang MiniMax-H3 launches."""

__version__ = "0.1.0"
