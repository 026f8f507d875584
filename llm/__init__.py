"""The one seam between Capataz and a language model (any OpenAI-compatible endpoint).

- `provider`: which endpoint, key and limits an organisation uses (its settings, else the
  environment), and the engine it effectively runs.
- `client`: `ChatClient.complete`, always streaming, with retries, fault classification and one
  `ModelCall` row per call.
- `pricing`: cost of a call from the editable price table.
- `scripted`: a real local OpenAI-compatible server with scripted replies, for tests and bench/
  (importable without Django).

This package imports nothing from Django at import time, so `llm.scripted` works in a
plain Python process.
"""
