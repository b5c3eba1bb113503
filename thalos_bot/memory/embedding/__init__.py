"""The embedder seam: text in, unit vectors out.

Three embedders implement :class:`~thalos_bot.memory.embedding.base.Embedder`: the
embedded default (:mod:`.wordllama`, weights shipped inside the package, CPU, offline),
an OpenAI-compatible ``/embeddings`` endpoint (:mod:`.endpoint`), and :mod:`.null`
(keyword-only recall). :func:`~thalos_bot.memory.embedders.build_embedder`
picks one from ``[memory.embeddings]``.
"""
