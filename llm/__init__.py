"""The one seam between Capataz and a language model (any OpenAI-compatible endpoint).

- `provider`: which endpoint, key and limits an organisation uses (its settings, else the
  environment), and the engine it effectively runs.
- `client`: `ChatClient.complete`, always streaming, with retries, fault classification and one
  `ModelCall` row per call.
- `pricing`: cost of a call from the editable price table.

Tests and bench/ talk to it through a scripted OpenAI-compatible server, `testing/scripted.py`.
"""
